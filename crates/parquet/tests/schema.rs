//! What the files say of themselves (schema 3): every column the definitions list and no
//! other, the wall-clock start as a `TIMESTAMP(MICROS)` Spark reads beside its exact
//! nanoseconds, and the host and run id in the path and the key-value metadata, not in
//! the rows (a column in both the file and the path is two types to pyarrow).

mod common;

use std::path::Path;

use jitterlab_parquet::{
    export_trace, ExportSummary, Origin, PROVENANCE, SCHEMA_VERSION, TRACE_TABLES,
};
use jitterlab_trace::Trace;
use parquet::basic::{LogicalType, TimeUnit};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

/// Exports the committed trace `name` (its `buffer`, or the one the default rule
/// chooses) with `origin` under `dir/tables`.
fn export(dir: &Path, name: &str, buffer: Option<&str>, origin: &Origin) -> ExportSummary {
    let dat = common::trace_file(dir, name);
    let trace = Trace::open_buffer(&dat, false, buffer).unwrap();
    export_trace(&trace, name, origin, &dir.join("tables")).unwrap()
}

/// An origin without a kernel or a start.
fn origin(host: &str, run_id: &str) -> Origin {
    Origin {
        host: host.into(),
        run_id: run_id.into(),
        kernel: None,
        start_wall_ns: None,
    }
}

#[test]
fn files_carry_the_definitions_columns_a_micros_start_and_the_partition_in_metadata() {
    let tmp = tempfile::tempdir().unwrap();
    // 2025-11-28 10:15:03.123456789 UTC.
    let wall_ns: i64 = 1_764_324_903_123_456_789;
    let origin = Origin {
        kernel: Some("6.18.0".into()),
        start_wall_ns: Some(wall_ns),
        ..origin("board7", "ext4-day1")
    };
    let out = tmp.path().join("tables");
    let summary = export(tmp.path(), "external/ext4-events.dat.zst", None, &origin);
    assert!(!summary.files.is_empty());
    // A table without rows writes no file, and leaves no directory behind.
    assert!(
        summary.files.len() < TRACE_TABLES.len(),
        "this trace has no wake-ups"
    );
    assert!(summary.files.iter().all(|f| f.rows > 0));
    for table in std::fs::read_dir(&out).unwrap() {
        let name = table.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            summary.files.iter().any(|f| f.table == name),
            "{name}: a directory without a file"
        );
    }
    for file in &summary.files {
        let def = TRACE_TABLES.iter().find(|t| t.name == file.table).unwrap();
        let want_path = out
            .join(def.name)
            .join("host=board7")
            .join("run_id=ext4-day1")
            .join("part.parquet");
        assert_eq!(file.path, want_path);
        let reader = SerializedFileReader::new(std::fs::File::open(&file.path).unwrap()).unwrap();
        let meta = reader.metadata().file_metadata();
        let names: Vec<String> = meta
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        let want: Vec<&str> = PROVENANCE.iter().chain(def.cols).map(|c| c.name).collect();
        assert_eq!(names, want, "{}", def.name);
        assert!(
            !names.iter().any(|n| n == "host" || n == "run_id"),
            "{}: the partition's keys are columns of the file",
            def.name
        );
        let kv: Vec<(String, String)> = meta
            .key_value_metadata()
            .unwrap()
            .iter()
            .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
            .collect();
        for (key, value) in [
            ("jitterlab.table", def.name.to_string()),
            ("jitterlab.schema", SCHEMA_VERSION.to_string()),
            ("jitterlab.host", "board7".to_string()),
            ("jitterlab.run_id", "ext4-day1".to_string()),
        ] {
            assert!(
                kv.contains(&(key.to_string(), value.clone())),
                "{}: {key}={value} not in {kv:?}",
                def.name
            );
        }
        let start = meta
            .schema_descr()
            .columns()
            .iter()
            .find(|c| c.name() == "start_wall_us")
            .unwrap()
            .logical_type_ref()
            .cloned();
        assert_eq!(
            start,
            Some(LogicalType::timestamp(true, TimeUnit::MICROS)),
            "{}",
            def.name
        );
        // Every row: the microseconds of the start and its exact nanoseconds.
        for row in reader.get_row_iter(None).unwrap() {
            let row = row.unwrap();
            let mut seen = (None, None);
            for (col, value) in row.get_column_iter() {
                match (col.as_str(), value) {
                    ("start_wall_us", Field::TimestampMicros(us)) => seen.0 = Some(*us),
                    ("start_wall_ns", Field::Long(ns)) => seen.1 = Some(*ns),
                    _ => {}
                }
            }
            assert_eq!(seen, (Some(wall_ns / 1000), Some(wall_ns)), "{}", def.name);
        }
    }
}

/// The `trace` row of an export of `buffer` (the default rule without one) of the
/// committed multi-buffer trace: (buffer, buffers_not_exported).
fn buffers_of(buffer: Option<&str>) -> (Option<String>, Option<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let summary = export(
        tmp.path(),
        "instances.v7.dat",
        buffer,
        &origin("h", "instances"),
    );
    let file = summary.files.iter().find(|f| f.table == "trace").unwrap();
    let reader = SerializedFileReader::new(std::fs::File::open(&file.path).unwrap()).unwrap();
    let row = reader.get_row_iter(None).unwrap().next().unwrap().unwrap();
    let mut got = (None, None);
    for (col, value) in row.get_column_iter() {
        match (col.as_str(), value) {
            ("buffer", Field::Str(s)) => got.0 = Some(s.clone()),
            ("buffers_not_exported", Field::Str(s)) => got.1 = Some(s.clone()),
            _ => {}
        }
    }
    got
}

#[test]
fn the_trace_row_names_the_buffer_exported_and_those_left_out() {
    let (read, left) = buffers_of(None);
    let left = left.expect("the buffers left out");
    assert!(
        left.contains("buffer jlab_small") && left.contains("buffer jlab_big"),
        "{read:?} {left}"
    );
    let (read, left) = buffers_of(Some("jlab_big"));
    assert_eq!(read.as_deref(), Some("jlab_big"));
    let left = left.expect("the buffers left out");
    assert!(
        !left.contains("jlab_big") && left.contains("jlab_small"),
        "{left}"
    );
}

/// Every string column is dictionary-encoded; the kind columns (`Ty::Kind`, what queries
/// filter and group on) carry min/max statistics, names do not. Times and durations
/// (int64 `_ns`) are delta-packed and not compressed; the other columns are zstd's.
#[test]
fn kind_columns_carry_a_dictionary_and_statistics() {
    use jitterlab_parquet::Ty;
    use parquet::basic::{Compression, Encoding};
    let tmp = tempfile::tempdir().unwrap();
    let summary = export(
        tmp.path(),
        "disk-irq-stress.v7.dat",
        None,
        &origin("h", "disk"),
    );
    let mut kinds = 0;
    for file in &summary.files {
        let def = TRACE_TABLES.iter().find(|t| t.name == file.table).unwrap();
        let reader = SerializedFileReader::new(std::fs::File::open(&file.path).unwrap()).unwrap();
        let rg = reader.metadata().row_group(0);
        for (c, col) in PROVENANCE.iter().chain(def.cols).zip(rg.columns()) {
            let dict = col.encodings().any(|e| e == Encoding::RLE_DICTIONARY);
            let minmax = col.statistics().is_some_and(|s| {
                s.min_bytes_opt().is_some() || s.null_count_opt() == Some(col.num_values() as u64)
            });
            let packed_times = c.ty == Ty::I64 && c.name.ends_with("_ns");
            assert_eq!(
                col.compression() == Compression::UNCOMPRESSED,
                packed_times,
                "{}.{}: {:?}",
                def.name,
                c.name,
                col.compression()
            );
            // (A provenance column is one value's dictionary.)
            if packed_times && PROVENANCE.iter().all(|p| p.name != c.name) {
                let delta = col.encodings().any(|e| e == Encoding::DELTA_BINARY_PACKED);
                assert!(delta, "{}.{}", def.name, c.name);
            }
            match c.ty {
                Ty::Kind => {
                    kinds += 1;
                    assert!(dict && minmax, "{}.{}: {dict} {minmax}", def.name, c.name);
                }
                Ty::Str => assert!(
                    dict && col.statistics().is_none(),
                    "{}.{}: {dict}",
                    def.name,
                    c.name
                ),
                _ => {}
            }
        }
    }
    assert!(kinds >= 5, "{kinds}");
}

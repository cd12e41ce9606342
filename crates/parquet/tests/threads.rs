//! The `thread` table of a trace whose events name no task (ext4 events only, no sched
//! events) names its tasks from the trace's saved cmdlines, as `report` and `analyze` do.

mod common;

use jitterlab_parquet::{export_trace, Origin};
use jitterlab_trace::Trace;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

#[test]
fn a_trace_without_sched_events_names_its_threads_from_the_saved_cmdlines() {
    let tmp = tempfile::tempdir().unwrap();
    let dat = common::trace_file(tmp.path(), "external/ext4-events.dat.zst");
    let trace = Trace::open(&dat, false).unwrap();
    let origin = Origin {
        host: "board".into(),
        run_id: "ext4".into(),
        kernel: None,
        start_wall_ns: None,
    };
    let out = tmp.path().join("tables");
    let summary = export_trace(&trace, "ext4-events.dat", &origin, &out).unwrap();
    let file = summary.files.iter().find(|f| f.table == "thread").unwrap();
    let reader = SerializedFileReader::new(std::fs::File::open(&file.path).unwrap()).unwrap();
    let rows: Vec<(i32, String)> = reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            let (mut tid, mut name) = (0, String::new());
            for (col, value) in row.get_column_iter() {
                match (col.as_str(), value) {
                    ("tid", Field::Int(t)) => tid = *t,
                    ("comm", Field::Str(n)) => name = n.clone(),
                    _ => {}
                }
            }
            (tid, name)
        })
        .collect();
    assert_eq!(rows, [(108, "ls".to_string())]);
}

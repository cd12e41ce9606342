//! The dataset as a whole: what is already in it, and the rule that an export never
//! replaces rows written before unless asked.
//!
//! Every table of an input is `DIR/TABLE/host=HOST/run=RUN/part.parquet`. The host and
//! run names are the partition values exactly as given (a name that cannot be a
//! directory name as it is, such as `Rack1/Board 1`, is refused, never rewritten into
//! one that could collide with another's); two inputs of one export that would share a
//! partition, or a partition the dataset already holds, are refused before anything is
//! written, unless `replace` is asked for.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::{Error, Origin, RESULT_TABLES, TRACE_TABLES};

/// Whether `value` can be a hive partition value as it is: letters, digits, `.`, `_`
/// and `-`, not empty and not starting with `.` (hidden to Spark and DuckDB). Returns
/// why not.
pub fn partition_name_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return Some("it is empty".into());
    }
    if value.starts_with('.') {
        return Some("it starts with '.', which Spark and DuckDB take for a hidden file".into());
    }
    let bad: Vec<char> = value
        .chars()
        .filter(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .collect();
    if bad.is_empty() {
        return None;
    }
    let mut shown: Vec<String> = bad.iter().map(|c| format!("{c:?}")).collect();
    shown.dedup();
    Some(format!(
        "it holds {}; a name in the dataset is a directory name, of letters, digits, '.', '_' and '-'",
        shown.join(", ")
    ))
}

/// Checks the host and run of `origin` (of input `path`) as partition values; `flags`
/// names where each came from for the error (`--host`, `--run`).
pub(crate) fn check_names(path: &Path, origin: &Origin) -> Result<(), Error> {
    for (what, flag, value) in [
        ("host name", "--host", &origin.host),
        ("run id", "--run", &origin.trace_id),
    ] {
        if let Some(why) = partition_name_problem(value) {
            return Err(Error::input(
                path,
                format!("{what} {value:?} cannot be stored as it is: {why}; give {flag} with such a name"),
            ));
        }
    }
    Ok(())
}

/// The directory of one table's partition.
pub(crate) fn partition_dir(dir: &Path, table: &str, origin: &Origin) -> PathBuf {
    dir.join(table)
        .join(format!("host={}", origin.host))
        .join(format!("run={}", origin.trace_id))
}

/// Every table an export can write.
fn all_tables() -> impl Iterator<Item = &'static str> {
    TRACE_TABLES
        .iter()
        .chain(RESULT_TABLES.iter())
        .map(|t| t.name)
}

/// The tables of `dir` that hold `origin`'s partition.
fn existing(dir: &Path, origin: &Origin) -> Vec<&'static str> {
    all_tables()
        .filter(|t| partition_dir(dir, t, origin).exists())
        .collect()
}

/// Checks an export of `inputs` (each an input and its origin) into `dir` before
/// anything is written: every host and run name can be stored as it is, no two inputs
/// share a partition, and, unless `replace`, the dataset holds none of them already.
pub fn check_partitions(
    dir: &Path,
    inputs: &[(&Path, &Origin)],
    replace: bool,
) -> Result<(), Error> {
    let mut seen: HashMap<(&str, &str), &Path> = HashMap::new();
    for (path, origin) in inputs {
        check_names(path, origin)?;
        if let Some(first) = seen.insert((&origin.host, &origin.trace_id), path) {
            return Err(Error::input(
                path,
                format!(
                    "would be host={} run={}, as {} is: one would replace the other; export them one at a time with --run, or under other names",
                    origin.host,
                    origin.trace_id,
                    first.display()
                ),
            ));
        }
        if !replace {
            let tables = existing(dir, origin);
            if !tables.is_empty() {
                return Err(Error::Exists {
                    input: path.to_path_buf(),
                    dir: dir.to_path_buf(),
                    host: origin.host.clone(),
                    run: origin.trace_id.clone(),
                    tables: tables.join(", "),
                });
            }
        }
    }
    Ok(())
}

/// After `origin`'s partition was written again (`replace`): removes its partitions of
/// the tables this export did not write, so that no row of the earlier export remains.
pub(crate) fn remove_stale(dir: &Path, origin: &Origin, written: &[&str]) -> Result<(), Error> {
    for table in all_tables().filter(|t| !written.contains(t)) {
        let part = partition_dir(dir, table, origin);
        if part.exists() {
            fs::remove_dir_all(&part)
                .map_err(|e| Error::io(&part, "cannot remove the replaced partition", e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kept_or_refused_never_rewritten() {
        for ok in [
            "board7",
            "rack1-board_1",
            "h.example.com",
            "2026-11-28T10.00",
        ] {
            assert_eq!(partition_name_problem(ok), None, "{ok}");
        }
        for bad in ["Rack1/Board 1", "", ".hidden", "a=b", "x%2F", "é"] {
            assert!(partition_name_problem(bad).is_some(), "{bad:?}");
        }
    }
}

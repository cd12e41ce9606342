//! The dataset as a whole: what is already in it, and the rule that an export never
//! replaces rows written before unless asked.
//!
//! Every table of an input is `DIR/TABLE/host=HOST/run_id=RUN/part.parquet`. The host and
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
/// and `-`, starting with a letter, and not a word an engine reads as a number or a
/// boolean (`inf`, `nan`, `true`...). DuckDB, Spark and Polars type a partition by its
/// values: `run=2025-11-28` becomes a DATE, `host=42` an integer, and the same key is
/// then a string in one dataset and a date in another. Returns why not.
pub fn partition_name_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return Some("it is empty".into());
    }
    let bad: Vec<char> = value
        .chars()
        .filter(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .collect();
    if !bad.is_empty() {
        let mut shown: Vec<String> = bad.iter().map(|c| format!("{c:?}")).collect();
        shown.dedup();
        return Some(format!(
            "it holds {}; a name in the dataset is a directory name, of letters, digits, '.', '_' and '-'",
            shown.join(", ")
        ));
    }
    if !value.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Some(
            "it does not start with a letter: DuckDB, Spark and Polars would read it as a number or a date, not a name"
                .into(),
        );
    }
    const TYPED: [&str; 7] = ["inf", "infinity", "nan", "true", "false", "null", "none"];
    if TYPED.iter().any(|w| value.eq_ignore_ascii_case(w)) {
        return Some(
            "an engine reads that word as a number, a boolean or a null, not a name".into(),
        );
    }
    None
}

/// Checks the host and run of `origin` (of input `path`) as partition values; `flags`
/// names where each came from for the error (`--host`, `--run`).
pub(crate) fn check_names(path: &Path, origin: &Origin) -> Result<(), Error> {
    for (what, flag, value) in [
        ("host name", "--host", &origin.host),
        ("run id", "--run", &origin.run_id),
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
        .join(format!("run_id={}", origin.run_id))
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

/// A partition of schema 2 or older under `dir` (`TABLE/host=HOST/run=RUN`, where
/// schema 3 writes `run_id=`), if any: one dataset of both would read as two layouts.
fn older_layout(dir: &Path) -> Option<PathBuf> {
    for table in all_tables() {
        let Ok(hosts) = std::fs::read_dir(dir.join(table)) else {
            continue;
        };
        for host in hosts.flatten() {
            let Ok(runs) = std::fs::read_dir(host.path()) else {
                continue;
            };
            for run in runs.flatten() {
                if run.file_name().to_string_lossy().starts_with("run=") {
                    return Some(run.path());
                }
            }
        }
    }
    None
}

/// Checks an export of `inputs` (each an input and its origin) into `dir` before
/// anything is written: every host and run name can be stored as it is, no two inputs
/// share a partition, and, unless `replace`, the dataset holds none of them already.
pub fn check_partitions(
    dir: &Path,
    inputs: &[(&Path, &Origin)],
    replace: bool,
) -> Result<(), Error> {
    if let Some(old) = older_layout(dir) {
        return Err(Error::OlderSchema {
            dir: dir.to_path_buf(),
            found: old,
        });
    }
    let mut seen: HashMap<(&str, &str), &Path> = HashMap::new();
    for (path, origin) in inputs {
        check_names(path, origin)?;
        if let Some(first) = seen.insert((&origin.host, &origin.run_id), path) {
            return Err(Error::input(
                path,
                format!(
                    "would be host={} run_id={}, as {} is: one would replace the other; export them one at a time with --run, or under other names",
                    origin.host,
                    origin.run_id,
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
                    run: origin.run_id.clone(),
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
            "t2026-11-28T10.00",
            "information",
        ] {
            assert_eq!(partition_name_problem(ok), None, "{ok}");
        }
        for bad in ["Rack1/Board 1", "", ".hidden", "a=b", "x%2F", "é"] {
            assert!(partition_name_problem(bad).is_some(), "{bad:?}");
        }
        // Values an engine would type as a date, a number or a boolean.
        for typed in [
            "2026-11-28",
            "20261128",
            "42",
            "1.5",
            "-3",
            "1e5",
            "NaN",
            "inf",
            "true",
        ] {
            let why = partition_name_problem(typed).unwrap_or_default();
            assert!(
                why.contains("letter") || why.contains("word"),
                "{typed:?}: {why:?}"
            );
        }
    }
}

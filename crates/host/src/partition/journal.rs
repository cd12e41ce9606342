//! The partition journal: one JSON object per line in `<state dir>/journal.jsonl`.
//!
//! The first line is the [`Header`]: who isolated what, how, and a [`Snapshot`] of
//! everything before the first change. Then, per step, an `intended` line —
//! written and `fsync`ed before the change is made — and a `done` line with its
//! outcome once it is made. A `complete` line ends a finished apply. A process
//! killed at any point leaves a journal that says every change that may have
//! been made: a step intended but not marked done is undone too (undoing is
//! idempotent). A line cut short by the kill is ignored: its change was never made.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use jitterlab_cpuset::CpuSet;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::partition::plan::Plan;
use crate::partition::snapshot::Snapshot;
use crate::partition::step::{Outcome, Step};
use crate::partition::Method;
use crate::root::Root;
use crate::tasks::read_start_ticks;

const JOURNAL: &str = "journal.jsonl";
const RUNS: &str = "runs.jsonl";
/// The most read of a journal or the run records: 256 MiB (a step is some 200 bytes;
/// this is a million threads moved).
const JOURNAL_LIMIT: u64 = 256 << 20;
/// The journal format; a reader refuses other versions rather than guess.
const VERSION: u32 = 1;

/// The first line of a journal.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Header {
    /// Journal format version.
    pub version: u32,
    /// `/proc/sys/kernel/random/boot_id` when it was written: a journal of another
    /// boot describes state that is gone.
    pub boot_id: String,
    /// The isolating process.
    pub pid: u32,
    /// Its start time, clock ticks after boot: tasks started later were not there
    /// to be planned.
    pub start_ticks: u64,
    /// Seconds since the epoch.
    pub created_unix: u64,
    /// The isolated CPUs.
    pub cpus: CpuSet,
    /// The CPUs left for everything else.
    pub housekeeping: CpuSet,
    /// How.
    pub method: Method,
    /// The host path of the isolated cpuset's directory (cgroup methods).
    pub isolated_dir: Option<String>,
    /// Its cgroup path (`/jitterlab.isolated`), as tasks' `cgroup` files name it.
    pub isolated_cgroup: Option<String>,
    /// Processes left alone: PID 1 and `--exclude`.
    pub excluded_pids: Vec<u32>,
    /// The machine before the first change.
    pub snapshot: Snapshot,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
enum Line {
    Header(Box<Header>),
    Intended(Step),
    Done { seq: usize, result: Outcome },
    Complete,
}

/// A journal being written.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
}

/// A journal read back.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The file.
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// The steps intended, in order, each with its outcome when it was marked done.
    pub steps: Vec<(Step, Option<Outcome>)>,
    /// Whether apply finished.
    pub complete: bool,
    /// Whether the last line was cut short (the writer was killed writing it).
    pub torn: bool,
}

/// A command started inside the partition by `jitterlab run`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    /// Its pid (the same after exec).
    pub pid: u32,
    /// Its start time.
    pub start_ticks: u64,
    /// The CPUs it was given.
    pub cpus: CpuSet,
    /// The command.
    pub argv: Vec<String>,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

impl Journal {
    /// The journal file of a state directory.
    pub fn path_in(dir: &Path) -> PathBuf {
        dir.join(JOURNAL)
    }

    /// Starts a journal in `dir` (created if needed, mode 0700). Fails when one is
    /// already there: a partition is applied, or an apply was interrupted and
    /// must be reverted first.
    pub fn create(dir: &Path, header: &Header) -> Result<Journal> {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err(dir))?;
        let path = Journal::path_in(dir);
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    Error::Invalid(format!(
                        "{} exists: a partition is applied (or an apply was interrupted); \
                         run `jitterlab revert` first",
                        path.display()
                    ))
                } else {
                    Error::io(&path, e)
                }
            })?;
        let mut j = Journal { file, path };
        j.append(&Line::Header(Box::new(header.clone())))?;
        j.sync()?;
        // The directory entry too, so the file itself survives a crash.
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err(dir))?;
        Ok(j)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn append(&mut self, line: &Line) -> Result<()> {
        let mut text = serde_json::to_string(line)
            .map_err(|e| Error::Invalid(format!("journal entry: {e}")))?;
        text.push('\n');
        // One write(2) per line: a kill leaves whole lines and at most one torn one.
        self.file
            .write_all(text.as_bytes())
            .map_err(io_err(&self.path))
    }

    fn sync(&mut self) -> Result<()> {
        self.file.sync_data().map_err(io_err(&self.path))
    }

    /// Records that `step` is about to be made, durably: returns after `fsync`.
    pub fn intend(&mut self, step: &Step) -> Result<()> {
        self.intend_all(std::slice::from_ref(step))
    }

    /// Records that `steps` are about to be made, with one `fsync` for all: each
    /// change is still durable in the journal before it is made. Steps recorded
    /// but never made are undone by revert too, which finds them as they were.
    pub fn intend_all(&mut self, steps: &[Step]) -> Result<()> {
        for step in steps {
            self.append(&Line::Intended(step.clone()))?;
        }
        self.sync()
    }

    /// Records what became of step `seq`. Not synced on its own: the next
    /// [`Journal::intend`] or [`Journal::finish`] syncs it, and a `done` lost in a
    /// crash only means revert undoes the step again, which is harmless.
    pub fn done(&mut self, seq: usize, result: &Outcome) -> Result<()> {
        self.append(&Line::Done {
            seq,
            result: result.clone(),
        })
    }

    /// Records that apply finished.
    pub fn finish(&mut self) -> Result<()> {
        self.append(&Line::Complete)?;
        self.sync()
    }

    /// Whether `dir` holds a journal.
    pub fn exists(dir: &Path) -> bool {
        Journal::path_in(dir).exists()
    }

    /// Reads the journal of `dir`; `None` when there is none.
    pub fn read(dir: &Path) -> Result<Option<Recorded>> {
        let path = Journal::path_in(dir);
        let bytes = match crate::root::read_file_bounded(&path, JOURNAL_LIMIT) {
            Ok(b) => b,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        let text = String::from_utf8(bytes).map_err(|e| {
            Error::io(
                &path,
                std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
            )
        })?;
        let lines: Vec<&str> = text.lines().collect();
        let mut header = None;
        let mut steps: Vec<(Step, Option<Outcome>)> = Vec::new();
        let (mut complete, mut torn) = (false, false);
        for (i, text) in lines.iter().enumerate() {
            if text.trim().is_empty() {
                continue;
            }
            let line: Line = match serde_json::from_str(text) {
                Ok(l) => l,
                // The writer was killed in the middle of its last line.
                Err(_) if i + 1 == lines.len() && header.is_some() => {
                    torn = true;
                    break;
                }
                Err(e) => {
                    return Err(Error::parse(
                        &path,
                        i + 1,
                        format!("a journal record ({e})"),
                        text,
                    ))
                }
            };
            match line {
                Line::Header(h) => {
                    if h.version != VERSION {
                        return Err(Error::parse(
                            &path,
                            i + 1,
                            format!("journal version {VERSION}"),
                            &h.version.to_string(),
                        ));
                    }
                    header = Some(*h);
                }
                Line::Intended(step) => steps.push((step, None)),
                Line::Done { seq, result } => {
                    if let Some(entry) = steps.iter_mut().rev().find(|(s, _)| s.seq == seq) {
                        entry.1 = Some(result);
                    }
                }
                Line::Complete => complete = true,
            }
        }
        let Some(header) = header else {
            return Err(Error::parse(&path, 1, "a journal header", ""));
        };
        Ok(Some(Recorded {
            path,
            header,
            steps,
            complete,
            torn,
        }))
    }

    /// Removes the journal and the run records of `dir`, and `dir` when that leaves
    /// it empty.
    pub fn remove(dir: &Path) -> Result<()> {
        for name in [JOURNAL, RUNS] {
            let p = dir.join(name);
            match fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&p, e)),
            }
        }
        // Not empty (something else keeps files there): leave it.
        let _ = fs::remove_dir(dir);
        Ok(())
    }

    /// Adds a `jitterlab run` record to `dir`.
    pub fn add_run(dir: &Path, run: &RunRecord) -> Result<()> {
        let path = dir.join(RUNS);
        let mut text =
            serde_json::to_string(run).map_err(|e| Error::Invalid(format!("run record: {e}")))?;
        text.push('\n');
        OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(io_err(&path))
    }

    /// The `jitterlab run` records of `dir` (unreadable lines are skipped).
    pub fn runs(dir: &Path) -> Vec<RunRecord> {
        crate::root::read_file_bounded(&dir.join(RUNS), JOURNAL_LIMIT)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Header {
    /// The current journal version.
    pub const VERSION: u32 = VERSION;

    /// The header of a journal for `plan`, written now by this process, with a
    /// snapshot of the machine `root` shows.
    pub fn for_plan(root: &Root, plan: &Plan) -> Result<Header> {
        let pid = std::process::id();
        Ok(Header {
            version: VERSION,
            boot_id: root
                .read_line_opt("/proc/sys/kernel/random/boot_id")?
                .unwrap_or_default(),
            pid,
            // Unknown (a fixture tree): no thread counts as started after.
            start_ticks: read_start_ticks(root, pid, pid).unwrap_or(u64::MAX),
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            cpus: plan.cpus.clone(),
            housekeeping: plan.housekeeping.clone(),
            method: plan.method,
            isolated_dir: plan.isolated_dir.clone(),
            isolated_cgroup: plan.isolated_cgroup.clone(),
            excluded_pids: plan.excluded.iter().map(|e| e.pid).collect(),
            snapshot: Snapshot::read(root)?,
        })
    }
}

//! Load generators, started before the measurement and stopped after it.
//!
//! - `cpu:N`: N threads looping `usleep(1)` (the core-partitioning talk's stress load: a
//!   flood of wake-ups and context switches, not just busy CPUs);
//! - `io:N`: N threads writing 4 KiB with O_SYNC, each to its own temporary
//!   file, removed afterwards;
//! - `mem:N`: N threads streaming over 64 MiB buffers (memory bandwidth);
//! - `cmd:COMMAND`: any external load (`stress-ng --cpu 2`), run by `sh -c` in
//!   its own process group, ended with SIGTERM (then SIGKILL) at the end. What it
//!   prints (stress-ng's warnings...) goes to a temporary file, not the terminal: the
//!   result keeps its last [`OUTPUT_LIMIT`] bytes, and a command that ends before it is
//!   stopped is a failure that quotes its last line.
//!
//! Every generator runs SCHED_OTHER on the load CPUs.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use jitterlab_cpuset::CpuSet;
use jitterlab_host::{sched, Status};
use serde::Serialize;

use crate::Error;

/// One `--load` argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadSpec {
    /// Threads looping `usleep(1)`.
    Cpu(usize),
    /// Threads writing 4 KiB with O_SYNC.
    Io(usize),
    /// Threads streaming memory.
    Mem(usize),
    /// An external command.
    Cmd(String),
}

impl std::fmt::Display for LoadSpec {
    /// The form `--load` takes: `cpu:150`, `cmd:stress-ng --cpu 2`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadSpec::Cpu(n) => write!(f, "cpu:{n}"),
            LoadSpec::Io(n) => write!(f, "io:{n}"),
            LoadSpec::Mem(n) => write!(f, "mem:{n}"),
            LoadSpec::Cmd(c) => write!(f, "cmd:{c}"),
        }
    }
}

impl FromStr for LoadSpec {
    type Err = String;

    /// `cpu:150`, `io:150`, `mem:2`, `cmd:stress-ng --cpu 2`.
    fn from_str(s: &str) -> Result<LoadSpec, String> {
        let (kind, arg) = s.split_once(':').ok_or_else(|| {
            format!("{s:?}: expected KIND:N (cpu:150, io:150, mem:2) or cmd:'COMMAND'")
        })?;
        let count = || -> Result<usize, String> {
            match arg.parse::<usize>() {
                Ok(n) if (1..=10_000).contains(&n) => Ok(n),
                _ => Err(format!(
                    "{s:?}: expected a thread count from 1 to 10000 after '{kind}:'"
                )),
            }
        };
        match kind {
            "cpu" => Ok(LoadSpec::Cpu(count()?)),
            "io" => Ok(LoadSpec::Io(count()?)),
            "mem" => Ok(LoadSpec::Mem(count()?)),
            "cmd" if !arg.trim().is_empty() => Ok(LoadSpec::Cmd(arg.to_string())),
            "cmd" => Err(format!("{s:?}: expected a command after 'cmd:'")),
            _ => Err(format!("{s:?}: unknown load {kind:?} (cpu, io, mem, cmd)")),
        }
    }
}

/// The most of a load command's output kept: its last 64 KiB.
pub const OUTPUT_LIMIT: u64 = 64 * 1024;

/// What one generator did, for the report.
#[derive(Clone, Debug, Serialize)]
pub struct LoadResult {
    /// What was asked.
    pub spec: LoadSpec,
    /// Operations done: sleeps, 4 KiB writes, 64 MiB passes; 0 for a command.
    pub ops: u64,
    /// How the command ended, for `cmd:`.
    pub exit: Option<String>,
    /// What a command printed, its stdout and stderr together (the last
    /// [`OUTPUT_LIMIT`] bytes): kept off the terminal, for whoever keeps a run's raw
    /// outputs; empty for the other generators.
    #[serde(skip)]
    pub output: Vec<u8>,
    /// Why the load failed: a command that ended by itself before it was stopped (its
    /// load was gone for the rest of the run), in words with the last line it printed
    /// (`exited by itself before the end: exit status: 3: stress-ng: error: ...`).
    #[serde(skip)]
    pub failure: Option<String>,
}

/// `jitterlab load`: the generators alone, for a while or around a command.
#[derive(Clone, Debug, Serialize)]
pub struct LoadRun {
    /// The CPUs the generators ran on.
    pub cpus: CpuSet,
    /// How long they ran.
    pub wall_ns: u64,
    /// What ended the run: `duration`, `signal` or `command`.
    pub stopped_by: String,
    /// The command they ran around, if any.
    pub command: Vec<String>,
    /// How it ended.
    pub command_exit: Option<String>,
    /// What each generator did.
    pub loads: Vec<LoadRate>,
}

/// One generator's work and its rate.
#[derive(Clone, Debug, Serialize)]
pub struct LoadRate {
    /// What it did.
    #[serde(flatten)]
    pub result: LoadResult,
    /// Operations per second over the run; none for a command.
    pub ops_per_s: Option<f64>,
}

impl LoadRun {
    /// The run's model, with each generator's rate over `wall_ns`.
    pub fn build(
        cpus: CpuSet,
        wall_ns: u64,
        stopped_by: &str,
        command: Vec<String>,
        command_exit: Option<String>,
        results: Vec<LoadResult>,
    ) -> LoadRun {
        let secs = wall_ns as f64 / 1e9;
        let loads = results
            .into_iter()
            .map(|result| LoadRate {
                ops_per_s: (!matches!(result.spec, LoadSpec::Cmd(_)) && secs > 0.0)
                    .then(|| result.ops as f64 / secs),
                result,
            })
            .collect();
        LoadRun {
            cpus,
            wall_ns,
            stopped_by: stopped_by.into(),
            command,
            command_exit,
            loads,
        }
    }
}

/// `jitterlab load`: what to run, where, for how long, around what.
#[derive(Clone, Debug)]
pub struct LoadRequest {
    /// The generators.
    pub specs: Vec<LoadSpec>,
    /// CPUs they run on (default: all online).
    pub cpus: Option<CpuSet>,
    /// Stop after this long, ns (default: when the command ends, or Ctrl-C).
    pub duration_ns: Option<u64>,
    /// A command to run under the load (empty: none).
    pub command: Vec<std::ffi::OsString>,
}

/// How `jitterlab load` ended.
#[derive(Debug)]
pub enum LoadOutcome {
    /// The load ran.
    Ran {
        /// What it did.
        run: LoadRun,
        /// The command's status as a shell gives it, unless the duration ended it
        /// (then the load did its job) or there was no command.
        status: Option<u8>,
    },
    /// The command could not be started; the generators were stopped.
    CannotStart {
        /// The program.
        program: String,
        /// Why (`ENOENT`: status 127; `EACCES`: 126).
        error: io::Error,
    },
}

impl LoadOutcome {
    /// How `load` ends: the command's own status ([`Status::Command`]: as a shell
    /// gives it, 127 or 126 when it could not be started), else [`Status::Ok`] (no
    /// command, or the duration ended it: the load did its job).
    pub fn status(&self) -> Status {
        match self {
            LoadOutcome::Ran { status: None, .. } => Status::Ok,
            LoadOutcome::Ran {
                status: Some(s), ..
            } => Status::Command(*s),
            LoadOutcome::CannotStart { error, .. } => {
                Status::Command(jitterlab_host::child::spawn_status(error))
            }
        }
    }
}

/// Runs the generators until `cancel` is set (call
/// [`jitterlab_host::child::cancel_on_signals`] first), the duration passes, or the
/// command ends; a command cut short gets SIGTERM, then SIGKILL after 1 s. The rates are
/// over the run: the generators stop before the command is ended.
pub fn run_load(
    root: &jitterlab_host::Root,
    req: &LoadRequest,
    cancel: &AtomicBool,
) -> Result<LoadOutcome, Error> {
    use jitterlab_host::child::{self, EndedBy};
    if !root.is_live() {
        return Err(Error::Invalid(
            "load runs on this machine; it cannot take --root".into(),
        ));
    }
    let cpus = match &req.cpus {
        Some(set) => {
            jitterlab_host::cpus::check_online(root, set)?;
            set.clone()
        }
        None => jitterlab_host::cpus::online(root)?,
    };
    let loads = start(&req.specs, &cpus)?;
    let begin = std::time::Instant::now();
    let deadline = req
        .duration_ns
        .map(|d| begin + std::time::Duration::from_nanos(d));
    let mut command = match req.command.split_first() {
        Some((prog, rest)) => match child::child_command(prog).args(rest).spawn() {
            Ok(c) => Some(c),
            Err(error) => {
                drop(loads);
                return Ok(LoadOutcome::CannotStart {
                    program: prog.to_string_lossy().into_owned(),
                    error,
                });
            }
        },
        None => None,
    };
    let ended = child::wait_for_end(cancel, deadline, command.as_mut(), || Ok(None))?;
    let wall_ns = begin.elapsed().as_nanos() as u64;
    let results = loads.stop();
    let mut exit = ended.exit;
    if let (Some(c), None) = (&mut command, exit) {
        // Cut short by the duration or a signal. After Ctrl-C the command has its own
        // SIGINT (same process group) and may have ended already.
        let status = child::end_child(c, false).map_err(|cause| jitterlab_host::Error::Sys {
            what: "ending the command".into(),
            cause,
        })?;
        exit = Some(status);
    }
    let run = LoadRun::build(
        cpus,
        wall_ns,
        ended.by.name(),
        req.command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        exit.map(|s| s.to_string()),
        results,
    );
    let status = match exit {
        Some(s) if ended.by != EndedBy::Duration => Some(child::shell_status(s)),
        _ => None,
    };
    Ok(LoadOutcome::Ran { run, status })
}

/// The running generators; [`Loads::stop`] ends them (dropping does too).
pub struct Loads {
    stop: Arc<AtomicBool>,
    threads: Vec<(usize, JoinHandle<()>)>,
    counters: Vec<(LoadSpec, Arc<AtomicU64>)>,
    children: Vec<(usize, Child, Option<File>)>,
    dir: Option<tempfile::TempDir>,
}

const IO_BLOCK: usize = 4096;
const IO_SPAN: u64 = 256; // blocks per file: 1 MiB, rewritten in turn
const MEM_BYTES: usize = 64 << 20;

impl Loads {
    /// The processes of the command loads (`LoadSpec::Cmd`); the other generators are
    /// threads of this process.
    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(|(_, c, _)| c.id()).collect()
    }
}

/// Starts the generators on `cpus`.
pub fn start(specs: &[LoadSpec], cpus: &CpuSet) -> Result<Loads, Error> {
    let mut loads = Loads {
        stop: Arc::new(AtomicBool::new(false)),
        threads: Vec::new(),
        counters: Vec::new(),
        children: Vec::new(),
        dir: None,
    };
    for (i, spec) in specs.iter().enumerate() {
        let ops = Arc::new(AtomicU64::new(0));
        loads.counters.push((spec.clone(), Arc::clone(&ops)));
        match spec {
            // Each generator does at least one unit of work, however soon it is stopped
            // (on a busy machine it may first run after the stop): a load that ran did
            // work, and says so.
            LoadSpec::Cpu(n) => loads.spawn(i, *n, "cpu", cpus, &ops, |stop, ops, _| loop {
                // SAFETY: usleep has no preconditions.
                unsafe { libc::usleep(1) };
                ops.fetch_add(1, Ordering::Relaxed);
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            })?,
            LoadSpec::Io(n) => {
                if loads.dir.is_none() {
                    let dir = tempfile::Builder::new()
                        .prefix("jitterlab-io-load")
                        .tempdir_in(std::env::var_os("TMPDIR").unwrap_or_else(|| "/var/tmp".into()))
                        .map_err(|e| {
                            Error::Setup(format!("temporary directory for io load: {e}"))
                        })?;
                    loads.dir = Some(dir);
                }
                let dir = loads
                    .dir
                    .as_ref()
                    .map(|d| d.path().to_path_buf())
                    .unwrap_or_default();
                for t in 0..*n {
                    let path = dir.join(format!("load-{i}-{t}"));
                    let file = Arc::new(
                        OpenOptions::new()
                            .create(true)
                            .truncate(true)
                            .write(true)
                            .custom_flags(libc::O_SYNC)
                            .open(&path)
                            .map_err(|e| Error::Setup(format!("{}: {e}", path.display())))?,
                    );
                    loads.spawn(i, 1, "io", cpus, &ops, move |stop, ops, _| {
                        let block = [0x5au8; IO_BLOCK];
                        let mut k = 0u64;
                        loop {
                            if file
                                .write_all_at(&block, (k % IO_SPAN) * IO_BLOCK as u64)
                                .is_err()
                            {
                                return;
                            }
                            k += 1;
                            ops.fetch_add(1, Ordering::Relaxed);
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                        }
                    })?;
                }
            }
            LoadSpec::Mem(n) => loads.spawn(i, *n, "mem", cpus, &ops, |stop, ops, _| {
                let mut buf = vec![1u8; MEM_BYTES];
                let half = MEM_BYTES / 2;
                loop {
                    let (a, b) = buf.split_at_mut(half);
                    b.copy_from_slice(a);
                    a[0] = a[0].wrapping_add(b[half - 1]);
                    std::hint::black_box(&buf);
                    ops.fetch_add(1, Ordering::Relaxed);
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
            })?,
            LoadSpec::Cmd(cmd) => {
                let mask = sched::mask_words(cpus);
                // Its output into a file of its own, removed once closed: stress-ng's
                // warnings are no one's terminal's business.
                let output = tempfile::tempfile().map_err(|e| {
                    Error::Setup(format!("a file for the output of load cmd:{cmd}: {e}"))
                })?;
                let (out, err) = (
                    output
                        .try_clone()
                        .map_err(|e| Error::Setup(format!("load cmd:{cmd}: {e}")))?,
                    output
                        .try_clone()
                        .map_err(|e| Error::Setup(format!("load cmd:{cmd}: {e}")))?,
                );
                let mut command = Command::new("/bin/sh");
                command
                    .arg("-c")
                    .arg(cmd)
                    .stdin(Stdio::null())
                    .stdout(out)
                    .stderr(err);
                // SAFETY: only system calls after fork; the mask buffer was built before.
                unsafe {
                    command.pre_exec(move || {
                        if libc::setpgid(0, 0) != 0 {
                            return Err(io::Error::last_os_error());
                        }
                        jitterlab_host::child::unblock_signals()?;
                        sched::set_affinity_words(0, &mask)
                    });
                }
                let child = command
                    .spawn()
                    .map_err(|e| Error::Setup(format!("starting load cmd:{cmd}: {e}")))?;
                loads.children.push((i, child, Some(output)));
            }
        }
    }
    Ok(loads)
}

impl Loads {
    fn spawn(
        &mut self,
        index: usize,
        n: usize,
        kind: &str,
        cpus: &CpuSet,
        ops: &Arc<AtomicU64>,
        work: impl Fn(&AtomicBool, &AtomicU64, usize) + Send + Sync + Clone + 'static,
    ) -> Result<(), Error> {
        for t in 0..n {
            let (stop, ops, cpus, work) = (
                Arc::clone(&self.stop),
                Arc::clone(ops),
                cpus.clone(),
                work.clone(),
            );
            let handle = std::thread::Builder::new()
                .name(format!("jl-load-{kind}"))
                .stack_size(128 * 1024)
                .spawn(move || {
                    // Placement failures leave the thread where it is; the
                    // load CPUs were checked online before.
                    let _ = sched::set_affinity(0, &cpus);
                    work(&stop, &ops, t);
                })
                .map_err(|e| Error::Setup(format!("starting {kind} load thread: {e}")))?;
            self.threads.push((index, handle));
        }
        Ok(())
    }

    /// The directory of the io load files, while they exist.
    pub fn io_dir(&self) -> Option<&std::path::Path> {
        self.dir.as_ref().map(|d| d.path())
    }

    /// Stops every generator, waits for them, removes the temporary files.
    pub fn stop(mut self) -> Vec<LoadResult> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Vec<LoadResult> {
        self.stop.store(true, Ordering::Relaxed);
        for (_, h) in self.threads.drain(..) {
            let _ = h.join();
        }
        let mut ended: Vec<(usize, Ended)> = Vec::new();
        for (i, mut child, output) in self.children.drain(..) {
            let mut e = end_group(&mut child);
            e.output = output.map(|f| tail(f, OUTPUT_LIMIT)).unwrap_or_default();
            ended.push((i, e));
        }
        self.dir = None; // removes the io load files
        self.counters
            .drain(..)
            .enumerate()
            .map(|(i, (spec, ops))| {
                let e = ended.iter_mut().find(|(j, _)| *j == i).map(|(_, e)| e);
                // A command that ended early says why in its last line, which no one saw.
                let exit = e.as_ref().map(|e| match last_line(&e.output) {
                    Some(line) if e.early => format!("{}: {line}", e.exit),
                    _ => e.exit.clone(),
                });
                let failure = match (&e, &exit) {
                    (Some(e), Some(exit)) if e.early => Some(exit.clone()),
                    _ => None,
                };
                LoadResult {
                    ops: ops.load(Ordering::Relaxed),
                    exit,
                    output: e.map(|e| std::mem::take(&mut e.output)).unwrap_or_default(),
                    failure,
                    spec,
                }
            })
            .collect()
    }
}

impl Drop for Loads {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// How a command ended.
struct Ended {
    /// In words.
    exit: String,
    /// By itself, before it was stopped.
    early: bool,
    /// What it printed.
    output: Vec<u8>,
}

/// Ends a command's process group: SIGTERM, then SIGKILL after 1 s.
fn end_group(child: &mut Child) -> Ended {
    let (exit, early) = match child.try_wait() {
        Ok(Some(status)) => (format!("exited by itself before the end: {status}"), true),
        _ => match jitterlab_host::child::end_child(child, true) {
            Ok(status) => (format!("ended at the end of the run: {status}"), false),
            Err(e) => (e.to_string(), false),
        },
    };
    Ended {
        exit,
        early,
        output: Vec::new(),
    }
}

/// The last `limit` bytes of `file` (a command's output, written through its own
/// descriptors; read from the start of what is kept).
fn tail(mut file: File, limit: u64) -> Vec<u8> {
    let len = file.seek(SeekFrom::End(0)).unwrap_or(0);
    let mut out = Vec::new();
    if file
        .seek(SeekFrom::Start(len.saturating_sub(limit)))
        .is_ok()
    {
        let _ = file.take(limit).read_to_end(&mut out);
    }
    out
}

/// The last line of `output` that is not blank, trimmed to 200 characters.
fn last_line(output: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(output);
    let line = text.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(200).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `load` ends with its command's status, or 0 without one.
    #[test]
    fn status_of_load() {
        let run = LoadRun {
            cpus: CpuSet::first_n(1),
            wall_ns: 1,
            stopped_by: "duration".into(),
            command: vec![],
            command_exit: None,
            loads: vec![],
        };
        let ran = |status| LoadOutcome::Ran {
            run: run.clone(),
            status,
        };
        assert_eq!(ran(None).status(), Status::Ok);
        assert_eq!(ran(Some(0)).status(), Status::Command(0));
        assert_eq!(ran(Some(143)).status(), Status::Command(143));
        let cannot = |errno| LoadOutcome::CannotStart {
            program: "x".into(),
            error: io::Error::from_raw_os_error(errno),
        };
        assert_eq!(cannot(libc::ENOENT).status(), Status::Command(127));
        assert_eq!(cannot(libc::EACCES).status(), Status::Command(126));
    }

    #[test]
    fn specs() {
        assert_eq!("cpu:150".parse(), Ok(LoadSpec::Cpu(150)));
        assert_eq!("io:2".parse(), Ok(LoadSpec::Io(2)));
        assert_eq!("mem:1".parse(), Ok(LoadSpec::Mem(1)));
        assert_eq!(
            "cmd:stress-ng --cpu 2".parse(),
            Ok(LoadSpec::Cmd("stress-ng --cpu 2".into()))
        );
        assert!("cpu:0"
            .parse::<LoadSpec>()
            .unwrap_err()
            .contains("from 1 to 10000"));
        assert!("gpu:1"
            .parse::<LoadSpec>()
            .unwrap_err()
            .contains("unknown load"));
        assert!("cpu".parse::<LoadSpec>().unwrap_err().contains("KIND:N"));
        assert!("cmd:"
            .parse::<LoadSpec>()
            .unwrap_err()
            .contains("expected a command"));
    }
}

//! `cargo bench -p jitterlab --bench trace`: jitterlab's trace readers and analysis
//! against trace-cmd and perf on the same traces, recorded here, in the same run.
//! Needs root, tracefs, trace-cmd, perf, stress-ng and taskset.
//!
//! The data (kept under the cargo target dir, `bench-data/trace/`, and reused by the
//! next run; delete the folder to record afresh):
//! - `full.dat`: `jitterlab record` (sched + irq presets) around `stress-ng --switch 2`,
//!   at least 5 million events and no lost events; `full.v7.dat` its v7 (zstd) copy
//!   by `jitterlab convert`; `full.report.txt` its `trace-cmd report` text;
//! - `quarter.dat`: a recording of the same workload a quarter as long;
//! - `perf.data`: `perf sched record` of the same workload, about as many samples.
//!
//! Each round runs every command once, in an order rotated by one from the last
//! round's, stdout to /dev/null; the figures are medians over the rounds of the wall
//! time and of the peak RSS (wait4's ru_maxrss) of each command, and each ratio the
//! median of the per-round ratios. `JITTERLAB_BENCH_ROUNDS=N` sets the rounds (5).
//!
//! Targets (issues 4 and 5): `report --stats` of the .dat at least 10x faster than
//! `trace-cmd report` on one core and faster still on all; of the text, at least 3x;
//! its memory bounded (no growth with the number of events: the full trace against
//! the quarter one); `analyze` at least 10x faster than `trace-cmd report`, at least
//! 2x faster than `perf sched latency`, under 200 MB peak.
//!
//! One engine (issue 29): the consumers of the one pass cost little more than
//! `analyze --json` on the same trace: `view` at most 1.15x its time, `export
//! --parquet` 1.25x, `convert --format perfetto` 1.3x, wall and CPU time, each with a
//! peak RSS at most 1.5x; `analyze` at least half the events per second of the counting
//! pass (`report --stats`) and at least 15x faster than `trace-cmd report`. The CPU
//! time is the child's user + system time (wait4).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Events the full trace must have at least.
const MIN_EVENTS: u64 = 5_000_000;
/// Per-CPU ring buffer of the recordings, KiB.
const BUFFER_KB: u64 = 32768;
/// The workload, without its duration.
const WORKLOAD: &[&str] = &["stress-ng", "--switch", "2", "--quiet"];

fn jitterlab_rounds() -> usize {
    std::env::var("JITTERLAB_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
        .max(3)
}

/// What one run of a command took.
#[derive(Clone, Copy)]
struct Took {
    wall: Duration,
    /// User + system time.
    cpu: Duration,
    /// Peak RSS, KiB.
    rss_kb: u64,
}

/// Runs `argv` with stdout to `out` (or /dev/null); returns its wall time, CPU time and
/// peak RSS (from wait4). Panics with its stderr when it fails.
// The child is reaped by wait4 below, which also returns its rusage (which
// Child::wait cannot); clippy cannot see that.
#[allow(clippy::zombie_processes)]
fn run(argv: &[String], out: Option<&Path>) -> Took {
    let stdout = match out {
        Some(p) => Stdio::from(std::fs::File::create(p).expect("output file")),
        None => Stdio::null(),
    };
    let mut err = tempfile::tempfile().expect("stderr file");
    let start = Instant::now();
    let child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(err.try_clone().expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", argv[0]));
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, not yet reaped.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let elapsed = start.elapsed();
    assert_eq!(r, pid, "wait4");
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        use std::io::{Read, Seek};
        let mut text = String::new();
        let _ = err.rewind().and_then(|()| err.read_to_string(&mut text));
        panic!("{argv:?} failed ({status:#x}): {text}");
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Took {
        wall: elapsed,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        rss_kb: usage.ru_maxrss as u64,
    }
}

/// Runs `argv` to completion and returns its stdout and stderr; panics when it fails.
fn output(argv: &[&str]) -> (String, String) {
    let o = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", argv[0]));
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(o.status.success(), "{argv:?} failed: {err}");
    (out, err)
}

/// Events of a .dat and whether any CPU lost some, from `report --stats --json`.
fn dat_events(exe: &str, dat: &Path) -> (u64, bool) {
    let (out, _) = output(&[exe, "report", "--stats", "--json", &dat.to_string_lossy()]);
    let doc: serde_json::Value = serde_json::from_str(&out).expect("stats JSON");
    let data = &doc["data"];
    let lost = data["per_cpu"]
        .as_array()
        .expect("per_cpu")
        .iter()
        .any(|c| c["lost"].as_u64() != Some(0));
    (data["total"].as_u64().expect("total"), lost)
}

/// Records the workload for `secs` into `dat` (written under a temporary name first);
/// returns the events. Retries (longer or shorter, bigger buffer) until `min..=max`
/// events and no loss.
fn record(exe: &str, dat: &Path, mut secs: f64, min: u64, max: u64) -> u64 {
    let tmp = dat.with_extension("tmp");
    let mut buffer_kb = BUFFER_KB;
    for attempt in 0..8 {
        let timeout = stress_timeout(secs);
        let (buffer, tmp_s) = (buffer_kb.to_string(), tmp.to_string_lossy());
        let mut argv = vec![
            exe,
            "record",
            "--json",
            "--buffer-kb",
            &buffer,
            "-o",
            &tmp_s,
            "--",
        ];
        argv.extend_from_slice(WORKLOAD);
        argv.extend_from_slice(&["--timeout", &timeout]);
        let (out, _) = output(&argv);
        let doc: serde_json::Value = serde_json::from_str(&out).expect("record JSON");
        let overruns: u64 = doc["data"]["cpus"]
            .as_array()
            .expect("cpus")
            .iter()
            .map(|c| {
                ["overrun", "dropped", "commit_overrun"]
                    .iter()
                    .map(|k| c[k].as_u64().unwrap_or(1))
                    .sum::<u64>()
            })
            .sum();
        let (events, lost) = dat_events(exe, &tmp);
        println!(
            "  recorded {} for {timeout}: {events} events, overruns {overruns}, lost {lost} (attempt {attempt})",
            dat.display()
        );
        if (min..=max).contains(&events) && overruns == 0 && !lost {
            std::fs::rename(&tmp, dat).expect("rename");
            return events;
        }
        // Aimed at the middle of the window: the workload's rate moves by a quarter from
        // one run to the next on the VM, and a retry aimed at an edge fell outside again.
        if !(min..=max).contains(&events) {
            let middle = (min / 2 + max / 2) as f64;
            secs *= middle / events.max(1) as f64;
        }
        if overruns > 0 || lost {
            buffer_kb *= 2;
        }
    }
    panic!(
        "could not record {min}..={max} events without loss into {}",
        dat.display()
    );
}

/// The workload's `--timeout` for `secs`: at least a second, as stress-ng reads a
/// timeout under a second as none at all (`0.9s` ran for minutes).
fn stress_timeout(secs: f64) -> String {
    format!("{:.1}s", secs.max(1.0))
}

/// Records the workload with `perf sched record` for about `want` samples.
fn perf_record(data: &Path, want: u64, mut secs: f64) -> u64 {
    let tmp = data.with_extension("tmp");
    let mut best = 0;
    for attempt in 0..8 {
        let timeout = stress_timeout(secs);
        let tmp_s = tmp.to_string_lossy();
        // perf keeps an existing output as NAME.old: leave none behind.
        let _ = std::fs::remove_file(&tmp);
        // -m: 64 MiB of ring buffer per CPU (the default 4 MiB loses events here).
        let mut argv = vec!["perf", "sched", "record", "-m", "16384", "-o", &tmp_s, "--"];
        argv.extend_from_slice(WORKLOAD);
        argv.extend_from_slice(&["--timeout", &timeout]);
        let (_, err) = output(&argv);
        // [ perf record: Captured and wrote 333.456 MB perf.data (3128180 samples) ]
        let samples: u64 = err
            .rsplit_once(" samples)")
            .and_then(|(head, _)| head.rsplit_once('(')?.1.trim().parse().ok())
            .unwrap_or_else(|| panic!("no sample count in perf's output: {err}"));
        let lost: Vec<&str> = err
            .lines()
            .filter(|l| l.to_ascii_lowercase().contains("lost"))
            .collect();
        println!(
            "  perf sched record for {timeout}: {samples} samples {lost:?} (attempt {attempt})"
        );
        let lost = !lost.is_empty();
        best = samples;
        let off = samples as f64 / want as f64;
        if (0.9..=1.1).contains(&off) && !lost {
            break;
        }
        secs /= off;
    }
    std::fs::rename(&tmp, data).expect("rename");
    best
}

/// The bench data, recorded here (or found from an earlier run).
struct Data {
    full: PathBuf,
    quarter: PathBuf,
    v7: Option<PathBuf>,
    text: PathBuf,
    quarter_text: PathBuf,
    perf: PathBuf,
    /// Where the measured commands write (`view`'s page, the Parquet, the Perfetto JSON).
    out: PathBuf,
    /// The folder `out` is, removed when the bench ends.
    _out_dir: tempfile::TempDir,
    full_events: u64,
    quarter_events: u64,
    perf_samples: u64,
}

fn prepare(exe: &str, dir: &Path) -> Data {
    std::fs::create_dir_all(dir).expect("bench-data dir");
    let full = dir.join("full.dat");
    let quarter = dir.join("quarter.dat");
    let v7 = dir.join("full.v7.dat");
    let text = dir.join("full.report.txt");
    let quarter_text = dir.join("quarter.report.txt");
    let perf = dir.join("perf.data");
    let perf_count = dir.join("perf.samples");
    let need_host = !full.exists() || !quarter.exists() || !perf_count.exists();
    let _lock = need_host.then(|| {
        println!("recording into {} (holding the host lock)", dir.display());
        jitterlab_host::testing::host_lock().expect("the host lock")
    });
    // About 690k events/s on the 2-CPU VM with this workload.
    let full_secs = 10.0;
    if !full.exists() {
        for stale in [&v7, &text, &quarter, &perf_count] {
            let _ = std::fs::remove_file(stale);
        }
        record(exe, &full, full_secs, MIN_EVENTS, u64::MAX);
    }
    let (full_events, _) = dat_events(exe, &full);
    if !quarter.exists() {
        let _ = std::fs::remove_file(&quarter_text);
        // A quarter within 30 %: the workload's rate moves by a quarter from run to run.
        let q = full_events / 4;
        record(exe, &quarter, full_secs / 4.0, q * 7 / 10, q * 13 / 10);
    }
    let (quarter_events, _) = dat_events(exe, &quarter);
    if !perf_count.exists() {
        let n = perf_record(&perf, full_events, full_secs);
        std::fs::write(&perf_count, n.to_string()).expect("perf.samples");
    }
    drop(_lock);
    let perf_samples = std::fs::read_to_string(&perf_count)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .expect("perf.samples");
    let has_convert = Command::new(exe)
        .args(["convert", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if has_convert && !v7.exists() {
        let tmp = dir.join("full.v7.tmp.dat");
        let s = |p: &Path| p.to_string_lossy().into_owned();
        // A .dat output is the other version than the input's: v6 -> v7 (zstd).
        output(&[exe, "convert", &s(&full), &s(&tmp)]);
        std::fs::rename(&tmp, &v7).expect("rename");
    }
    for (dat, text) in [(&full, &text), (&quarter, &quarter_text)] {
        if !text.exists() {
            let tmp = text.with_extension("tmp");
            let report = ["trace-cmd", "report", &dat.to_string_lossy()].map(String::from);
            run(&report, Some(&tmp));
            std::fs::rename(&tmp, text).expect("rename");
        }
    }
    // The measured commands write to a tmpfs where there is one: on the disk, the page
    // cache's writeback of what one command wrote (the Perfetto JSON is over 1 GB) ran
    // during the next commands, and `export --replace` unlinked the files before; on
    // the 2-CPU VM that put 150 ms on an export's 0.78 s (2026-11-30). Removed at the
    // end.
    let out_dir = tempfile::Builder::new()
        .prefix("jitterlab-bench-")
        .tempdir_in("/dev/shm")
        .or_else(|_| {
            std::fs::create_dir_all(dir)?;
            tempfile::Builder::new().prefix("out-").tempdir_in(dir)
        })
        .expect("a folder for the outputs");
    Data {
        out: out_dir.path().to_path_buf(),
        _out_dir: out_dir,
        full,
        quarter,
        v7: v7.exists().then_some(v7),
        text,
        quarter_text,
        perf,
        full_events,
        quarter_events,
        perf_samples,
    }
}

/// The commands measured, by key.
fn commands(exe: &str, d: &Data) -> Vec<(&'static str, Vec<String>)> {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let jl = |one_core: bool, args: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        if one_core {
            v.extend(["taskset".into(), "-c".into(), "0".into()]);
        }
        v.push(exe.into());
        v.extend(args.iter().map(|a| a.to_string()));
        v
    };
    let (full, quarter, text) = (s(&d.full), s(&d.quarter), s(&d.text));
    let mut c = vec![
        (
            "trace-cmd",
            vec!["trace-cmd".into(), "report".into(), full.clone()],
        ),
        (
            "perf",
            vec![
                "perf".into(),
                "sched".into(),
                "latency".into(),
                "-i".into(),
                s(&d.perf),
            ],
        ),
        ("stats-1", jl(true, &["report", "--stats", &full])),
        ("stats-n", jl(false, &["report", "--stats", &full])),
        ("stats-q", jl(false, &["report", "--stats", &quarter])),
        ("text-1", jl(true, &["report", "--stats", &text])),
        ("text-n", jl(false, &["report", "--stats", &text])),
        (
            "text-q",
            jl(false, &["report", "--stats", &s(&d.quarter_text)]),
        ),
        ("report", jl(false, &["report", &full])),
        ("analyze-1", jl(true, &["analyze", &full])),
        ("analyze-n", jl(false, &["analyze", &full])),
        ("analyze-q", jl(false, &["analyze", &quarter])),
        // The consumers of the one pass, against analyze --json.
        ("analyze-json", jl(false, &["analyze", "--json", &full])),
        (
            "view",
            jl(
                false,
                &["view", "-q", &full, "-o", &s(&d.out.join("full.html"))],
            ),
        ),
        (
            "export",
            jl(
                false,
                &[
                    "export",
                    "-q",
                    "--replace",
                    "--host",
                    "bench",
                    "--run",
                    "full",
                    "--parquet",
                    &s(&d.out.join("parquet")),
                    &full,
                ],
            ),
        ),
        (
            "perfetto",
            jl(
                false,
                &[
                    "convert",
                    "-q",
                    &full,
                    &s(&d.out.join("full.json")),
                    "--format",
                    "perfetto",
                ],
            ),
        ),
    ];
    if let Some(v7) = &d.v7 {
        c.push(("stats-v7", jl(false, &["report", "--stats", &s(v7)])));
    }
    c
}

/// Median of each key's wall time and peak RSS.
/// And every round's time, for the ratios.
struct Figures {
    keys: Vec<&'static str>,
    rounds: Vec<Vec<Duration>>,
    cpu_rounds: Vec<Vec<Duration>>,
    time: Vec<Duration>,
    cpu: Vec<Duration>,
    rss_kb: Vec<u64>,
}

impl Figures {
    fn get(&self, key: &str) -> Option<(Duration, u64)> {
        let i = self.keys.iter().position(|k| *k == key)?;
        Some((self.time[i], self.rss_kb[i]))
    }

    /// The median over rounds of `peer`'s time / `ours`' time in the same round: the
    /// host's slow and fast spells (a shared VM) weigh on both sides alike.
    fn ratio(&self, peer: &str, ours: &str) -> Option<f64> {
        ratio_of(&self.keys, &self.rounds, peer, ours)
    }

    /// [`Figures::ratio`] of the CPU times.
    fn cpu_ratio(&self, peer: &str, ours: &str) -> Option<f64> {
        ratio_of(&self.keys, &self.cpu_rounds, peer, ours)
    }

    /// The median CPU time of `key`.
    fn cpu(&self, key: &str) -> Option<Duration> {
        let i = self.keys.iter().position(|k| *k == key)?;
        Some(self.cpu[i])
    }
}

/// The median over rounds of `peer`'s / `ours`' figure in the same round.
fn ratio_of(
    keys: &[&'static str],
    rounds: &[Vec<Duration>],
    peer: &str,
    ours: &str,
) -> Option<f64> {
    {
        let at = |k: &str| keys.iter().position(|x| *x == k);
        let (p, o) = (&rounds[at(peer)?], &rounds[at(ours)?]);
        let mut r: Vec<f64> = p
            .iter()
            .zip(o)
            .map(|(p, o)| p.as_secs_f64() / o.as_secs_f64())
            .collect();
        r.sort_by(f64::total_cmp);
        Some(r[r.len() / 2])
    }
}

fn measure(cmds: &[(&'static str, Vec<String>)], rounds: usize) -> Figures {
    let n = cmds.len();
    let mut time = vec![Vec::new(); n];
    let mut cpu = vec![Vec::new(); n];
    let mut rss = vec![Vec::new(); n];
    let at = |key: &str| cmds.iter().position(|c| c.0 == key).expect("key");
    for round in 0..rounds {
        let started = Instant::now();
        for k in 0..n {
            let i = (round + k) % n;
            let took = run(&cmds[i].1, None);
            time[i].push(took.wall);
            cpu[i].push(took.cpu);
            rss[i].push(took.rss_kb);
        }
        println!(
            "  round {}/{rounds}: {:.1} s (trace-cmd {:.2} s, analyze {:.3} s)",
            round + 1,
            started.elapsed().as_secs_f64(),
            time[at("trace-cmd")].last().unwrap().as_secs_f64(),
            time[at("analyze-n")].last().unwrap().as_secs_f64()
        );
    }
    fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
        v.sort();
        v[v.len() / 2]
    }
    Figures {
        keys: cmds.iter().map(|c| c.0).collect(),
        rounds: time.clone(),
        cpu_rounds: cpu.clone(),
        time: time.into_iter().map(median).collect(),
        cpu: cpu.into_iter().map(median).collect(),
        rss_kb: rss.into_iter().map(median).collect(),
    }
}

fn secs(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{:.0} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

fn mb(kb: u64) -> String {
    format!("{:.0} MB", kb as f64 / 1024.0)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    // SAFETY: no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let have = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    let missing: Vec<_> = ["trace-cmd", "perf", "stress-ng", "taskset"]
        .into_iter()
        .filter(|t| !have(t))
        .collect();
    if !root || !missing.is_empty() || !Path::new("/sys/kernel/tracing").exists() {
        println!("skipped: needs root, tracefs and trace-cmd, perf, stress-ng, taskset (missing: {missing:?})");
        return;
    }
    let exe = env!("CARGO_BIN_EXE_jitterlab");
    // <target>/release/jitterlab -> <target>/bench-data/trace
    let target = Path::new(exe)
        .parent()
        .and_then(Path::parent)
        .expect("target dir");
    let data = prepare(exe, &target.join("bench-data/trace"));
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len() >> 20).unwrap_or(0);
    println!(
        "full.dat: {} events, {} MiB; quarter.dat: {} events ({:.2} of full), {} MiB; \
         full.report.txt {} MiB; perf.data: {} samples, {} MiB{}",
        data.full_events,
        size(&data.full),
        data.quarter_events,
        data.quarter_events as f64 / data.full_events as f64,
        size(&data.quarter),
        size(&data.text),
        data.perf_samples,
        size(&data.perf),
        match &data.v7 {
            Some(v7) => format!("; full.v7.dat {} MiB", size(v7)),
            None => "; no v7 copy (no `jitterlab convert`)".into(),
        }
    );
    let cmds = commands(exe, &data);
    // Warm the page cache with every input.
    for p in [
        &data.full,
        &data.quarter,
        &data.text,
        &data.quarter_text,
        &data.perf,
    ]
    .into_iter()
    .chain(data.v7.as_ref())
    {
        let _ = std::io::copy(
            &mut std::fs::File::open(p).expect("input"),
            &mut std::io::sink(),
        );
    }
    let rounds = jitterlab_rounds();
    let load_before = load();
    println!(
        "{rounds} rounds of {} commands, load {load_before}",
        cmds.len()
    );
    let f = measure(&cmds, rounds);
    let load_after = load();

    println!(
        "\n{rounds} rounds, medians; load average before {load_before}, after {load_after}; \
         {} CPUs; ratio = median over rounds of peer time / jitterlab time",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{:<44} {:>9} {:>8}  {:<24} {:>9} {:>8}  {:>7}  {:<7} verdict",
        "case", "jitterlab", "RSS", "peer", "time", "RSS", "ratio", "target"
    );
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    let tc = "trace-cmd";
    let rows: [(&str, &str, &str, Option<f64>); 11] = [
        ("report --stats .dat, 1 core", "stats-1", tc, Some(10.0)),
        ("report --stats .dat, all cores", "stats-n", tc, Some(10.0)),
        (
            "report --stats .dat, all cores vs 1 core",
            "stats-n",
            "stats-1",
            Some(1.0),
        ),
        (
            "report --stats .dat v7 (zstd), all cores",
            "stats-v7",
            tc,
            None,
        ),
        (
            "report --stats on trace-cmd text, 1 core",
            "text-1",
            tc,
            Some(3.0),
        ),
        (
            "report --stats on trace-cmd text, all cores",
            "text-n",
            tc,
            Some(3.0),
        ),
        ("report (every event formatted)", "report", tc, None),
        ("analyze, all cores", "analyze-n", tc, Some(10.0)),
        ("analyze, 1 core", "analyze-1", tc, None),
        ("analyze, all cores", "analyze-n", "perf", Some(2.0)),
        ("analyze, 1 core", "analyze-1", "perf", None),
    ];
    for (title, ours, peer, min) in rows {
        let (Some((t, rss)), Some((pt, prss)), Some(ratio)) =
            (f.get(ours), f.get(peer), f.ratio(peer, ours))
        else {
            continue;
        };
        let peer_title = match peer {
            "trace-cmd" => "trace-cmd report (v6)",
            "perf" => "perf sched latency",
            _ => "report --stats, 1 core",
        };
        println!(
            "{title:<44} {:>9} {:>8}  {peer_title:<24} {:>9} {:>8}  {ratio:>6.1}x  {:<7} {}",
            secs(t),
            mb(rss),
            secs(pt),
            mb(prss),
            min.map_or("-".into(), |m| format!(">= {m}x")),
            min.map_or("reference", |m| verdict(ratio >= m)),
        );
    }

    // One engine: each consumer of the one pass against analyze --json.
    println!(
        "\none engine: each consumer of the one pass against `analyze --json` (ratio = median over rounds of its time / analyze's)"
    );
    println!(
        "{:<34} {:>9} {:>9} {:>8}  {:>7} {:>7} {:>6}  {:<8} verdict",
        "case", "wall", "CPU", "RSS", "wall x", "CPU x", "RSS x", "target"
    );
    let (_, base_rss) = f.get("analyze-json").unwrap_or_default();
    for (title, key, max) in [
        ("analyze --json", "analyze-json", None),
        ("view -o FILE.html", "view", Some(1.15)),
        ("export --parquet", "export", Some(1.25)),
        ("convert --format perfetto", "perfetto", Some(1.3)),
    ] {
        let (Some((t, rss)), Some(cpu), Some(wall_x), Some(cpu_x)) = (
            f.get(key),
            f.cpu(key),
            f.ratio(key, "analyze-json"),
            f.cpu_ratio(key, "analyze-json"),
        ) else {
            continue;
        };
        let rss_x = rss as f64 / base_rss.max(1) as f64;
        println!(
            "{title:<34} {:>9} {:>9} {:>8}  {wall_x:>6.2}x {cpu_x:>6.2}x {rss_x:>5.2}x  {:<8} {}",
            secs(t),
            secs(cpu),
            mb(rss),
            max.map_or("-".into(), |m| format!("<= {m}x")),
            max.map_or("reference", |m| verdict(
                wall_x <= m && cpu_x <= m && rss_x <= 1.5
            )),
        );
    }
    // analyze's events per second against the counting pass's: the time ratio.
    if let (Some(w), Some(c)) = (
        f.ratio("stats-n", "analyze-n"),
        f.cpu_ratio("stats-n", "analyze-n"),
    ) {
        println!(
            "analyze's events/s as a share of report --stats's: {:.0} % wall, {:.0} % CPU  (target >= 50 %: {})",
            w * 100.0,
            c * 100.0,
            verdict(w >= 0.5 && c >= 0.5)
        );
    }
    if let Some(r) = f.ratio("trace-cmd", "analyze-n") {
        println!(
            "analyze against trace-cmd report: {r:.1}x  (target >= 15x: {})",
            verdict(r >= 15.0)
        );
    }

    // Memory.
    let (_, a_rss) = f.get("analyze-n").unwrap();
    let (_, aq_rss) = f.get("analyze-q").unwrap();
    let (_, s_rss) = f.get("stats-n").unwrap();
    let (_, sq_rss) = f.get("stats-q").unwrap();
    let (_, t_rss) = f.get("text-n").unwrap();
    let (_, tq_rss) = f.get("text-q").unwrap();
    let events_x = data.full_events as f64 / data.quarter_events as f64;
    println!("\nmemory (peak RSS, ru_maxrss; pages of a memory-mapped file count too):");
    println!(
        "  analyze, full trace: {}  (target < 200 MB: {})",
        mb(a_rss),
        verdict(a_rss < 200 * 1024)
    );
    for (what, full, quarter) in [
        ("report --stats", s_rss, sq_rss),
        ("analyze", a_rss, aq_rss),
        ("report --stats on the text", t_rss, tq_rss),
    ] {
        let grow = full as f64 / quarter as f64;
        println!(
            "  {what}: {} on the full trace, {} on the quarter one: x{grow:.2} for x{events_x:.2} the events  \
             (target: no growth with events, x < 1.5: {})",
            mb(full),
            mb(quarter),
            verdict(grow < 1.5)
        );
    }
}

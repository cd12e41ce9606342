//! Hostile `--root` trees: copies of fixtures/vm2 with one file changed the way a
//! hostile or broken tree would (values out of their field's range, files that are
//! FIFOs, devices or huge). Every one is an error naming the file (and line and field
//! where there is one), never a value taken silently, a hang or unbounded memory.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use jitterlab_cpuset::CpuSet;
use jitterlab_host::cpus::CpuMap;
use jitterlab_host::irqs::CpuCounters;
use jitterlab_host::{read_tasks, IrqMap, Root, TaskQuery, Workqueues};

/// A copy of fixtures/vm2 in a temporary directory, removed on drop.
pub struct Vm2Copy {
    dir: tempfile::TempDir,
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read fixture dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        let kind = entry.file_type().expect("file type");
        if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else if kind.is_symlink() {
            let link = fs::read_link(entry.path()).expect("read link");
            std::os::unix::fs::symlink(link, &target).expect("symlink");
        } else {
            fs::copy(entry.path(), &target).expect("copy fixture file");
        }
    }
}

impl Vm2Copy {
    pub fn new() -> Vm2Copy {
        let dir = tempfile::tempdir().expect("temporary directory");
        let vm2 = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vm2");
        copy_tree(&vm2, dir.path());
        Vm2Copy { dir }
    }

    pub fn root(&self) -> Root {
        Root::at(self.dir.path())
    }

    pub fn path(&self, host_path: &str) -> PathBuf {
        self.dir.path().join(host_path.trim_start_matches('/'))
    }

    pub fn read(&self, host_path: &str) -> String {
        fs::read_to_string(self.path(host_path)).expect("read copied file")
    }

    pub fn write(&self, host_path: &str, text: &str) {
        let path = self.path(host_path);
        let _ = fs::remove_file(&path);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write copied file");
    }

    /// Replaces `from` with `to` in a file, which must hold it.
    pub fn edit(&self, host_path: &str, from: &str, to: &str) {
        let text = self.read(host_path);
        assert!(text.contains(from), "{host_path} holds no {from:?}");
        self.write(host_path, &text.replacen(from, to, 1));
    }

    /// Sets field `n` (1-based, as in proc(5)) of a stat file.
    pub fn set_stat_field(&self, host_path: &str, n: usize, value: &str) {
        let text = self.read(host_path);
        let close = text.rfind(')').expect("stat has a name");
        let mut fields: Vec<String> = text[close + 1..]
            .split_whitespace()
            .map(str::to_string)
            .collect();
        fields[n - 3] = value.to_string();
        self.write(
            host_path,
            &format!("{} {}\n", &text[..=close], fields.join(" ")),
        );
    }

    /// Replaces a file with a FIFO.
    pub fn fifo(&self, host_path: &str) {
        let path = self.path(host_path);
        fs::remove_file(&path).expect("remove");
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    }

    /// Replaces a file with a symlink to `target`.
    pub fn symlink(&self, host_path: &str, target: &str) {
        let path = self.path(host_path);
        fs::remove_file(&path).expect("remove");
        std::os::unix::fs::symlink(target, path).expect("symlink");
    }
}

fn err_of<T: std::fmt::Debug>(r: jitterlab_host::Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

/// Runs `f` on a thread and fails the test, rather than hang it, when it takes more than
/// ten seconds (a FIFO read that blocks).
fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the read did not return within 10 s (blocked on a FIFO?)")
}

const THREAD_STAT: &str = "/proc/8113/task/8157/stat";

#[test]
fn the_copy_reads_as_vm2() {
    let t = Vm2Copy::new();
    let tasks = read_tasks(&t.root(), TaskQuery::all_threads()).unwrap();
    assert!(tasks.iter().any(|t| t.tid == 8157));
    IrqMap::read(&t.root()).unwrap();
}

#[test]
fn stat_processor_above_u32() {
    let t = Vm2Copy::new();
    t.set_stat_field(THREAD_STAT, 39, "4294967297");
    let e = err_of(read_tasks(&t.root(), TaskQuery::all_threads()));
    assert!(
        e.ends_with(
            "proc/8113/task/8157/stat:1: expected field 39 (processor) to be a number \
             from 0 to 4294967295, found \"4294967297\""
        ),
        "{e}"
    );
}

#[test]
fn stat_fields_out_of_range_name_the_field() {
    for (n, value, name) in [
        (4, "-1", "ppid"),
        (9, "18446744073709551616", "flags"),
        (14, "-5", "utime"),
        (19, "40", "nice"),
        (20, "4294967296", "num_threads"),
        (22, "1e5", "starttime"),
        (40, "4294967296", "rt_priority"),
        (41, "-1", "policy"),
        (3, "SS", "state"),
    ] {
        let t = Vm2Copy::new();
        t.set_stat_field(THREAD_STAT, n, value);
        let e = err_of(read_tasks(&t.root(), TaskQuery::all_threads()));
        assert!(
            e.contains(&format!("stat:1: expected field {n} ({name}) to be "))
                && e.ends_with(&format!("found {value:?}")),
            "{e}"
        );
    }
}

#[test]
fn status_tgid_that_is_no_pid() {
    let t = Vm2Copy::new();
    t.edit("/proc/8113/status", "Tgid:\t8113", "Tgid:\t81x3");
    let e = err_of(read_tasks(&t.root(), TaskQuery::threads_of(8113)));
    assert!(
        e.contains("proc/8113/status:") && e.contains("expected a process id after 'Tgid:'"),
        "{e}"
    );
}

#[test]
fn interrupts_count_above_u64() {
    let t = Vm2Copy::new();
    t.edit(
        "/proc/interrupts",
        " 26:          0         14",
        " 26:          0 18446744073709551616",
    );
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.ends_with(
            "proc/interrupts:4: expected the count of CPU1 (column 2) to be a number \
             from 0 to 18446744073709551615, found \"18446744073709551616\""
        ),
        "{e}"
    );
    // The probe's counters read the same file the same way.
    let e = err_of(CpuCounters::read(&t.root()));
    assert!(
        e.contains("proc/interrupts:4: expected the count of CPU1"),
        "{e}"
    );
}

#[test]
fn interrupts_negative_count() {
    let t = Vm2Copy::new();
    t.edit(
        "/proc/interrupts",
        " 26:          0         14",
        " 26:         -3         14",
    );
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.contains("proc/interrupts:4: expected the count of CPU0 (column 1)")
            && e.ends_with("found \"-3\""),
        "{e}"
    );
    // A named row too.
    let t = Vm2Copy::new();
    let text = t.read("/proc/interrupts");
    let loc = text
        .lines()
        .find(|l| l.trim_start().starts_with("LOC:"))
        .unwrap();
    let first = loc.split_whitespace().nth(1).unwrap();
    t.edit("/proc/interrupts", loc, &loc.replacen(first, "-1", 1));
    let e = err_of(IrqMap::read(&t.root()));
    assert!(e.contains("expected the count of CPU0 (column 1)"), "{e}");
}

#[test]
fn irq_number_of_2_to_the_32() {
    let t = Vm2Copy::new();
    t.edit("/proc/interrupts", " 26:", " 4294967296:");
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.ends_with(
            "proc/interrupts:4: expected an IRQ number from 0 to 4294967295, \
             found \"4294967296\""
        ),
        "{e}"
    );
}

#[test]
fn header_column_of_a_cpu_that_does_not_exist() {
    let t = Vm2Copy::new();
    t.edit("/proc/interrupts", "CPU1", "CPU7");
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.ends_with(
            "proc/interrupts:1: expected columns of CPUs this machine has (possible: 0-1), \
             found \"CPU7\""
        ),
        "{e}"
    );
    let t = Vm2Copy::new();
    t.edit("/proc/softirqs", "CPU1", "CPU1       CPU2");
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.contains("proc/softirqs:1: expected columns of CPUs"),
        "{e}"
    );
    // Out of order or twice: not a header the kernel prints.
    let t = Vm2Copy::new();
    t.edit("/proc/interrupts", "CPU1", "CPU0");
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.contains("interrupts:1: expected CPU columns in ascending order, each CPU once"),
        "{e}"
    );
}

#[test]
fn softirq_count_above_u64() {
    let t = Vm2Copy::new();
    t.edit("/proc/softirqs", "8164", "99999999999999999999");
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.contains("proc/softirqs:3: expected the count of CPU0 (column 1)"),
        "{e}"
    );
}

#[test]
fn interrupts_linked_to_dev_zero_is_refused() {
    let t = Vm2Copy::new();
    t.symlink("/proc/interrupts", "/dev/zero");
    let root = t.root();
    let e = within_10s(move || err_of(IrqMap::read(&root)));
    assert!(
        e.ends_with(
            "proc/interrupts: a character device, not a regular file: refused \
             (/proc and /sys files are regular files)"
        ),
        "{e}"
    );
}

#[test]
fn interrupts_as_a_fifo_is_refused_without_blocking() {
    let t = Vm2Copy::new();
    t.fifo("/proc/interrupts");
    let root = t.root();
    let e = within_10s(move || err_of(IrqMap::read(&root)));
    assert!(
        e.contains("proc/interrupts: a FIFO, not a regular file"),
        "{e}"
    );
    // A task's files, the CPU files and the workqueue masks go through the same reader.
    let t = Vm2Copy::new();
    t.fifo(THREAD_STAT);
    let root = t.root();
    let e = within_10s(move || err_of(read_tasks(&root, TaskQuery::all_threads())));
    assert!(e.contains("8157/stat: a FIFO"), "{e}");
    let t = Vm2Copy::new();
    t.fifo("/sys/devices/system/cpu/online");
    let root = t.root();
    let e = within_10s(move || err_of(CpuMap::read(&root, &CpuSet::new())));
    assert!(e.contains("cpu/online: a FIFO"), "{e}");
}

#[test]
fn a_huge_file_is_refused_past_the_bound() {
    let t = Vm2Copy::new();
    // Sparse: 40 MiB of zeros that take no disk.
    let f = fs::File::create(t.path("/proc/softirqs")).unwrap();
    f.set_len(40 << 20).unwrap();
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.ends_with(&format!(
            "proc/softirqs: more than {} bytes, the most read from this file (not a kernel file?)",
            jitterlab_host::READ_LIMIT
        )),
        "{e}"
    );
    // An explicit bound.
    let e = err_of(t.root().read_bounded("/proc/cmdline", 8));
    assert!(e.contains("proc/cmdline: more than 8 bytes"), "{e}");
    assert!(t.root().read_bounded("/proc/cmdline", 4096).is_ok());
}

/// A header of CPU columns `0..n`, as the kernel pads it.
fn cpu_header(n: usize) -> String {
    let mut h = String::from("    ");
    for c in 0..n {
        h.push_str(&format!("{:<11}", format!("CPU{c}")));
    }
    h.push('\n');
    h
}

/// `head`, then `row(i)` for every `i` of `rows`.
fn rows(head: &str, rows: std::ops::Range<usize>, row: impl Fn(usize) -> String) -> String {
    let mut t = head.to_string();
    for i in rows {
        t.push_str(&row(i));
    }
    t
}

#[test]
fn interrupts_with_more_rows_than_a_kernel_has() {
    use jitterlab_host::irqs::{parse_interrupts, parse_softirqs, MAX_IRQ_ROWS};
    assert_eq!(MAX_IRQ_ROWS, 300_000);
    let refused = "proc/interrupts:300002: more than 300000 IRQ rows; \
                   expected /proc/interrupts as a kernel writes it";
    // Bare rows, each padded with zeros to the columns: 2 million of them took 228 MB.
    let t = Vm2Copy::new();
    t.write(
        "/proc/interrupts",
        &rows(&cpu_header(2), 0..300_001, |i| format!("{i}:\n")),
    );
    let e = err_of(IrqMap::read(&t.root()));
    assert!(e.ends_with(refused), "{e}");
    // The probe's counters read the file through the same bounds.
    let e = err_of(CpuCounters::read(&t.root()));
    assert!(e.ends_with(refused), "{e}");
    // Named rows count as rows; a blank line does not, but has its line number.
    let t = Vm2Copy::new();
    t.write(
        "/proc/interrupts",
        &rows(&format!("{}\n", cpu_header(2)), 0..300_001, |i| {
            format!("N{i}: 1 1\n")
        }),
    );
    let e = err_of(CpuCounters::read(&t.root()));
    assert!(
        e.ends_with(
            "proc/interrupts:300003: more than 300000 IRQ rows; \
             expected /proc/interrupts as a kernel writes it"
        ),
        "{e}"
    );
    // At the bound, the file reads.
    let text = rows(&cpu_header(2), 0..300_000, |i| format!("{i}:\n"));
    let (_, irqs, _) = parse_interrupts(Path::new("/proc/interrupts"), &text).unwrap();
    assert_eq!(irqs.len(), 300_000);
    assert_eq!(irqs[299_999].counts, [0, 0]);
    // /proc/softirqs, ten rows from a kernel, has the same bound.
    let t = Vm2Copy::new();
    t.write(
        "/proc/softirqs",
        &rows(&cpu_header(2), 0..300_001, |i| format!("S{i}: 1 1\n")),
    );
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.ends_with(
            "proc/softirqs:300002: more than 300000 softirq rows; \
             expected /proc/softirqs as a kernel writes it"
        ),
        "{e}"
    );
    let e = err_of(parse_softirqs(
        Path::new("softirqs"),
        &t.read("/proc/softirqs"),
    ));
    assert!(e.starts_with("softirqs:300002: more than 300000"), "{e}");
}

#[test]
fn interrupts_with_more_counts_than_a_kernel_file_holds() {
    use jitterlab_host::irqs::{parse_interrupts, MAX_COUNTS};
    assert_eq!(MAX_COUNTS, 3_145_728);
    let possible = |t: &Vm2Copy| {
        t.write("/sys/devices/system/cpu/possible", "0-8191\n");
        t.write("/sys/devices/system/cpu/present", "0-8191\n");
    };
    // 8192 columns over short rows padded with zeros: 384 rows are 3145728 counts, the
    // most; the next row is refused (a 71 KB file took 62.7 MB).
    let refused = "proc/interrupts:386: more than 3145728 counts: 3153920 in 385 rows of \
                   8192 CPU columns, padding included; expected /proc/interrupts as a kernel \
                   writes it (every count in at least 11 characters: 3145728 take more than \
                   the 32 MiB read of it)";
    let t = Vm2Copy::new();
    possible(&t);
    t.write(
        "/proc/interrupts",
        &rows(&cpu_header(8192), 0..385, |i| format!("{i}:\n")),
    );
    let e = err_of(IrqMap::read(&t.root()));
    assert!(e.ends_with(refused), "{e}");
    let e = err_of(CpuCounters::read(&t.root()));
    assert!(e.ends_with(refused), "{e}");
    // A machine-wide row (ERR, MIS: one word after the colon) stores one count, not a
    // column's worth: 383 full rows and two of them read (as 385 full rows they would
    // not).
    let text = rows(&cpu_header(8192), 0..383, |i| format!("{i}:\n")) + "ERR: 0\nMIS: 0\n";
    let (cpus, irqs, counters) = parse_interrupts(Path::new("i"), &text).unwrap();
    assert_eq!((cpus.len(), irqs.len(), counters.len()), (8192, 383, 2));
    assert!(counters.iter().all(|c| c.counts == [0] && !c.per_cpu));
    // A named row of two counts is padded to a count per column: one too many.
    let e = err_of(parse_interrupts(
        Path::new("i"),
        &(rows(&cpu_header(8192), 0..384, |i| format!("{i}:\n")) + "LOC: 1 2\n"),
    ));
    assert!(
        e.starts_with("i:386: more than 3145728 counts: 3153920 in 385 rows of 8192"),
        "{e}"
    );
    // /proc/softirqs pads every row, one count or not.
    let t = Vm2Copy::new();
    possible(&t);
    t.write(
        "/proc/softirqs",
        &rows(&cpu_header(8192), 0..385, |i| format!("S{i}: 1\n")),
    );
    let e = err_of(IrqMap::read(&t.root()));
    assert!(
        e.ends_with(
            "proc/softirqs:386: more than 3145728 counts: 3153920 in 385 rows of 8192 CPU \
             columns, padding included; expected /proc/softirqs as a kernel writes it \
             (every count in at least 11 characters: 3145728 take more than the 32 MiB \
             read of it)"
        ),
        "{e}"
    );
}

#[test]
fn a_large_file_as_a_kernel_writes_it_reads() {
    use jitterlab_host::testing::{real_interrupts, real_softirqs};
    // 20,000 IRQs on 64 CPUs: 15 MB, 1.3 million counts, within both bounds.
    let t = Vm2Copy::new();
    t.write("/sys/devices/system/cpu/possible", "0-63\n");
    t.write("/sys/devices/system/cpu/present", "0-63\n");
    t.write("/proc/interrupts", &real_interrupts(20_000, 64));
    t.write("/proc/softirqs", &real_softirqs(64));
    let map = IrqMap::read(&t.root()).unwrap();
    assert_eq!(map.cpus.len(), 64);
    assert_eq!(map.irqs.len(), 20_000);
    assert_eq!(map.irqs[19_999].irq, 20_023);
    assert_eq!(map.irqs[19_999].counts.len(), 64);
    assert_eq!(
        map.irqs[19_999].actions().collect::<Vec<_>>(),
        ["nvme312q31"]
    );
    let names: Vec<_> = map
        .counters
        .iter()
        .map(|c| (c.name.as_str(), c.per_cpu))
        .collect();
    assert_eq!(
        names,
        [
            ("NMI", true),
            ("LOC", true),
            ("RES", true),
            ("CAL", true),
            ("ERR", false),
            ("MIS", false)
        ]
    );
    assert_eq!(map.softirqs.len(), 10);
    let counters = CpuCounters::read(&t.root()).unwrap();
    assert_eq!(counters.cpus.len(), 64);
    // The IRQs, the per-CPU named rows and the softirqs; ERR and MIS are machine-wide.
    assert_eq!(counters.rows.len(), 20_000 + 4 + 10);
    assert_eq!(counters.rows[20_013].0, "softirq RCU");
    assert_eq!(counters.rows[20_013].1[63], 63 * 17);
}

#[test]
fn workqueue_flags_are_0_or_1() {
    let t = Vm2Copy::new();
    let wq = "/sys/devices/virtual/workqueue";
    let name = fs::read_dir(t.path(wq))
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.path().join("per_cpu").exists())
        .expect("a workqueue with per_cpu")
        .file_name()
        .into_string()
        .unwrap();
    t.write(&format!("{wq}/{name}/per_cpu"), "2\n");
    let e = err_of(Workqueues::read(&t.root()));
    assert!(
        e.contains(&format!("{name}/per_cpu:1: expected 0 or 1, found \"2\"")),
        "{e}"
    );
}

#[test]
fn topology_id_out_of_range() {
    let t = Vm2Copy::new();
    t.write(
        "/sys/devices/system/cpu/cpu1/topology/core_id",
        "4294967296\n",
    );
    let e = err_of(CpuMap::read(&t.root(), &CpuSet::new()));
    assert!(
        e.contains("cpu1/topology/core_id:1: expected a number from -1 to 4294967295"),
        "{e}"
    );
}

#[test]
fn run_checks_everything_before_it_enters_the_partition() {
    use jitterlab_host::partition::{enter_for_run, Header, Journal, Method, Snapshot};
    use jitterlab_host::pin::Sched;
    use jitterlab_host::tasks::Policy;

    let t = Vm2Copy::new();
    let root = t.root();
    let dir = "/sys/fs/cgroup/cpuset/jitterlab.isolated";
    t.write(&format!("{dir}/cgroup.procs"), "");
    let state = tempfile::tempdir().unwrap();
    let cpus = CpuSet::parse_list("1").unwrap();
    let header = Header {
        version: Header::VERSION,
        boot_id: String::new(),
        pid: 1,
        start_ticks: 0,
        created_unix: 0,
        cpus: cpus.clone(),
        housekeeping: CpuSet::parse_list("0").unwrap(),
        method: Method::Cgroup1,
        isolated_dir: Some(dir.into()),
        isolated_cgroup: Some("/jitterlab.isolated".into()),
        excluded_pids: vec![1],
        snapshot: Snapshot::read(&root).unwrap(),
    };
    Journal::create(state.path(), &header)
        .unwrap()
        .finish()
        .unwrap();
    let argv = vec!["true".into()];
    let procs = || t.read(&format!("{dir}/cgroup.procs"));
    let runs = state.path().join("runs.jsonl");

    let bad = Sched {
        policy: Policy::Fifo,
        priority: 500,
    };
    let e = err_of(enter_for_run(&root, state.path(), &cpus, &argv, Some(&bad)));
    assert_eq!(e, "priority 500 is out of range for policy fifo: 1-99");
    assert_eq!(procs(), "", "nothing entered");
    assert!(!runs.exists(), "nothing registered");
    let e = err_of(enter_for_run(&root, state.path(), &cpus, &[], None));
    assert_eq!(e, "no command to run");
    assert_eq!(procs(), "");

    let good = Sched {
        policy: Policy::Fifo,
        priority: 50,
    };
    enter_for_run(&root, state.path(), &cpus, &argv, Some(&good)).unwrap();
    assert_eq!(procs(), std::process::id().to_string());
    assert!(runs.exists());
}

#[test]
fn cpuset_files_flags_and_task_ids() {
    let cs = "/sys/fs/cgroup/cpuset";
    let t = Vm2Copy::new();
    t.write(&format!("{cs}/cpuset.sched_load_balance"), "7\n");
    let e = err_of(jitterlab_host::Cgroups::read(&t.root()));
    assert!(
        e.contains("cpuset.sched_load_balance:1: expected 0 or 1, found \"7\""),
        "{e}"
    );
    let t = Vm2Copy::new();
    t.write(&format!("{cs}/tasks"), "1\n2\nnot-a-pid\n");
    let e = err_of(jitterlab_host::Cgroups::read(&t.root()));
    assert!(
        e.contains("cpuset/tasks:3: expected a task id, found \"not-a-pid\""),
        "{e}"
    );
}

#[test]
fn proc_stat_steal_out_of_range() {
    let t = Vm2Copy::new();
    assert_eq!(
        jitterlab_host::env::steal_ticks(&t.root()).unwrap(),
        [(0, 121), (1, 132)]
    );
    t.edit(
        "/proc/stat",
        "cpu1 5696 0 2275 51273 469 0 46 132",
        "cpu1 5696 0 2275 51273 469 0 46 -132",
    );
    let e = err_of(jitterlab_host::env::steal_ticks(&t.root()));
    assert!(
        e.contains("proc/stat:3: expected field 9 (steal) to be a number")
            && e.ends_with("found \"-132\""),
        "{e}"
    );
    let t = Vm2Copy::new();
    t.edit("/proc/stat", "cpu1 ", "cpu4294967296 ");
    let e = err_of(jitterlab_host::env::steal_ticks(&t.root()));
    assert!(e.contains("proc/stat:3: expected a CPU number"), "{e}");
}

#[test]
fn a_cgroup_directory_linked_to_its_parent_is_not_followed() {
    let t = Vm2Copy::new();
    let cs = t.path("/sys/fs/cgroup/cpuset");
    std::os::unix::fs::symlink(&cs, cs.join("loop")).unwrap();
    let root = t.root();
    let cg = within_10s(move || jitterlab_host::Cgroups::read(&root).unwrap());
    assert!(cg.cpusets.iter().all(|c| !c.path.contains("loop")));
}

#[test]
fn cpuidle_disable_is_0_or_1() {
    let t = Vm2Copy::new();
    let dir = "/sys/devices/system/cpu/cpu0/cpuidle";
    let Ok(states) = fs::read_dir(t.path(dir)) else {
        return; // no cpuidle states in the capture
    };
    let Some(state) = states
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().into_string().unwrap())
        .find(|n| n.starts_with("state"))
    else {
        return;
    };
    t.write(&format!("{dir}/{state}/disable"), "3\n");
    let e = err_of(CpuMap::read(&t.root(), &CpuSet::new()));
    assert!(
        e.contains(&format!("{state}/disable:1: expected 0 or 1, found \"3\"")),
        "{e}"
    );
}

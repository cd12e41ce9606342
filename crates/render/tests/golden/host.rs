//! `show` and its views on the 2-CPU VM tree; `pin` and `irq` results; `record`'s summary.

use jitterlab_cpuset::CpuSet;
use jitterlab_host::irqs::{DefaultChange, IrqChange, IrqOutcome, IrqSetReport};
use jitterlab_host::overview::Overview;
use jitterlab_host::pin::{PinReport, ThreadChange, ThreadOutcome};
use jitterlab_host::tracefs::{RecordSummary, RecordedCpu};
use jitterlab_host::{
    read_tasks, Cgroups, CpuMap, Filter, IrqMap, TaskList, TaskQuery, Workqueues,
};

use crate::{both, vm2};

fn list(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

#[test]
fn show_cpus() {
    both("show_cpus", &CpuMap::read(&vm2(), &CpuSet::new()).unwrap());
}

#[test]
fn show_irqs() {
    both("show_irqs", &IrqMap::read(&vm2()).unwrap());
}

#[test]
fn show_tasks() {
    let tasks = read_tasks(&vm2(), TaskQuery::default()).unwrap();
    both(
        "show_tasks",
        &TaskList::new(tasks, false, None, &Filter::default()),
    );
}

#[test]
fn show_threads_of_a_process_with_split_masks() {
    let threads = read_tasks(&vm2(), TaskQuery::threads_of(8113)).unwrap();
    both(
        "show_threads_pid",
        &TaskList::new(threads, false, Some(8113), &Filter::default()),
    );
}

#[test]
fn show_overview() {
    let root = vm2();
    let cpus = CpuMap::read(&root, &CpuSet::new()).unwrap();
    let irqs = IrqMap::read(&root).unwrap();
    let threads = read_tasks(&root, TaskQuery::all_threads()).unwrap();
    both(
        "show_overview",
        &Overview::build(&cpus, &irqs, &threads, &Filter::default()),
    );
}

#[test]
fn show_workqueues() {
    both("show_workqueues", &Workqueues::read(&vm2()).unwrap());
}

#[test]
fn show_cgroups() {
    both("show_cgroups", &Cgroups::read(&vm2()).unwrap());
}

#[test]
fn pin() {
    let change = |tid: u32, comm: &str, outcome: ThreadOutcome, error: Option<&str>| ThreadChange {
        tid,
        comm: comm.into(),
        old: Some(list("0-1")),
        new: (outcome == ThreadOutcome::Moved).then(|| list("1")),
        outcome,
        error: error.map(str::to_string),
    };
    both(
        "pin",
        &PinReport {
            pid: 8113,
            cpus: list("1"),
            threads: vec![
                change(8113, "python3", ThreadOutcome::Moved, None),
                change(8155, "python3", ThreadOutcome::Exited, None),
                change(8157, "python3", ThreadOutcome::Failed, Some("EPERM")),
            ],
        },
    );
}

#[test]
fn irq_set_and_default() {
    let change = |irq: u32, label: &str, outcome: IrqOutcome, new_eff: &str| IrqChange {
        irq,
        label: label.into(),
        requested: list("0"),
        old_affinity: Some(list("0-1")),
        new_affinity: Some(list("0")),
        old_effective: Some(list("1")),
        new_effective: Some(list(new_eff)),
        outcome,
        error: (outcome == IrqOutcome::Refused).then(|| "Input/output error".to_string()),
    };
    both(
        "irq_set",
        &IrqSetReport {
            changes: vec![
                change(36, "virtio1-req.0", IrqOutcome::Refused, "1"),
                change(41, "virtio3-rx", IrqOutcome::Pending, "1"),
                change(24, "ACPI:Ged", IrqOutcome::Applied, "0"),
            ],
            irqbalance: Some(612),
        },
    );
    both(
        "irq_default",
        &DefaultChange {
            irqbalance: None,
            old: list("0-1"),
            new: list("0"),
        },
    );
}

/// A recording of 5 s whose CPU 1 lost events each way a ring buffer can.
fn recording(flight_recorder: bool, stopped_by: &str) -> RecordSummary {
    RecordSummary {
        output: "trace.dat".into(),
        format: "trace-cmd .dat v7 (zstd)".into(),
        bytes: 1_292_875,
        events: vec!["sched_switch".into(), "irq_handler_entry".into()],
        wall_ns: 5_000_000_000,
        stopped_by: stopped_by.into(),
        command_exit: Some("exit status: 0".into()),
        flight_recorder,
        cpus: vec![
            RecordedCpu {
                cpu: 0,
                pages: 310,
                events: 9_114,
                overrun: 0,
                dropped: 0,
                commit_overrun: 0,
            },
            RecordedCpu {
                cpu: 1,
                pages: 1024,
                events: 30_102,
                overrun: 734,
                dropped: 0,
                commit_overrun: 2,
            },
        ],
    }
}

#[test]
fn record_summary() {
    both("record", &recording(false, "duration"));
}

/// Overwritten events are what a flight recorder lets go: said, not warned of.
#[test]
fn flight_recorder_summary() {
    both("record-flight", &recording(true, "tracing off"));
}

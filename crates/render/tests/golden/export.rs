//! `jitterlab export`'s summary: a trace and a latency result written as Parquet.

use jitterlab_parquet::{ExportReport, ExportSummary, FileWritten};

use crate::both;

fn file(table: &str, host: &str, run: &str, rows: u64, bytes: u64) -> FileWritten {
    FileWritten {
        table: table.into(),
        path: format!("fleet/{table}/host={host}/run_id={run}/part.parquet").into(),
        rows,
        bytes,
    }
}

#[test]
fn export_summary() {
    let report = ExportReport {
        dir: "fleet".into(),
        exports: vec![
            ExportSummary {
                input: "disk-irq-stress.v7.dat".into(),
                host: "vm".into(),
                run_id: "disk-irq-stress.v7".into(),
                kernel: Some("6.18.44".into()),
                events: 41636,
                files: vec![
                    file("sched_slice", "vm", "disk-irq-stress.v7", 9120, 151_004),
                    file("wakeup", "vm", "disk-irq-stress.v7", 4411, 98_020),
                ],
            },
            ExportSummary {
                input: "latency-2cpu.json".into(),
                host: "board7".into(),
                run_id: "latency-2cpu".into(),
                kernel: None,
                events: 0,
                files: vec![file("latency_run", "board7", "latency-2cpu", 2, 6091)],
            },
        ],
    };
    both("export", &report);
}

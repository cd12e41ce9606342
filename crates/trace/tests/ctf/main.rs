//! The LTTng (CTF 1.8) reader: the committed real trace against babeltrace2 and by hand,
//! and small traces made here for the edge cases.

mod oracle;
mod real;
mod robust;
mod synth;
mod to_dat;

/// A real LTTng 2.5 kernel trace of a 32-bit ARM board (see tests/data/README.md).
pub const KERNEL_IRQ_SCHED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/lttng/kernel-irq-sched"
);

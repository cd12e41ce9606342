//! `irq set` on copies of the fixture tree (`--root`): each outcome the kernel's
//! files can give there, with the exit status the report says (0 when the kernel
//! took the mask, 1 when an IRQ refused it), the other IRQs still done. `altered` and
//! `unknown` (a mask read back other than written, or not at all) cannot be made with
//! plain files: the host crate's unit test of `IrqSetReport::status` has them, and
//! the live tests the managed IRQ's refusal.

use std::path::Path;

use crate::util::{json_envelope, run, stderr, vm2_copy};

/// `irq set IRQ CPUS --json` on `tree`: the exit status and each IRQ's outcome.
fn irq_set(tree: &Path, irq: &str, cpus: &str) -> (Option<i32>, Vec<(u64, String)>) {
    let root = tree.to_str().unwrap();
    let o = run(&["--root", root, "irq", "set", irq, cpus, "--json"]);
    let d = json_envelope(&o, "jitterlab.irq.set");
    let outcomes = d["changes"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", stderr(&o)))
        .iter()
        .map(|c| {
            (
                c["irq"].as_u64().unwrap(),
                c["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (o.status.code(), outcomes)
}

fn outcomes(list: &[(u64, &str)]) -> Vec<(u64, String)> {
    list.iter().map(|&(i, o)| (i, o.to_string())).collect()
}

#[test]
fn irq_set_exits_with_the_reports_status() {
    let t = vm2_copy();
    let irq_dir = |n: u32| t.path().join(format!("proc/irq/{n}"));
    // IRQ 43 is not active (no effective CPU); IRQ 40's mask cannot be written (the
    // file is gone, as a write to a vanished IRQ finds it).
    std::fs::write(irq_dir(43).join("effective_affinity_list"), "\n").unwrap();
    let mask40 = irq_dir(40).join("smp_affinity_list");
    std::fs::remove_file(&mask40).unwrap();
    std::os::unix::fs::symlink("gone", &mask40).unwrap();

    // The kernel took the mask: exit 0. (The fixture's effective masks never change.)
    assert_eq!(
        irq_set(t.path(), "41", "0"),
        (Some(0), outcomes(&[(41, "applied")]))
    );
    assert_eq!(
        irq_set(t.path(), "41", "0-1"),
        (Some(0), outcomes(&[(41, "subset")]))
    );
    assert_eq!(
        irq_set(t.path(), "42", "0"),
        (Some(0), outcomes(&[(42, "pending")]))
    );
    assert_eq!(
        irq_set(t.path(), "43", "1"),
        (Some(0), outcomes(&[(43, "inactive")]))
    );
    let written = std::fs::read_to_string(irq_dir(42).join("smp_affinity_list")).unwrap();
    assert_eq!(written, "0");
    // Refused: exit 1, alone or among IRQs that took it, which are still done.
    assert_eq!(
        irq_set(t.path(), "40", "0"),
        (Some(1), outcomes(&[(40, "refused")]))
    );
    assert_eq!(
        irq_set(t.path(), "virtio3-*", "1"),
        (
            Some(1),
            outcomes(&[
                (40, "refused"),
                (41, "pending"),
                (42, "applied"),
                (43, "inactive")
            ])
        )
    );
    let written = std::fs::read_to_string(irq_dir(41).join("smp_affinity_list")).unwrap();
    assert_eq!(written, "1");
}

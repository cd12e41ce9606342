//! A trace's own reading of sched_switch's `prev_state`: the `__print_flags` table of
//! its print format, the mask applied before it (`TASK_REPORT_MAX - 1`, or
//! `TASK_STATE_MAX - 1` before 4.14) and the bit that prints `+`, so that a raw state
//! becomes the same [`TaskState`] letters whichever kernel recorded it.

use super::eval::{self, Rec};
use super::expr::{Expr, Op};
use super::{Kind, PrintFmt};
use crate::format::{Endian, EventFormat};
use crate::TaskState;

impl PrintFmt {
    /// The arguments, when the format parses.
    fn args(&self) -> &[Expr] {
        match &self.kind {
            Kind::Pieces(_, args) => args,
            _ => &[],
        }
    }
}

/// How a trace's sched_switch format prints `prev_state`: its `__print_flags` table
/// (raw bit, letter), the mask applied first, and the bit that prints `+`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StateTable {
    mask: u64,
    /// (raw value, the letter's [`TaskState`] bit; 0 for a letter no kernel prints).
    letters: Vec<(i64, u64)>,
    preempted: u64,
}

impl StateTable {
    /// The table of `format` (a sched_switch's), when its print format has one.
    pub(crate) fn of(format: &EventFormat, long_size: usize) -> Option<StateTable> {
        let fmt = PrintFmt::parse(format, long_size);
        let mut table = None;
        let mut preempted = 0;
        for arg in fmt.args() {
            let Expr::Cond(cond, yes, no) = arg else {
                continue;
            };
            match (&**yes, &**no) {
                (
                    Expr::Flags {
                        value, table: t, ..
                    },
                    Expr::Atom(r),
                ) if r == "R" => {
                    let mask = match state_mask(value) {
                        Some(m) => m,
                        None => continue,
                    };
                    let letters = t
                        .iter()
                        .map(|(v, name)| {
                            let mut chars = name.chars();
                            let bit = match (chars.next(), chars.next()) {
                                (Some(c), None) => TaskState::bit_of(c).unwrap_or(0),
                                _ => 0,
                            };
                            (*v, bit)
                        })
                        .collect();
                    table = Some((mask, letters));
                }
                (Expr::Atom(plus), Expr::Atom(empty)) if plus == "+" && empty.is_empty() => {
                    if let Some(m) = state_mask(cond) {
                        preempted = m;
                    }
                }
                _ => {}
            }
        }
        let (mask, letters) = table?;
        Some(StateTable {
            mask,
            letters,
            preempted,
        })
    }

    /// The table of kernels since 4.14, whose bits are [`TaskState`]'s own.
    pub(crate) fn is_identity(&self) -> bool {
        self.mask == 0xff
            && self.preempted == TaskState::PREEMPTED
            && self.letters.len() == 8
            && self
                .letters
                .iter()
                .all(|&(v, bit)| v > 0 && v as u64 == bit && bit < 0x100)
    }

    /// `raw` as letters, as `__print_flags` reads it: each table value in order whose
    /// bits are all set prints its letter and clears them (bits no letter names are
    /// dropped); no bit under the mask is `R`; the `+` bit adds [`TaskState::PREEMPTED`].
    pub(crate) fn state(&self, raw: u64) -> TaskState {
        let mut bits = 0;
        let mut val = (raw & self.mask) as i64;
        if val != 0 {
            for &(fval, bit) in &self.letters {
                if fval > 0 && (val & fval) == fval {
                    bits |= bit;
                    val &= !fval;
                }
            }
        }
        if self.preempted != 0 && raw & self.preempted != 0 {
            bits |= TaskState::PREEMPTED;
        }
        TaskState(bits)
    }
}

/// The mask of `REC->prev_state & MASK` (all bits for `REC->prev_state` alone).
fn state_mask(e: &Expr) -> Option<u64> {
    let is_state = |e: &Expr| matches!(e.uncast(), Expr::Field(n, _) if n == "prev_state");
    match e {
        e if is_state(e) => Some(u64::MAX),
        Expr::Binary(Op::And, l, r) if is_state(l) => constant(r),
        Expr::Binary(Op::And, l, r) if is_state(r) => constant(l),
        _ => None,
    }
}

/// The value of an expression of constants only.
fn constant(e: &Expr) -> Option<u64> {
    struct NoSymbols;
    impl eval::Symbols for NoSymbols {
        fn func(&self, _: u64) -> Option<(std::borrow::Cow<'_, str>, u64)> {
            None
        }
        fn addr_of(&self, _: &str) -> u64 {
            0
        }
        fn printk(&self, _: u64) -> Option<std::borrow::Cow<'_, str>> {
            None
        }
    }
    fn only_constants(e: &Expr) -> bool {
        match e {
            Expr::Atom(a) => a.starts_with(|c: char| c.is_ascii_digit()),
            Expr::Cast(_, x) | Expr::Unary(_, x) => only_constants(x),
            Expr::Binary(_, l, r) => only_constants(l) && only_constants(r),
            _ => false,
        }
    }
    if !only_constants(e) {
        return None;
    }
    let rec = Rec {
        data: &[],
        endian: Endian::Little,
        long_size: 8,
        fields: &[],
        syms: &NoSymbols,
    };
    Some(rec.num(e))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::format::Formats;
    use crate::printfmt::Printer;

    const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

    fn switch_format(print: &str) -> EventFormat {
        let fields = "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:1;\n\
                      \tfield:long prev_state;\toffset:24;\tsize:8;\tsigned:1;\n";
        EventFormat::parse(
            "sched",
            &format!("name: sched_switch\nID: 7\nformat:\n{COMMON}{fields}\nprint fmt: {print}\n"),
        )
        .unwrap()
    }

    #[test]
    fn task_states_from_the_format() {
        // Kernels since 4.14: the table is TaskState's own.
        let new = switch_format(
            r#""prev_state=%s%s", (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? "+" : """#,
        );
        let t = StateTable::of(&new, 8).unwrap();
        assert!(t.is_identity());
        for (raw, s) in [
            (0, "R"),
            (0x100, "R+"),
            (1, "S"),
            (0x10, "X"),
            (0x20, "Z"),
            (0x80, "I"),
        ] {
            assert_eq!(t.state(raw).to_string(), s, "{raw:#x}");
        }
        // A 4.1 kernel: Z and X the other way round, `x`, `K`, `W`, `N`; `+` is 4096.
        let old = switch_format(
            r#""prev_state=%s%s", REC->prev_state & (4096-1) ? __print_flags(REC->prev_state & (4096-1), "|", { 1, "S"} , { 2, "D" }, { 4, "T" }, { 8, "t" }, { 16, "Z" }, { 32, "X" }, { 64, "x" }, { 128, "K" }, { 256, "W" }, { 512, "P" }, { 1024, "N" }) : "R", REC->prev_state & 4096 ? "+" : """#,
        );
        let t = StateTable::of(&old, 4).unwrap();
        assert!(!t.is_identity());
        for (raw, s) in [
            (0, "R"),
            (4096, "R+"),
            (1, "S"),
            (16, "Z"),
            (32, "X"),
            (64, "x"),
            (130, "D|K"),
            (1026, "D|N"),
            (512, "P"),
        ] {
            assert_eq!(t.state(raw).to_string(), s, "{raw}");
            assert!(t.state(4096).is_runnable());
        }
        // And the printer prints the same letters from the format itself.
        let mut formats = Formats::new();
        formats.add(old);
        let mut p = Printer::new(Endian::Little, 4, Arc::new(formats));
        let mut rec = vec![7, 0, 0, 0, 0, 0, 0, 0];
        rec.extend_from_slice(&[0; 16]);
        rec.extend_from_slice(&(4096u64 + 130).to_le_bytes());
        let mut out = Vec::new();
        p.print(&rec, &mut out);
        assert_eq!(out, b"prev_state=D|K+");
        // No table: none.
        assert_eq!(
            StateTable::of(&switch_format(r#""%ld", REC->prev_state"#), 8),
            None
        );
    }
}

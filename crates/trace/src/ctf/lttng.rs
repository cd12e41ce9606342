//! LTTng's kernel events as jitterlab's [`EventKind`]s.
//!
//! lttng-modules records the kernel's tracepoints with fields of its own:
//!
//! - `tid` where ftrace says `pid` (`prev_tid`, `next_tid`, `child_tid`...);
//! - priorities less `MAX_RT_PRIO` (100): `prio = p->prio - 100`, so a CFS task of nice 0
//!   is 20 and an RT task of priority 99 is -100 (what `/proc/PID/stat` shows). Since
//!   lttng-modules 2.7.1 and 2.8 every `prio` field is so; before, sched_waking,
//!   sched_wakeup and sched_wakeup_new kept the kernel's `p->prio` (0..139) while
//!   sched_switch, sched_migrate_task and the sched_process events subtracted
//!   (lttng-modules commit "Fix: Use MAX_RT_PRIO offset in sched_wakeup_template",
//!   2015). The reader adds 100 back where the tracer version in the metadata's `env`
//!   says it was subtracted, so every priority is on the kernel's 0..139 scale, as in
//!   .dat and ftrace traces;
//! - `prev_state` as the kernel's own task state: since Linux 4.14 the `TASK_REPORT`
//!   bit of the state (`1 << (task_state_index - 1)`, `TASK_REPORT_MAX` = 0x100 when
//!   preempted), which are [`TaskState`]'s bits; before 4.14 the raw `p->state`, with
//!   `TASK_STATE_MAX` set when preempted (512 before 3.9, 1024 to 4.1, 2048 to 4.7, 4096
//!   to 4.13), mapped letter by letter to [`TaskState`] using the kernel release of the
//!   metadata's `env`;
//! - names since lttng-modules 2.7 namespaced: `irq_softirq_entry` for `softirq_entry`,
//!   `timer_hrtimer_expire_entry` for `hrtimer_expire_entry`; both spellings are read;
//! - no `common_flags` nor `common_preempt_count`: [`crate::Event::flags`] and
//!   `preempt_count` are 0;
//! - no `common_pid`: see [`super::CtfEvents`] for how an event's task is found.
//!
//! The .dat decoder reads the events of an LTTng trace converted to .dat (system
//! [`super::DAT_SYSTEM`]) with the same plans ([`plan_by`]) and the same [`kind`].

use super::decode::{Decoder, Leaf};
use super::tsdl::{EnvValue, Metadata};
use super::types::Type;
use crate::{Comm, EventKind, Sym, TaskState, Text, Wakeup};

/// What a trace's tracer and kernel versions say about its fields.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Flavor {
    /// Added to sched_switch's, sched_migrate_task's and sched_process_*'s prio.
    prio: i32,
    /// Added to the prio of the wake-up events.
    wake_prio: i32,
    /// How `prev_state` reads.
    states: States,
}

#[derive(Clone, Debug, PartialEq)]
enum States {
    /// Linux 4.14 and later: already [`TaskState`]'s bits.
    Report,
    /// Earlier: `p->state` bits (raw value, [`TaskState`] bit) and `TASK_STATE_MAX`.
    Raw { letters: Vec<(u64, u64)>, max: u64 },
}

/// `(major, minor, patch)` of a version string such as `3.10.31-ltsi`.
fn version(s: &str) -> Option<(u32, u32, u32)> {
    let mut it = s
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    Some((it.next()??, it.next()??, it.next().flatten().unwrap_or(0)))
}

impl Flavor {
    /// As the metadata's `env` tells (`tracer_name`, `tracer_major`..., `kernel_release`);
    /// a trace that does not say is taken as recorded by a current lttng-modules on a
    /// kernel since 4.14.
    pub(crate) fn of(m: &Metadata) -> Flavor {
        Flavor::of_env(&m.env)
    }

    /// As an `env` block tells (the metadata's, or the one a converted .dat keeps).
    pub(crate) fn of_env(env: &[(String, EnvValue)]) -> Flavor {
        let m = Metadata {
            env: env.to_vec(),
            ..Metadata::default()
        };
        let tracer = (
            m.env_int("tracer_major").unwrap_or(i64::MAX),
            m.env_int("tracer_minor").unwrap_or(0),
            m.env_int("tracer_patchlevel").unwrap_or(0),
        );
        let modules = m
            .env_str("tracer_name")
            .is_none_or(|n| n == "lttng-modules");
        let wake_prio = if modules && tracer < (2, 7, 1) {
            0
        } else {
            100
        };
        let kernel = m.env_str("kernel_release").and_then(version);
        let states = match kernel {
            Some(k) if k < (4, 14, 0) => {
                let mut letters = vec![
                    (1, TaskState::INTERRUPTIBLE),
                    (2, TaskState::UNINTERRUPTIBLE),
                    (4, TaskState::STOPPED),
                    (8, TaskState::TRACED),
                    (16, TaskState::ZOMBIE),
                    (32, TaskState::DEAD),
                    (64, TaskState::TASK_DEAD),
                    (128, TaskState::WAKEKILL),
                    (256, TaskState::WAKING),
                ];
                if k >= (3, 9, 0) {
                    letters.push((512, TaskState::PARKED));
                }
                if k >= (4, 2, 0) {
                    letters.push((1024, TaskState::NOLOAD));
                }
                let max = if k < (3, 9, 0) {
                    512
                } else if k < (4, 2, 0) {
                    1024
                } else if k < (4, 8, 0) {
                    2048
                } else {
                    4096
                };
                States::Raw { letters, max }
            }
            _ => States::Report,
        };
        Flavor {
            prio: 100,
            wake_prio,
            states,
        }
    }

    /// `prev_state` as [`TaskState`].
    pub(crate) fn state(&self, raw: u64) -> TaskState {
        match &self.states {
            States::Report => TaskState(raw & 0x1ff),
            States::Raw { letters, max } => {
                let mut bits = 0;
                let v = raw & (max - 1);
                for &(r, b) in letters {
                    if v & r != 0 {
                        bits |= b;
                    }
                }
                if raw & max != 0 {
                    bits |= TaskState::PREEMPTED;
                }
                TaskState(bits)
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    Waking,
    Wakeup,
    New,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Soft {
    Raise,
    Entry,
    Exit,
}

/// How an event class becomes an [`EventKind`]: the indexes of the top-level fields the
/// typed variant reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    Switch([usize; 7]),
    Wake(Wake, [usize; 4]),
    Migrate([usize; 5]),
    Fork([usize; 4]),
    Exec([usize; 3]),
    Exit([usize; 3]),
    IrqEntry([usize; 2]),
    IrqExit([usize; 2]),
    Softirq(Soft, usize),
    HrtimerEntry([usize; 3]),
    HrtimerExit(usize),
    WorkStart([usize; 2]),
    WorkEnd(usize, Option<usize>),
    Other,
}

impl Plan {
    /// The indexes of the fields the plan reads.
    pub(crate) fn indexes(&self) -> Vec<usize> {
        match self {
            Plan::Switch(f) => f.to_vec(),
            Plan::Wake(_, f) => f.to_vec(),
            Plan::Migrate(f) => f.to_vec(),
            Plan::Fork(f) => f.to_vec(),
            Plan::Exec(f) | Plan::Exit(f) | Plan::HrtimerEntry(f) => f.to_vec(),
            Plan::IrqEntry(f) | Plan::IrqExit(f) | Plan::WorkStart(f) => f.to_vec(),
            Plan::Softirq(_, i) | Plan::HrtimerExit(i) => vec![*i],
            Plan::WorkEnd(w, f) => std::iter::once(*w).chain(*f).collect(),
            Plan::Other => Vec::new(),
        }
    }
}

/// What the first pass looks for besides the typed events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Statedump {
    /// lttng_statedump_process_state: tid, pid (thread group), name.
    Process([usize; 3]),
    /// lttng_statedump_interrupt: irq, action (the handler's name).
    Interrupt([usize; 2]),
}

/// What a field holds, as far as the typed events care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holds {
    /// A string, or an array or sequence of text bytes.
    Text,
    /// One integer (or an enumeration's).
    Int,
    /// Anything else.
    Other,
}

/// A field by name: its index and what it holds.
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<(usize, Holds)>;

/// The indexes of fields `names` when each is text (`t`) or an integer (`i`) as `kinds`
/// says.
fn find<const N: usize>(look: Lookup, names: [&str; N], kinds: &[u8; N]) -> Option<[usize; N]> {
    let mut out = [0usize; N];
    for (k, name) in names.iter().enumerate() {
        let (i, holds) = look(name)?;
        let want = match kinds[k] {
            b't' => Holds::Text,
            _ => Holds::Int,
        };
        if holds != want {
            return None;
        }
        out[k] = i;
    }
    Some(out)
}

/// A CTF payload's fields by name.
fn lookup_type(fields: Option<&Type>) -> impl Fn(&str) -> Option<(usize, Holds)> + '_ {
    move |name| {
        let (i, t) = fields?.field(name)?;
        let holds = if t.is_text() {
            Holds::Text
        } else if t.is_int() {
            Holds::Int
        } else {
            Holds::Other
        };
        Some((i, holds))
    }
}

/// The plan of event `name` with payload `fields`: [`Plan::Other`] when its fields are
/// not those the typed variant needs.
pub(crate) fn plan(name: &str, fields: Option<&Type>) -> Plan {
    plan_by(name, &lookup_type(fields))
}

/// The plan of event `name` whose fields `f` finds by name (a CTF payload's, or a
/// converted .dat's format's).
pub(crate) fn plan_by(name: &str, f: Lookup) -> Plan {
    let one = |n: &str| find(f, [n], b"i").map(|[i]| i);
    let wake =
        |w| find(f, ["comm", "tid", "prio", "target_cpu"], b"tiii").map(|x| Plan::Wake(w, x));
    let p = match name {
        "sched_switch" => find(
            f,
            [
                "prev_comm",
                "prev_tid",
                "prev_prio",
                "prev_state",
                "next_comm",
                "next_tid",
                "next_prio",
            ],
            b"tiiitii",
        )
        .map(Plan::Switch),
        "sched_waking" => wake(Wake::Waking),
        "sched_wakeup" => wake(Wake::Wakeup),
        "sched_wakeup_new" => wake(Wake::New),
        "sched_migrate_task" => {
            find(f, ["comm", "tid", "prio", "orig_cpu", "dest_cpu"], b"tiiii").map(Plan::Migrate)
        }
        "sched_process_fork" => find(
            f,
            ["parent_comm", "parent_tid", "child_comm", "child_tid"],
            b"titi",
        )
        .map(Plan::Fork),
        "sched_process_exec" => find(f, ["filename", "tid", "old_tid"], b"tii").map(Plan::Exec),
        "sched_process_exit" => find(f, ["comm", "tid", "prio"], b"tii").map(Plan::Exit),
        "irq_handler_entry" => find(f, ["irq", "name"], b"it").map(Plan::IrqEntry),
        "irq_handler_exit" => find(f, ["irq", "ret"], b"ii").map(Plan::IrqExit),
        "softirq_raise" | "irq_softirq_raise" => one("vec").map(|v| Plan::Softirq(Soft::Raise, v)),
        "softirq_entry" | "irq_softirq_entry" => one("vec").map(|v| Plan::Softirq(Soft::Entry, v)),
        "softirq_exit" | "irq_softirq_exit" => one("vec").map(|v| Plan::Softirq(Soft::Exit, v)),
        "hrtimer_expire_entry" | "timer_hrtimer_expire_entry" => {
            find(f, ["hrtimer", "now", "function"], b"iii").map(Plan::HrtimerEntry)
        }
        "hrtimer_expire_exit" | "timer_hrtimer_expire_exit" => {
            one("hrtimer").map(Plan::HrtimerExit)
        }
        "workqueue_execute_start" => find(f, ["work", "function"], b"ii").map(Plan::WorkStart),
        "workqueue_execute_end" => one("work").map(|w| Plan::WorkEnd(w, one("function"))),
        _ => None,
    };
    p.unwrap_or(Plan::Other)
}

/// The statedump event `name` with payload `fields`, when it is one the reader reads.
pub(crate) fn statedump(name: &str, fields: Option<&Type>) -> Option<Statedump> {
    let f = &lookup_type(fields);
    match name {
        "lttng_statedump_process_state" => {
            find(f, ["tid", "pid", "name"], b"iit").map(Statedump::Process)
        }
        "lttng_statedump_interrupt" => find(f, ["irq", "action"], b"it").map(Statedump::Interrupt),
        _ => None,
    }
}

/// The top-level fields of one decoded scope.
pub(crate) struct Fields<'a> {
    pub dec: &'a Decoder,
    pub tops: &'a [u32],
}

/// The values of an event's fields by index, as [`plan`] and [`plan_by`] number them.
pub(crate) trait Values {
    /// Field `i` as an integer (0 when it is not one).
    fn int(&self, i: usize) -> i64;
    /// Field `i` as text bytes, up to its first NUL (empty when it is not text).
    fn text(&self, i: usize) -> &[u8];
}

impl Fields<'_> {
    fn leaf(&self, i: usize) -> Option<&Leaf> {
        self.dec.leaves.get(*self.tops.get(i)? as usize)
    }

    /// Field `i` as an integer (0 when it is not one).
    pub(crate) fn int(&self, i: usize) -> i64 {
        match self.leaf(i) {
            Some(Leaf::Int(v)) => *v,
            Some(Leaf::Uint(v)) => *v as i64,
            _ => 0,
        }
    }

    /// Field `i` as text bytes (empty when it is not text).
    pub(crate) fn text(&self, i: usize) -> &[u8] {
        match self.leaf(i) {
            Some(Leaf::Str(s, n)) => self.dec.text(*s, *n),
            _ => &[],
        }
    }
}

impl Values for Fields<'_> {
    fn int(&self, i: usize) -> i64 {
        Fields::int(self, i)
    }
    fn text(&self, i: usize) -> &[u8] {
        Fields::text(self, i)
    }
}

/// The typed kind of an event planned `plan` (never [`Plan::Other`]); `name` interns the
/// IRQ names and exec file names.
pub(crate) fn kind(
    plan: &Plan,
    f: &impl Values,
    flavor: &Flavor,
    text: &mut dyn FnMut(&[u8]) -> Text,
) -> Option<EventKind> {
    let comm = |i| Comm::from_bytes(f.text(i));
    let i32_ = |i| f.int(i) as i32;
    let u32_ = |i| f.int(i) as u32;
    let prio = |i| i32_(i).wrapping_add(flavor.prio);
    Some(match plan {
        Plan::Switch([pc, pt, pp, ps, nc, nt, np]) => EventKind::SchedSwitch {
            prev_comm: comm(*pc),
            prev_pid: i32_(*pt),
            prev_prio: prio(*pp),
            prev_state: flavor.state(f.int(*ps) as u64),
            next_comm: comm(*nc),
            next_pid: i32_(*nt),
            next_prio: prio(*np),
        },
        Plan::Wake(w, [c, t, p, cpu]) => {
            let wk = Wakeup {
                comm: comm(*c),
                pid: i32_(*t),
                prio: i32_(*p).wrapping_add(flavor.wake_prio),
                target_cpu: u32_(*cpu),
            };
            match w {
                Wake::Waking => EventKind::SchedWaking(wk),
                Wake::Wakeup => EventKind::SchedWakeup(wk),
                Wake::New => EventKind::SchedWakeupNew(wk),
            }
        }
        Plan::Migrate([c, t, p, o, d]) => EventKind::SchedMigrateTask {
            comm: comm(*c),
            pid: i32_(*t),
            prio: prio(*p),
            orig_cpu: u32_(*o),
            dest_cpu: u32_(*d),
        },
        Plan::Fork([pc, pt, cc, ct]) => EventKind::SchedProcessFork {
            parent_comm: comm(*pc),
            parent_pid: i32_(*pt),
            child_comm: comm(*cc),
            child_pid: i32_(*ct),
        },
        Plan::Exec([file, t, old]) => EventKind::SchedProcessExec {
            filename: text(f.text(*file)),
            pid: i32_(*t),
            old_pid: i32_(*old),
        },
        Plan::Exit([c, t, p]) => EventKind::SchedProcessExit {
            comm: comm(*c),
            pid: i32_(*t),
            prio: prio(*p),
        },
        Plan::IrqEntry([irq, name]) => EventKind::IrqHandlerEntry {
            irq: u32_(*irq),
            name: text(f.text(*name)),
        },
        Plan::IrqExit([irq, ret]) => EventKind::IrqHandlerExit {
            irq: u32_(*irq),
            ret: i32_(*ret),
        },
        Plan::Softirq(s, v) => {
            let vec = u32_(*v);
            match s {
                Soft::Raise => EventKind::SoftirqRaise { vec },
                Soft::Entry => EventKind::SoftirqEntry { vec },
                Soft::Exit => EventKind::SoftirqExit { vec },
            }
        }
        Plan::HrtimerEntry([h, now, func]) => EventKind::HrtimerExpireEntry {
            hrtimer: f.int(*h) as u64,
            now: f.int(*now) as u64,
            function: Sym {
                addr: f.int(*func) as u64,
                name: None,
            },
        },
        Plan::HrtimerExit(h) => EventKind::HrtimerExpireExit {
            hrtimer: f.int(*h) as u64,
        },
        Plan::WorkStart([w, func]) => EventKind::WorkqueueExecuteStart {
            work: f.int(*w) as u64,
            function: Sym {
                addr: f.int(*func) as u64,
                name: None,
            },
        },
        Plan::WorkEnd(w, func) => EventKind::WorkqueueExecuteEnd {
            work: f.int(*w) as u64,
            function: Sym {
                addr: func.map_or(0, |i| f.int(i) as u64),
                name: None,
            },
        },
        Plan::Other => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctf::tsdl::EnvValue;

    fn flavor(env: &[(&str, EnvValue)]) -> Flavor {
        let m = Metadata {
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            ..Metadata::default()
        };
        Flavor::of(&m)
    }

    #[test]
    fn prev_state_by_kernel() {
        let old = flavor(&[("kernel_release", EnvValue::Str("3.10.31-ltsi".into()))]);
        assert_eq!(old.state(0).to_string(), "R");
        assert_eq!(old.state(1).to_string(), "S");
        assert_eq!(old.state(64).to_string(), "x");
        assert_eq!(old.state(1024).to_string(), "R+");
        assert_eq!(old.state(130).to_string(), "D|K");
        let mid = flavor(&[("kernel_release", EnvValue::Str("4.9.0".into()))]);
        assert_eq!(mid.state(4096).to_string(), "R+");
        assert_eq!(mid.state(1026).to_string(), "D|N");
        let new = flavor(&[("kernel_release", EnvValue::Str("6.8.0-45-generic".into()))]);
        assert_eq!(new.state(0x100).to_string(), "R+");
        assert_eq!(new.state(0x80).to_string(), "I");
        assert_eq!(new.state(0x20).to_string(), "Z");
    }

    #[test]
    fn wake_prio_by_tracer_version() {
        let v = |maj: i64, min: i64, patch: i64| {
            flavor(&[
                ("tracer_name", EnvValue::Str("lttng-modules".into())),
                ("tracer_major", EnvValue::Int(maj)),
                ("tracer_minor", EnvValue::Int(min)),
                ("tracer_patchlevel", EnvValue::Int(patch)),
            ])
            .wake_prio
        };
        assert_eq!(v(2, 5, 0), 0);
        assert_eq!(v(2, 7, 0), 0);
        assert_eq!(v(2, 7, 1), 100);
        assert_eq!(v(2, 13, 9), 100);
        assert_eq!(flavor(&[]).wake_prio, 100);
    }
}

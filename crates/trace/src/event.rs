//! The event model: one [`Event`] per trace record, with typed payloads for the events the
//! analyses use and a generic payload for every other event.
//!
//! Times are nanoseconds on the trace clock. Text readers whose source has microseconds
//! multiply by 1000; they never invent precision they do not have.

use std::fmt;
use std::sync::Arc;

/// Shared immutable text (IRQ names, symbols, marker strings). Readers intern repeated
/// values, so cloning is cheap.
pub type Text = Arc<str>;

/// A task name as the kernel keeps it (`TASK_COMM_LEN` = 16 bytes with the NUL), stored
/// inline so that events do not allocate for names. Longer names are cut at 16 bytes on a
/// character boundary; a name ends at its first NUL, as the kernel's does.
///
/// The name is its 16 bytes, NUL-padded, and nothing else: its length is where the first
/// NUL is (16 when there is none). With a length byte beside them, the decoder built a
/// 17-byte value with one 16-byte store and a byte store, and moving it into the event
/// read it back in 8-byte pieces that straddled the two. Those loads could not be
/// forwarded from the stores, and stalled: on a switch-dense recording they were most of
/// `Decoder::decode`'s samples.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Comm {
    bytes: [u8; 16],
}

impl Comm {
    /// The longest name kept, in bytes.
    pub const MAX: usize = 16;

    /// A comm from text (cut at its first NUL, and at 16 bytes on a character boundary).
    pub fn new(s: &str) -> Comm {
        let s = s.split('\0').next().unwrap_or_default();
        let mut end = s.len().min(Self::MAX);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0u8; 16];
        bytes[..end].copy_from_slice(&s.as_bytes()[..end]);
        Comm { bytes }
    }

    /// A comm from a NUL-padded kernel field (`char comm[16]`); invalid UTF-8 is replaced.
    #[inline]
    pub fn from_bytes(raw: &[u8]) -> Comm {
        // Hot path (two comms per sched_switch): the kernel's 16-byte field as one word,
        // the first NUL found with the has-zero-byte trick (the lowest flagged byte is
        // exactly the first zero byte), ASCII checked on the bytes before it. Inlined
        // into the decoder; the rest is out of line.
        if let Some(word) = raw.first_chunk::<16>() {
            let v = u128::from_le_bytes(*word);
            let len = first_nul(v);
            let keep = if len == 16 {
                u128::MAX
            } else {
                (1u128 << (len * 8)) - 1
            };
            if v & keep & HIGHS == 0 {
                return Comm {
                    bytes: (v & keep).to_le_bytes(),
                };
            }
        }
        Comm::from_other_bytes(raw)
    }

    /// [`Comm::from_bytes`] of a field shorter than 16 bytes or not ASCII.
    #[cold]
    fn from_other_bytes(raw: &[u8]) -> Comm {
        let raw = &raw[..raw.len().min(Self::MAX)];
        let raw = match raw.iter().position(|&b| b == 0) {
            Some(n) => &raw[..n],
            None => raw,
        };
        // Hot path (2 comms per sched_switch): ASCII needs no UTF-8 validation and no
        // char-boundary search.
        if raw.is_ascii() {
            let mut bytes = [0u8; 16];
            bytes[..raw.len()].copy_from_slice(raw);
            return Comm { bytes };
        }
        match std::str::from_utf8(raw) {
            Ok(s) => Comm::new(s),
            Err(_) => Comm::new(&String::from_utf8_lossy(raw)),
        }
    }

    /// The name's length in bytes: where its first NUL is.
    #[inline]
    pub fn len(&self) -> usize {
        first_nul(u128::from_le_bytes(self.bytes))
    }

    /// Whether the name is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bytes[0] == 0
    }

    /// The name.
    #[inline]
    pub fn as_str(&self) -> &str {
        let bytes = self.bytes.get(..self.len()).unwrap_or_default();
        debug_assert!(std::str::from_utf8(bytes).is_ok());
        // SAFETY: the fields are private, and every constructor keeps UTF-8 in them:
        // `new` cuts a `&str` on a char boundary, `from_bytes` keeps ASCII or goes
        // through `new`, `Default` is empty. (The check of `from_utf8` was 2 % of an
        // `analyze`'s instructions: filters and folds ask for a task's name per event.)
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }
}

/// The high bit of each of 16 bytes.
const HIGHS: u128 = u128::from_le_bytes([0x80; 16]);

/// The index of the first zero byte of the 16 bytes of `v` (little-endian), 16 when none
/// is: the has-zero-byte trick, whose lowest flagged byte is exactly the first zero byte.
#[inline]
fn first_nul(v: u128) -> usize {
    const ONES: u128 = u128::from_le_bytes([0x01; 16]);
    let zero = v.wrapping_sub(ONES) & !v & HIGHS;
    if zero == 0 {
        Comm::MAX
    } else {
        zero.trailing_zeros() as usize / 8
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Comm {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The `common_flags` byte of an event, with the kernel's bit values
/// (`enum trace_flag_type` in kernel/trace/trace.h). Text readers map the latency-format
/// letters (`dNhs`...) back to these bits.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Flags(pub u8);

impl Flags {
    /// Interrupts were disabled (`d`).
    pub const IRQS_OFF: u8 = 0x01;
    /// A lazy reschedule is pending (`L`, or `B` with need-resched).
    pub const NEED_RESCHED_LAZY: u8 = 0x02;
    /// A reschedule is pending (`N`).
    pub const NEED_RESCHED: u8 = 0x04;
    /// In hard interrupt context (`h`).
    pub const HARDIRQ: u8 = 0x08;
    /// In softirq context (`s`).
    pub const SOFTIRQ: u8 = 0x10;
    /// A preemption reschedule is pending (`p`).
    pub const PREEMPT_RESCHED: u8 = 0x20;
    /// In NMI context (`z` / `Z`).
    pub const NMI: u8 = 0x40;
    /// Bottom halves were disabled (`b`).
    pub const BH_OFF: u8 = 0x80;

    /// True if every bit of `bit` is set.
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit == bit
    }
    /// In hard interrupt context.
    pub fn hardirq(self) -> bool {
        self.has(Self::HARDIRQ)
    }
    /// In softirq context.
    pub fn softirq(self) -> bool {
        self.has(Self::SOFTIRQ)
    }
    /// Interrupts disabled.
    pub fn irqs_off(self) -> bool {
        self.has(Self::IRQS_OFF)
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Flags({:#04x})", self.0)
    }
}

/// `prev_state` of a sched_switch, in the letters the kernel prints: one bit per letter
/// (the bits of the kernel's `TASK_REPORT` since 4.14, `S` to `I`, then `+` and the
/// letters older kernels print). 0 = runnable, [`TaskState::PREEMPTED`] = runnable after
/// preemption (`R+`).
///
/// Kernels number the states differently (before 4.14 `Z` was 16 and `X` 32, `x` 64,
/// and `+` was `TASK_STATE_MAX`, 1024 to 4096); a .dat's reader maps its raw value
/// through the table of that trace's own sched_switch format, so the same letter is the
/// same bit whichever kernel recorded it.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TaskState(pub u64);

impl serde::Serialize for TaskState {
    /// As the kernel prints it: `R`, `R+`, `S`, `D|K`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl TaskState {
    /// `S`: interruptible sleep.
    pub const INTERRUPTIBLE: u64 = 0x01;
    /// `D`: uninterruptible sleep.
    pub const UNINTERRUPTIBLE: u64 = 0x02;
    /// `T`: stopped.
    pub const STOPPED: u64 = 0x04;
    /// `t`: traced.
    pub const TRACED: u64 = 0x08;
    /// `X`: dead.
    pub const DEAD: u64 = 0x10;
    /// `Z`: zombie.
    pub const ZOMBIE: u64 = 0x20;
    /// `P`: parked.
    pub const PARKED: u64 = 0x40;
    /// `I`: idle kernel thread.
    pub const IDLE: u64 = 0x80;
    /// `+` on `R`: switched out while runnable, i.e. preempted (`TASK_REPORT_MAX`).
    pub const PREEMPTED: u64 = 0x100;
    /// `x`: `TASK_DEAD`, the last switch-out of an exiting task on kernels before 4.14.
    pub const TASK_DEAD: u64 = 0x200;
    /// `K`: wake-kill (beside `D` in a killable sleep, `D|K`), kernels before 4.14.
    pub const WAKEKILL: u64 = 0x400;
    /// `W`: waking, kernels before 4.14.
    pub const WAKING: u64 = 0x800;
    /// `N`: no-load (beside `D` in an idle kernel thread's sleep), kernels 4.2 to 4.13.
    pub const NOLOAD: u64 = 0x1000;

    /// Each letter's bit, in the order they are printed.
    pub const LETTERS: [(u64, char); 12] = [
        (Self::INTERRUPTIBLE, 'S'),
        (Self::UNINTERRUPTIBLE, 'D'),
        (Self::STOPPED, 'T'),
        (Self::TRACED, 't'),
        (Self::DEAD, 'X'),
        (Self::ZOMBIE, 'Z'),
        (Self::PARKED, 'P'),
        (Self::IDLE, 'I'),
        (Self::TASK_DEAD, 'x'),
        (Self::WAKEKILL, 'K'),
        (Self::WAKING, 'W'),
        (Self::NOLOAD, 'N'),
    ];

    /// The bit of a state letter; `None` for a letter no kernel prints.
    pub fn bit_of(letter: char) -> Option<u64> {
        Self::LETTERS
            .iter()
            .find(|(_, l)| *l == letter)
            .map(|(b, _)| *b)
    }

    /// Still runnable when switched out (`R` or `R+`): the task was preempted or yielded.
    pub fn is_runnable(self) -> bool {
        self.0 & !Self::PREEMPTED == 0
    }

    /// Parse the letters the kernel prints (`R`, `R+`, `S`, `D`, `D|K`, `I`, ...).
    /// Returns `None` for anything else.
    pub fn from_letters(s: &str) -> Option<TaskState> {
        let (s, plus) = match s.strip_suffix('+') {
            Some(rest) => (rest, Self::PREEMPTED),
            None => (s, 0),
        };
        if s == "R" {
            return Some(TaskState(plus));
        }
        let mut bits = plus;
        for part in s.split('|') {
            let mut chars = part.chars();
            let c = chars.next()?;
            if chars.next().is_some() {
                return None;
            }
            bits |= Self::bit_of(c)?;
        }
        Some(TaskState(bits))
    }
}

impl fmt::Display for TaskState {
    /// The letters joined by `|` (`R` when there are none), then `+` when preempted: what
    /// the kernel's sched_switch format prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_runnable() {
            f.write_str("R")?;
        } else {
            let mut first = true;
            for (bit, letter) in Self::LETTERS {
                if self.0 & bit != 0 {
                    if !first {
                        f.write_str("|")?;
                    }
                    write!(f, "{letter}")?;
                    first = false;
                }
            }
        }
        if self.0 & Self::PREEMPTED != 0 {
            f.write_str("+")?;
        }
        Ok(())
    }
}

impl fmt::Debug for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskState({self})")
    }
}

/// A kernel code address, with its symbol when the source knows it (text formats print the
/// name; .dat files have the address and, with kallsyms, the name).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Sym {
    /// The address, 0 when only the name is known.
    pub addr: u64,
    /// `function+0xoff` or `function`, as the source resolves it.
    pub name: Option<Text>,
}

/// The softirq vector names of the kernel (`softirq_to_name`), by vector number.
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The payload shared by sched_waking, sched_wakeup and sched_wakeup_new.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Wakeup {
    /// The woken task's name.
    pub comm: Comm,
    /// The woken task's tid (`pid_` in JSON: `pid` is the common field's, the waker's).
    #[serde(rename = "pid_")]
    pub pid: i32,
    /// Its kernel priority (0..=139; lower is more important).
    pub prio: i32,
    /// The CPU it will run on.
    pub target_cpu: u32,
}

/// A field value of a generic event.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Value {
    /// A signed integer field.
    Int(i64),
    /// An unsigned integer field (also pointers).
    Uint(u64),
    /// A string field (`char[]`, `__string`, `__data_loc char[]`).
    Str(Text),
    /// An array of bytes or other raw data.
    Bytes(Arc<[u8]>),
}

/// What happened. Variants for the events the analyses use; everything else is
/// [`EventKind::Other`] with its fields decoded by name.
///
/// Serialized (for `report --json`) as its fields plus an `event` field naming it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventKind {
    /// sched:sched_switch.
    SchedSwitch {
        /// The task switched out.
        prev_comm: Comm,
        /// Its tid.
        prev_pid: i32,
        /// Its priority.
        prev_prio: i32,
        /// Its state: runnable (preempted) or a sleep state.
        prev_state: TaskState,
        /// The task switched in.
        next_comm: Comm,
        /// Its tid.
        next_pid: i32,
        /// Its priority.
        next_prio: i32,
    },
    /// sched:sched_waking (the wake-up is requested, in the waker's context).
    SchedWaking(Wakeup),
    /// sched:sched_wakeup (the task is on a run queue).
    SchedWakeup(Wakeup),
    /// sched:sched_wakeup_new (a new task is on a run queue for the first time).
    SchedWakeupNew(Wakeup),
    /// sched:sched_migrate_task.
    SchedMigrateTask {
        /// The task moved.
        comm: Comm,
        /// Its tid.
        #[serde(rename = "pid_")]
        pid: i32,
        /// Its priority.
        prio: i32,
        /// From this CPU.
        orig_cpu: u32,
        /// To this CPU.
        dest_cpu: u32,
    },
    /// sched:sched_process_fork.
    SchedProcessFork {
        /// The parent's name.
        parent_comm: Comm,
        /// The parent's tid.
        parent_pid: i32,
        /// The child's name.
        child_comm: Comm,
        /// The child's tid.
        child_pid: i32,
    },
    /// sched:sched_process_exec.
    SchedProcessExec {
        /// The executed file.
        filename: Text,
        /// The tid after exec.
        #[serde(rename = "pid_")]
        pid: i32,
        /// The tid before exec (differs when a non-leader thread execs).
        old_pid: i32,
    },
    /// sched:sched_process_exit.
    SchedProcessExit {
        /// The exiting task's name.
        comm: Comm,
        /// Its tid.
        #[serde(rename = "pid_")]
        pid: i32,
        /// Its priority.
        prio: i32,
    },
    /// irq:irq_handler_entry.
    IrqHandlerEntry {
        /// The IRQ number.
        irq: u32,
        /// The handler's name (`/proc/interrupts` last column).
        name: Text,
    },
    /// irq:irq_handler_exit.
    IrqHandlerExit {
        /// The IRQ number.
        irq: u32,
        /// The handler's return value: 1 handled, 0 unhandled.
        ret: i32,
    },
    /// irq:softirq_raise.
    SoftirqRaise {
        /// The vector (0 HI, 1 TIMER, 2 NET_TX, 3 NET_RX, 4 BLOCK, 5 IRQ_POLL, 6 TASKLET,
        /// 7 SCHED, 8 HRTIMER, 9 RCU).
        vec: u32,
    },
    /// irq:softirq_entry.
    SoftirqEntry {
        /// The vector.
        vec: u32,
    },
    /// irq:softirq_exit.
    SoftirqExit {
        /// The vector.
        vec: u32,
    },
    /// timer:hrtimer_expire_entry.
    HrtimerExpireEntry {
        /// The timer's address.
        hrtimer: u64,
        /// The expiry time the timer code saw (ns, CLOCK_MONOTONIC).
        now: u64,
        /// The callback.
        function: Sym,
    },
    /// timer:hrtimer_expire_exit.
    HrtimerExpireExit {
        /// The timer's address.
        hrtimer: u64,
    },
    /// ipi:ipi_send_cpu.
    IpiSendCpu {
        /// The target CPU.
        #[serde(rename = "cpu_")]
        cpu: u32,
        /// Where the IPI was sent from.
        callsite: Sym,
        /// The function the target will run.
        callback: Sym,
    },
    /// workqueue:workqueue_execute_start.
    WorkqueueExecuteStart {
        /// The work item's address.
        work: u64,
        /// Its function.
        function: Sym,
    },
    /// workqueue:workqueue_execute_end.
    WorkqueueExecuteEnd {
        /// The work item's address.
        work: u64,
        /// Its function.
        function: Sym,
    },
    /// ftrace:print: a write to trace_marker.
    Print {
        /// The writer's instruction pointer (0 in text formats).
        ip: u64,
        /// The text, without the trailing newline.
        text: Text,
    },
    /// function_graph: a function was entered.
    #[serde(rename = "funcgraph_entry")]
    FuncEntry {
        /// The function.
        func: Sym,
        /// The call depth (0 = outermost traced call).
        depth: u32,
    },
    /// function_graph: a function returned.
    #[serde(rename = "funcgraph_exit")]
    FuncReturn {
        /// The function, when the source names it (a `}` line names it only in a comment,
        /// or not at all).
        func: Sym,
        /// The call depth.
        depth: u32,
        /// The time from entry to return, in ns, when the source gives it.
        duration: Option<u64>,
    },
    /// The kernel lost events on this CPU here (ring-buffer overrun).
    Lost {
        /// How many, when the source says.
        count: Option<u64>,
    },
    /// Any other event, its fields decoded by name from the event's format.
    /// (Serialized by [`Event`]'s own serializer, with `event` the name without system.)
    #[serde(skip)]
    Other {
        /// `system:name`, e.g. `timer:timer_start`.
        name: Text,
        /// Field names and values, in the format's order (common fields left out).
        fields: Vec<(Text, Value)>,
    },
}

impl EventKind {
    /// The event's name as trace-cmd prints it (`sched_switch`, `irq_handler_entry`, ...);
    /// `lost` for lost-event markers.
    pub fn name(&self) -> &str {
        match self {
            EventKind::SchedSwitch { .. } => "sched_switch",
            EventKind::SchedWaking(_) => "sched_waking",
            EventKind::SchedWakeup(_) => "sched_wakeup",
            EventKind::SchedWakeupNew(_) => "sched_wakeup_new",
            EventKind::SchedMigrateTask { .. } => "sched_migrate_task",
            EventKind::SchedProcessFork { .. } => "sched_process_fork",
            EventKind::SchedProcessExec { .. } => "sched_process_exec",
            EventKind::SchedProcessExit { .. } => "sched_process_exit",
            EventKind::IrqHandlerEntry { .. } => "irq_handler_entry",
            EventKind::IrqHandlerExit { .. } => "irq_handler_exit",
            EventKind::SoftirqRaise { .. } => "softirq_raise",
            EventKind::SoftirqEntry { .. } => "softirq_entry",
            EventKind::SoftirqExit { .. } => "softirq_exit",
            EventKind::HrtimerExpireEntry { .. } => "hrtimer_expire_entry",
            EventKind::HrtimerExpireExit { .. } => "hrtimer_expire_exit",
            EventKind::IpiSendCpu { .. } => "ipi_send_cpu",
            EventKind::WorkqueueExecuteStart { .. } => "workqueue_execute_start",
            EventKind::WorkqueueExecuteEnd { .. } => "workqueue_execute_end",
            EventKind::Print { .. } => "print",
            EventKind::FuncEntry { .. } => "funcgraph_entry",
            EventKind::FuncReturn { .. } => "funcgraph_exit",
            EventKind::Lost { .. } => "lost",
            // After its system's name (`sched:sched_foo`), when it has one; by hand: the
            // names are short, and rsplit's search was a tenth of report's line.
            EventKind::Other { name, .. } => match name.bytes().rposition(|b| b == b':') {
                Some(i) => &name[i + 1..],
                None => name,
            },
        }
    }
}

/// One trace record.
///
/// Serialized (for `report --json`) flat: `ts`, `cpu`, `pid`, `flags`, `preempt_count`,
/// `event` (the name, as [`EventKind::name`]), then the event's fields; an
/// [`EventKind::Other`] adds `system` and its fields by name (a field named like one of
/// those keys, or `buffer`, gets a trailing `_`: `cpu_`). [`EventJson`] adds a buffer's
/// name and the fields a typed variant does not keep.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Timestamp in ns on the trace clock.
    pub ts: u64,
    /// The CPU that recorded it.
    pub cpu: u32,
    /// The task current on that CPU (`common_pid`; 0 = idle).
    pub pid: i32,
    /// Interrupt and reschedule flags (`common_flags`).
    pub flags: Flags,
    /// `common_preempt_count`: preempt depth in the low 4 bits, migrate-disable depth in
    /// the high 4 bits.
    pub preempt_count: u8,
    /// What happened.
    pub kind: EventKind,
}

impl serde::Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        EventJson {
            event: self,
            buffer: None,
            untyped: &[],
        }
        .serialize(s)
    }
}

/// Keys of an event's JSON that a field named alike must not take: it gets a `_`
/// (`cpu=3` of timer_start is `cpu_`).
const RESERVED: [&str; 8] = [
    "ts",
    "cpu",
    "pid",
    "flags",
    "preempt_count",
    "event",
    "system",
    "buffer",
];

fn key(k: &str) -> std::borrow::Cow<'_, str> {
    if RESERVED.contains(&k) {
        format!("{k}_").into()
    } else {
        k.into()
    }
}

/// An event as `report --json` writes it: [`Event`]'s own serialization, with the name of
/// the .dat buffer it came from (`buffer`, when it is an instance's and the output mixes
/// buffers) and the fields of its format that its typed variant does not keep
/// ([`crate::printfmt::Printer::untyped_fields`]), after its own.
pub struct EventJson<'a> {
    /// The event.
    pub event: &'a Event,
    /// Its buffer's name.
    pub buffer: Option<&'a str>,
    /// Its format's other fields.
    pub untyped: &'a [(Text, Value)],
}

impl serde::Serialize for EventJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Fields<'a>(&'a [(Text, Value)]);
        impl serde::Serialize for Fields<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(self.0.len()))?;
                for (k, v) in self.0 {
                    m.serialize_entry(&key(k), v)?;
                }
                m.end()
            }
        }
        #[derive(serde::Serialize)]
        struct Typed<'a> {
            ts: u64,
            cpu: u32,
            pid: i32,
            flags: u8,
            preempt_count: u8,
            #[serde(skip_serializing_if = "Option::is_none")]
            buffer: Option<&'a str>,
            #[serde(flatten)]
            kind: &'a EventKind,
            #[serde(flatten)]
            untyped: Fields<'a>,
        }
        let ev = self.event;
        match &ev.kind {
            EventKind::Other { name, fields } => {
                let (system, event) = name.split_once(':').unwrap_or(("", name));
                let mut m = s.serialize_map(Some(8 + fields.len() + self.untyped.len()))?;
                m.serialize_entry("ts", &ev.ts)?;
                m.serialize_entry("cpu", &ev.cpu)?;
                m.serialize_entry("pid", &ev.pid)?;
                m.serialize_entry("flags", &ev.flags.0)?;
                m.serialize_entry("preempt_count", &ev.preempt_count)?;
                if let Some(b) = self.buffer {
                    m.serialize_entry("buffer", b)?;
                }
                m.serialize_entry("event", event)?;
                m.serialize_entry("system", system)?;
                for (k, v) in fields.iter().chain(self.untyped) {
                    m.serialize_entry(&key(k), v)?;
                }
                m.end()
            }
            kind => Typed {
                ts: ev.ts,
                cpu: ev.cpu,
                pid: ev.pid,
                flags: ev.flags.0,
                preempt_count: ev.preempt_count,
                buffer: self.buffer,
                kind,
                untyped: Fields(self.untyped),
            }
            .serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Comm, TaskState};

    #[test]
    fn task_states_print_as_parsed() {
        for s in [
            "R", "R+", "S", "D", "D|K", "x", "I", "Z", "X", "P", "W", "D|N", "S+", "T|t",
        ] {
            let st = TaskState::from_letters(s).unwrap();
            assert_eq!(st.to_string(), s);
        }
        assert!(TaskState::from_letters("R+").unwrap().is_runnable());
        assert!(!TaskState::from_letters("x").unwrap().is_runnable());
        assert!(!TaskState::from_letters("W").unwrap().is_runnable());
        assert_eq!(TaskState::from_letters("Q"), None);
        assert_eq!(TaskState::from_letters("S|"), None);
        assert_eq!(TaskState::from_letters("SD"), None);
    }

    /// The definition: cut at the first NUL (at most 16 bytes), invalid UTF-8 replaced.
    fn reference(raw: &[u8]) -> Comm {
        let raw = &raw[..raw.len().min(Comm::MAX)];
        let raw = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
        Comm::new(&String::from_utf8_lossy(raw))
    }

    #[test]
    fn a_comm_is_its_sixteen_bytes_and_orders_as_its_text() {
        assert_eq!(std::mem::size_of::<Comm>(), 16);
        let names = [
            "",
            "a",
            "ab",
            "abc",
            "b",
            "kworker/0:1",
            "stress-ng-switch",
            "é",
        ];
        for x in names {
            let c = Comm::new(x);
            assert_eq!(
                (c.as_str(), c.len(), c.is_empty()),
                (x, x.len(), x.is_empty())
            );
            for y in names {
                assert_eq!(c.cmp(&Comm::new(y)), x.cmp(y), "{x:?} against {y:?}");
            }
        }
        // A name ends at its first NUL, as a kernel field does.
        assert_eq!(Comm::new("cut\0here").as_str(), "cut");
        assert_eq!(Comm::new("cut\0here"), Comm::from_bytes(b"cut\0here"));
        assert_eq!(Comm::new("stress-ng-switch-more").len(), Comm::MAX);
    }

    #[test]
    fn from_bytes_matches_its_definition() {
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for nul in 0..=17 {
            let mut v = b"stress-ng-switch\x01\x7f".to_vec();
            if nul < v.len() {
                v[nul] = 0;
            }
            cases.push(v.clone());
            cases.push(v[..v.len().min(16)].to_vec());
            cases.push(v[..nul.min(v.len())].to_vec());
            let mut hi = v.clone();
            hi[nul.saturating_sub(1).min(15)] = 0xc3;
            cases.push(hi);
        }
        cases.push("kworker/u4:é\0\0\0\0".as_bytes().to_vec());
        cases.push("ééééééééé".as_bytes().to_vec());
        cases.push(vec![0xff; 16]);
        cases.push(vec![0x80, 0, 0x41]);
        for raw in &cases {
            let (got, want) = (Comm::from_bytes(raw), reference(raw));
            assert_eq!(
                (got.as_str(), got.bytes, got.len()),
                (want.as_str(), want.bytes, want.len()),
                "{raw:?}"
            );
        }
    }
}

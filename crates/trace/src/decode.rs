//! From a raw record (event id and payload bytes) to an [`Event`].
//!
//! The [`Decoder`] looks every field up by NAME in the event's format once, when it is
//! built, and keeps a plan per event id: the events the analyses use become typed
//! [`EventKind`] variants, every other event [`EventKind::Other`] with its fields as typed
//! [`Value`]s. No offset is hard-coded; an event whose format lacks a field the typed
//! variant needs falls back to `Other`. sched_switch's `prev_state` is read through the
//! state table of the trace's own format (older kernels number the states differently). Function pointers (hrtimer callbacks, IPI call
//! sites, work functions, function_graph functions) are resolved with the trace's
//! kallsyms when it has them.

mod printf;
mod symbols;

use std::collections::HashMap;
use std::sync::Arc;

pub(crate) use symbols::{count_past, is_printk_format, is_symbol, lines};
pub use symbols::{Kallsyms, LazyKallsyms, PrintkFormats, MAX_PRINTK_FORMATS, MAX_SYMBOLS};

use crate::ctf::lttng;
use crate::format::{Endian, EventFormat, Field, FieldKind, Formats};
use crate::printfmt::StateTable;
use crate::{Comm, Event, EventKind, Flags, Sym, TaskState, Text, Value, Wakeup};

/// The fields every record starts with.
#[derive(Clone, Debug)]
struct Common {
    flags: Option<Field>,
    preempt: Option<Field>,
    pid: Option<Field>,
}

#[derive(Clone, Copy, Debug)]
enum WakeKind {
    Waking,
    Wakeup,
    WakeupNew,
}

impl WakeKind {
    /// The event of this kind for `w`.
    fn event(self, w: Wakeup) -> EventKind {
        match self {
            WakeKind::Waking => EventKind::SchedWaking(w),
            WakeKind::Wakeup => EventKind::SchedWakeup(w),
            WakeKind::WakeupNew => EventKind::SchedWakeupNew(w),
        }
    }
}

/// sched_switch's `prev_state` field `ps` of record `d`, through the trace's own state
/// table when its numbering is not the kernel's of today.
#[inline]
fn prev_state(ps: &Field, table: Option<&StateTable>, e: Endian, d: &[u8]) -> Option<TaskState> {
    Some(match table {
        None => TaskState(ps.int(e, d)? as u64),
        Some(t) => t.state(ps.uint(e, d)?),
    })
}

#[derive(Clone, Copy, Debug)]
enum SoftKind {
    Raise,
    Entry,
    Exit,
}

/// What to do with one event id.
#[derive(Clone, Debug)]
enum Plan {
    /// sched_switch; its state table when the format's differs from [`TaskState`]'s bits.
    Switch([Field; 7], Option<Box<StateTable>>),
    Wake(WakeKind, [Field; 4]),
    Migrate([Field; 5]),
    Fork([Field; 4]),
    Exec([Field; 3]),
    Exit([Field; 3]),
    IrqEntry([Field; 2]),
    IrqExit([Field; 2]),
    Softirq(SoftKind, Field),
    HrtimerEntry([Field; 3]),
    HrtimerExit(Field),
    Ipi([Field; 3]),
    WorkStart([Field; 2]),
    WorkEnd(Field, Option<Field>),
    Print(Option<Field>, Field),
    Bputs(Option<Field>, Field),
    Bprint(Option<Field>, Field, Field),
    FuncEntry([Field; 2]),
    FuncExit(Field, Field, Option<[Field; 2]>),
    /// An event of an LTTng trace converted to .dat (system [`crate::ctf::DAT_SYSTEM`]):
    /// LTTng's own fields, read as the CTF reader reads them (the indexes are into the
    /// format's fields).
    Lttng(lttng::Plan, Vec<Field>),
    Other(Vec<Field>),
}

impl Plan {
    /// The fields the plan reads (every field for [`Plan::Other`]).
    fn fields(&self) -> Vec<&Field> {
        let mut v: Vec<&Field> = Vec::new();
        match self {
            Plan::Switch(f, _) => v.extend(f),
            Plan::Wake(_, f) => v.extend(f),
            Plan::Migrate(f) => v.extend(f),
            Plan::Fork(f) => v.extend(f),
            Plan::Exec(f) | Plan::Exit(f) | Plan::HrtimerEntry(f) | Plan::Ipi(f) => v.extend(f),
            Plan::IrqEntry(f) | Plan::IrqExit(f) | Plan::WorkStart(f) | Plan::FuncEntry(f) => {
                v.extend(f)
            }
            Plan::Softirq(_, f) | Plan::HrtimerExit(f) => v.push(f),
            Plan::WorkEnd(w, f) => v.extend(std::iter::once(w).chain(f)),
            Plan::Print(ip, b) | Plan::Bputs(ip, b) => v.extend(ip.iter().chain([b])),
            Plan::Bprint(ip, fm, b) => v.extend(ip.iter().chain([fm, b])),
            Plan::FuncExit(f, d, times) => {
                v.extend([f, d].into_iter().chain(times.iter().flatten()))
            }
            Plan::Lttng(p, f) => v.extend(p.indexes().into_iter().filter_map(|i| f.get(i))),
            Plan::Other(f) => v.extend(f),
        }
        v
    }
}

/// The fields of `f` that its typed [`EventKind`] variant does not keep (none for an
/// event decoded as [`EventKind::Other`], which keeps them all): sched_wakeup's `success`
/// of older kernels, sched_process_exit's `group_dead`, ...
pub(crate) fn untyped_fields(f: &EventFormat) -> Vec<Field> {
    let plan = plan_for(f, 8);
    let kept: Vec<&str> = plan.fields().iter().map(|x| &*x.name).collect();
    f.fields
        .iter()
        .filter(|x| !kept.contains(&&*x.name))
        .cloned()
        .collect()
}

struct Entry {
    name: Text,
    common: Common,
    plan: Plan,
    /// The fixed offsets of a sched_switch or wake-up, when they can be read so.
    quick: Option<Quick>,
}

/// Where the fields of a sched_switch or sched_waking/wakeup record lie, when the trace
/// is little-endian and each has the size every kernel of the last fifteen years gives
/// it: 16-byte comms; 4-byte pids, priorities and CPUs; 1-byte common flags and preempt
/// count. Such a record is read at these offsets with one length check, not one call per
/// field that looks at the field's size, sign and byte order (those calls were 12 % of
/// an `analyze`'s instructions; these events are most of a scheduling trace). A shorter
/// record takes the general path, which names the field outside it.
#[derive(Clone, Copy, Debug)]
struct Quick {
    /// The bytes the fields span.
    len: usize,
    /// common_flags, common_preempt_count, common_pid.
    common: [usize; 3],
    /// sched_switch: prev_comm, next_comm; a wake-up: comm (twice).
    comms: [usize; 2],
    /// sched_switch: prev_pid, prev_prio, next_pid, next_prio; a wake-up: pid, prio,
    /// target_cpu (and pid again).
    ints: [usize; 4],
}

impl Quick {
    /// The offsets of `plan`'s fields, when it is a sched_switch or a wake-up whose
    /// fields all have the sizes above.
    fn of(endian: Endian, common: &Common, plan: &Plan) -> Option<Quick> {
        if endian != Endian::Little {
            return None;
        }
        let sized = |f: &Field, kind: FieldKind, size: usize| {
            (f.kind == kind && f.size == size).then_some(f.offset)
        };
        let num = |f: &Field| sized(f, FieldKind::Scalar, 4);
        let comm = |f: &Field| sized(f, FieldKind::Array, Comm::MAX);
        let byte = |f: &Option<Field>| sized(f.as_ref()?, FieldKind::Scalar, 1);
        let common = [
            byte(&common.flags)?,
            byte(&common.preempt)?,
            num(common.pid.as_ref()?)?,
        ];
        let (comms, ints, other) = match plan {
            Plan::Switch([pc, pp, ppr, ps, nc, np, npr], _) => (
                [comm(pc)?, comm(nc)?],
                [num(pp)?, num(ppr)?, num(np)?, num(npr)?],
                Some(ps),
            ),
            Plan::Wake(_, [c, p, pr, t]) => {
                let c = comm(c)?;
                let p = num(p)?;
                ([c, c], [p, num(pr)?, num(t)?, p], None)
            }
            _ => return None,
        };
        let end = |o: usize, n: usize| o.checked_add(n);
        let mut len = 0;
        for e in common[..2]
            .iter()
            .map(|&o| end(o, 1))
            .chain([end(common[2], 4)])
            .chain(comms.iter().map(|&o| end(o, Comm::MAX)))
            .chain(ints.iter().map(|&o| end(o, 4)))
            .chain(other.map(|f| end(f.offset, f.size)))
        {
            len = len.max(e?);
        }
        Some(Quick {
            len,
            common,
            comms,
            ints,
        })
    }
}

/// The byte at `o` of a record known to be long enough.
#[inline(always)]
fn byte_at(d: &[u8], o: usize) -> u8 {
    d.get(o).copied().unwrap_or(0)
}

/// The little-endian 4-byte number at `o` of a record known to be long enough.
#[inline(always)]
fn i32_at(d: &[u8], o: usize) -> i32 {
    d.get(o..)
        .and_then(<[u8]>::first_chunk::<4>)
        .map_or(0, |b| i32::from_le_bytes(*b))
}

/// The comm at `o` of a record known to be long enough.
#[inline(always)]
fn comm_at(d: &[u8], o: usize) -> Comm {
    Comm::from_bytes(d.get(o..o.saturating_add(Comm::MAX)).unwrap_or_default())
}

fn fields<const N: usize>(f: &EventFormat, names: [&str; N]) -> Option<[Field; N]> {
    let mut v = Vec::with_capacity(N);
    for n in names {
        v.push(f.field(n)?.clone());
    }
    v.try_into().ok()
}

fn plan_for(f: &EventFormat, long_size: usize) -> Plan {
    if *f.system == *crate::ctf::DAT_SYSTEM {
        return lttng_plan(f);
    }
    let one = |n: &str| f.field(n).cloned();
    let planned = match (&*f.system, &*f.name) {
        (_, "sched_switch") => fields(
            f,
            [
                "prev_comm",
                "prev_pid",
                "prev_prio",
                "prev_state",
                "next_comm",
                "next_pid",
                "next_prio",
            ],
        )
        .map(|fs| {
            // The letters of a state as this trace's own format prints them; kernels
            // since 4.14 number them as TaskState does.
            let table = StateTable::of(f, long_size).filter(|t| !t.is_identity());
            Plan::Switch(fs, table.map(Box::new))
        }),
        (_, "sched_waking") => wake(f, WakeKind::Waking),
        (_, "sched_wakeup") => wake(f, WakeKind::Wakeup),
        (_, "sched_wakeup_new") => wake(f, WakeKind::WakeupNew),
        (_, "sched_migrate_task") => {
            fields(f, ["comm", "pid", "prio", "orig_cpu", "dest_cpu"]).map(Plan::Migrate)
        }
        (_, "sched_process_fork") => {
            fields(f, ["parent_comm", "parent_pid", "child_comm", "child_pid"]).map(Plan::Fork)
        }
        (_, "sched_process_exec") => fields(f, ["filename", "pid", "old_pid"]).map(Plan::Exec),
        (_, "sched_process_exit") => fields(f, ["comm", "pid", "prio"]).map(Plan::Exit),
        (_, "irq_handler_entry") => fields(f, ["irq", "name"]).map(Plan::IrqEntry),
        (_, "irq_handler_exit") => fields(f, ["irq", "ret"]).map(Plan::IrqExit),
        (_, "softirq_raise") => one("vec").map(|v| Plan::Softirq(SoftKind::Raise, v)),
        (_, "softirq_entry") => one("vec").map(|v| Plan::Softirq(SoftKind::Entry, v)),
        (_, "softirq_exit") => one("vec").map(|v| Plan::Softirq(SoftKind::Exit, v)),
        (_, "hrtimer_expire_entry") => {
            fields(f, ["hrtimer", "now", "function"]).map(Plan::HrtimerEntry)
        }
        (_, "hrtimer_expire_exit") => one("hrtimer").map(Plan::HrtimerExit),
        (_, "ipi_send_cpu") => fields(f, ["cpu", "callsite", "callback"]).map(Plan::Ipi),
        (_, "workqueue_execute_start") => fields(f, ["work", "function"]).map(Plan::WorkStart),
        (_, "workqueue_execute_end") => one("work").map(|w| Plan::WorkEnd(w, one("function"))),
        ("ftrace", "print") => one("buf").map(|b| Plan::Print(one("ip"), b)),
        ("ftrace", "bputs") => one("str").map(|s| Plan::Bputs(one("ip"), s)),
        ("ftrace", "bprint") => {
            fields(f, ["fmt", "buf"]).map(|[fm, b]| Plan::Bprint(one("ip"), fm, b))
        }
        ("ftrace", "funcgraph_entry") => fields(f, ["func", "depth"]).map(Plan::FuncEntry),
        ("ftrace", "funcgraph_exit") => fields(f, ["func", "depth"])
            .map(|[fu, d]| Plan::FuncExit(fu, d, fields(f, ["calltime", "rettime"]))),
        _ => None,
    };
    planned.unwrap_or_else(|| Plan::Other(f.fields.clone()))
}

/// The plan of an event of a converted LTTng trace: the CTF reader's, over the format's
/// fields (a string is `__data_loc char[]`, a comm `char[N]`).
fn lttng_plan(f: &EventFormat) -> Plan {
    let look = |name: &str| {
        let (i, x) = f
            .fields
            .iter()
            .enumerate()
            .find(|(_, x)| *x.name == *name)?;
        let holds = if x.is_string() {
            lttng::Holds::Text
        } else if x.kind == FieldKind::Scalar {
            lttng::Holds::Int
        } else {
            lttng::Holds::Other
        };
        Some((i, holds))
    };
    match lttng::plan_by(&f.name, &look) {
        lttng::Plan::Other => Plan::Other(f.fields.clone()),
        p => Plan::Lttng(p, f.fields.clone()),
    }
}

/// A record's fields by index, for [`lttng::kind`].
struct RecordValues<'a> {
    fields: &'a [Field],
    endian: Endian,
    data: &'a [u8],
}

impl lttng::Values for RecordValues<'_> {
    fn int(&self, i: usize) -> i64 {
        self.fields
            .get(i)
            .and_then(|f| f.int(self.endian, self.data))
            .unwrap_or(0)
    }
    fn text(&self, i: usize) -> &[u8] {
        let raw = self
            .fields
            .get(i)
            .and_then(|f| f.bytes(self.endian, self.data))
            .unwrap_or(&[]);
        match raw.iter().position(|&b| b == 0) {
            Some(n) => &raw[..n],
            None => raw,
        }
    }
}

fn wake(f: &EventFormat, kind: WakeKind) -> Option<Plan> {
    fields(f, ["comm", "pid", "prio", "target_cpu"]).map(|v| Plan::Wake(kind, v))
}

/// Decodes raw records of one trace into [`Event`]s.
pub struct Decoder {
    formats: Arc<Formats>,
    /// Per event id, planned on first sight.
    plans: Vec<Slot>,
    ctx: Ctx,
}

enum Slot {
    Todo,
    Ready(Box<Entry>),
    Missing(String),
}

/// The decoder's lookups and caches, apart from the plans so both can be borrowed at once.
struct Ctx {
    endian: Endian,
    long_size: usize,
    kallsyms: Option<LazyKallsyms>,
    printk: Option<Arc<PrintkFormats>>,
    syms: HashMap<(u64, bool), Option<Text>>,
    strings: HashMap<Box<[u8]>, Text>,
    /// How a converted LTTng trace's fields read (its tracer's and kernel's versions).
    lttng: lttng::Flavor,
}

/// Interned strings kept at most (IRQ names, file names, string fields of other events).
const MAX_INTERNED: usize = 1 << 16;

impl Decoder {
    /// A decoder for records of `formats`, with `long_size`-byte kernel longs. Each event
    /// is planned (its fields looked up by name) the first time a record of it is decoded.
    pub fn new(endian: Endian, long_size: usize, formats: Arc<Formats>) -> Decoder {
        let max = formats.ids().map(usize::from).max().unwrap_or(0);
        Decoder {
            formats,
            plans: (0..=max).map(|_| Slot::Todo).collect(),
            ctx: Ctx {
                endian,
                long_size,
                kallsyms: None,
                printk: None,
                syms: HashMap::new(),
                strings: HashMap::new(),
                lttng: lttng::Flavor::of_env(&[]),
            },
        }
    }
}

/// The plan of event `id`, made on first use. Inlined where records are decoded: as a
/// call it was 30 instructions a record (85 M of an `analyze`'s 4,348 M).
#[inline(always)]
fn plan<'p>(
    formats: &Formats,
    plans: &'p mut [Slot],
    id: u16,
    long_size: usize,
    endian: Endian,
) -> Result<&'p Entry, String> {
    let slot = plans
        .get_mut(usize::from(id))
        .ok_or_else(|| format!("event id {id} has no format in this trace"))?;
    if let Slot::Todo = slot {
        *slot = make_plan(formats, id, long_size, endian);
    }
    match slot {
        Slot::Ready(e) => Ok(e),
        Slot::Missing(m) => Err(m.clone()),
        Slot::Todo => Err(format!("event id {id} has no format in this trace")),
    }
}

/// The plan of event `id`, or why there is none.
#[cold]
fn make_plan(formats: &Formats, id: u16, long_size: usize, endian: Endian) -> Slot {
    match (formats.get(id), formats.error(id)) {
        (Some(f), _) => {
            let common = Common {
                flags: f.field("common_flags").cloned(),
                preempt: f.field("common_preempt_count").cloned(),
                pid: f.field("common_pid").cloned(),
            };
            let plan = plan_for(f, long_size);
            let quick = Quick::of(endian, &common, &plan);
            Slot::Ready(Box::new(Entry {
                // A converted LTTng trace's events are named as the CTF reader names
                // them, without a system.
                name: if *f.system == *crate::ctf::DAT_SYSTEM {
                    f.name.clone()
                } else {
                    Text::from(format!("{}:{}", f.system, f.name))
                },
                common,
                plan,
                quick,
            }))
        }
        (None, Some(e)) => {
            Slot::Missing(format!("the format of event id {id} does not parse: {e}"))
        }
        (None, None) => Slot::Missing(format!("event id {id} has no format in this trace")),
    }
}

impl Decoder {
    /// Resolve code addresses with `kallsyms`.
    pub fn with_kallsyms(mut self, kallsyms: Arc<Kallsyms>) -> Decoder {
        self.ctx.kallsyms = Some(LazyKallsyms::ready(kallsyms));
        self
    }

    /// Resolve code addresses with `kallsyms`, parsed when first needed.
    pub fn with_lazy_kallsyms(mut self, kallsyms: LazyKallsyms) -> Decoder {
        self.ctx.kallsyms = Some(kallsyms);
        self
    }

    /// Look up trace_printk formats (`bputs`, `bprint`) in `printk`.
    pub fn with_printk(mut self, printk: Arc<PrintkFormats>) -> Decoder {
        self.ctx.printk = Some(printk);
        self
    }

    /// Read the events of a converted LTTng trace (system [`crate::ctf::DAT_SYSTEM`]) as
    /// the tracer and kernel its metadata's `env` block names recorded them (without it:
    /// a current lttng-modules on a kernel since 4.14).
    pub fn with_lttng_env(mut self, env: &[(String, crate::ctf::EnvValue)]) -> Decoder {
        self.ctx.lttng = lttng::Flavor::of_env(env);
        self
    }

    /// The formats this decoder reads.
    pub fn formats(&self) -> &Formats {
        &self.formats
    }

    /// The `common_pid` of a record, without decoding the rest.
    pub fn pid(&mut self, data: &[u8]) -> Option<i32> {
        let id = self.ctx.endian.u16(data, 0)?;
        let Decoder {
            formats,
            plans,
            ctx,
        } = self;
        let entry = plan(formats, plans, id, ctx.long_size, ctx.endian).ok()?;
        Some(entry.common.pid.as_ref()?.int(ctx.endian, data)? as i32)
    }

    /// Decode one record recorded on `cpu` at `ts`. The error says what was wrong with the
    /// record (an unknown event id, a field outside the record).
    pub fn decode(&mut self, cpu: u32, ts: u64, data: &[u8]) -> Result<Event, String> {
        self.decode_with(cpu, ts, data, |ev| ev)
    }

    /// [`Decoder::decode`] pushed onto `out`. The event is built where it goes: returned
    /// by value and then moved, it was read back in other widths than it was written,
    /// which stalled the reader.
    pub fn decode_into(
        &mut self,
        cpu: u32,
        ts: u64,
        data: &[u8],
        out: &mut Vec<Event>,
    ) -> Result<(), String> {
        self.decode_with(cpu, ts, data, |ev| out.push(ev))
    }

    /// The event of the record, handed to `emit` as it is built.
    #[inline(always)]
    fn decode_with<R>(
        &mut self,
        cpu: u32,
        ts: u64,
        data: &[u8],
        emit: impl FnOnce(Event) -> R,
    ) -> Result<R, String> {
        let e = self.ctx.endian;
        let id = e
            .u16(data, 0)
            .ok_or_else(|| format!("expected an event id in a {}-byte record", data.len()))?;
        let Decoder {
            formats,
            plans,
            ctx,
        } = self;
        let entry = plan(formats, plans, id, ctx.long_size, ctx.endian)?;
        if let Some(q) = &entry.quick {
            if data.len() >= q.len {
                if let Some(kind) = quick_kind(q, &entry.plan, e, data) {
                    let [flags, preempt, pid] = q.common;
                    return Ok(emit(Event {
                        ts,
                        cpu,
                        pid: i32_at(data, pid),
                        flags: Flags(byte_at(data, flags)),
                        preempt_count: byte_at(data, preempt),
                        kind,
                    }));
                }
            }
        }
        let c = &entry.common;
        let small = |f: &Option<Field>| f.as_ref().and_then(|f| f.uint(e, data)).unwrap_or(0) as u8;
        let flags = Flags(small(&c.flags));
        let preempt_count = small(&c.preempt);
        let pid = match &c.pid {
            Some(f) => f
                .int(e, data)
                .ok_or("expected common_pid within the record")? as i32,
            None => 0,
        };
        let kind = ctx.kind(&entry.plan, data, &entry.name).ok_or_else(|| {
            format!(
                "a field of {} lies outside the {}-byte record",
                entry.name,
                data.len()
            )
        })?;
        Ok(emit(Event {
            ts,
            cpu,
            pid,
            flags,
            preempt_count,
            kind,
        }))
    }
}

/// The kind of a record [`Quick`] reads, at its offsets (the record is at least
/// `q.len` bytes); `None` for another plan.
#[inline(always)]
fn quick_kind(q: &Quick, plan: &Plan, e: Endian, d: &[u8]) -> Option<EventKind> {
    let [a, b, c, x] = q.ints;
    Some(match plan {
        Plan::Switch([.., ps, _, _, _], table) => EventKind::SchedSwitch {
            prev_comm: comm_at(d, q.comms[0]),
            prev_pid: i32_at(d, a),
            prev_prio: i32_at(d, b),
            // The state's size is the kernel's long; read as the general path does.
            prev_state: prev_state(ps, table.as_deref(), e, d)?,
            next_comm: comm_at(d, q.comms[1]),
            next_pid: i32_at(d, c),
            next_prio: i32_at(d, x),
        },
        Plan::Wake(kind, _) => kind.event(Wakeup {
            comm: comm_at(d, q.comms[0]),
            pid: i32_at(d, a),
            prio: i32_at(d, b),
            target_cpu: i32_at(d, c) as u32,
        }),
        _ => return None,
    })
}

impl Ctx {
    fn kind(&mut self, plan: &Plan, d: &[u8], name: &Text) -> Option<EventKind> {
        let e = self.endian;
        let i32f = |f: &Field| f.int(e, d).map(|v| v as i32);
        let u32f = |f: &Field| f.uint(e, d).map(|v| v as u32);
        let u64f = |f: &Field| f.uint(e, d);
        let comm = |f: &Field| f.bytes(e, d).map(Comm::from_bytes);
        Some(match plan {
            Plan::Switch([pc, pp, ppr, ps, nc, np, npr], table) => EventKind::SchedSwitch {
                prev_comm: comm(pc)?,
                prev_pid: i32f(pp)?,
                prev_prio: i32f(ppr)?,
                prev_state: prev_state(ps, table.as_deref(), e, d)?,
                next_comm: comm(nc)?,
                next_pid: i32f(np)?,
                next_prio: i32f(npr)?,
            },
            Plan::Wake(kind, [c, p, pr, t]) => kind.event(Wakeup {
                comm: comm(c)?,
                pid: i32f(p)?,
                prio: i32f(pr)?,
                target_cpu: u32f(t)?,
            }),
            Plan::Migrate([c, p, pr, o, dst]) => EventKind::SchedMigrateTask {
                comm: comm(c)?,
                pid: i32f(p)?,
                prio: i32f(pr)?,
                orig_cpu: u32f(o)?,
                dest_cpu: u32f(dst)?,
            },
            Plan::Fork([pc, pp, cc, cp]) => EventKind::SchedProcessFork {
                parent_comm: comm(pc)?,
                parent_pid: i32f(pp)?,
                child_comm: comm(cc)?,
                child_pid: i32f(cp)?,
            },
            Plan::Exec([f, p, o]) => EventKind::SchedProcessExec {
                filename: self.text(f, d)?,
                pid: i32f(p)?,
                old_pid: i32f(o)?,
            },
            Plan::Exit([c, p, pr]) => EventKind::SchedProcessExit {
                comm: comm(c)?,
                pid: i32f(p)?,
                prio: i32f(pr)?,
            },
            Plan::IrqEntry([irq, n]) => EventKind::IrqHandlerEntry {
                irq: u32f(irq)?,
                name: self.text(n, d)?,
            },
            Plan::IrqExit([irq, ret]) => EventKind::IrqHandlerExit {
                irq: u32f(irq)?,
                ret: i32f(ret)?,
            },
            Plan::Softirq(k, v) => {
                let vec = u32f(v)?;
                match k {
                    SoftKind::Raise => EventKind::SoftirqRaise { vec },
                    SoftKind::Entry => EventKind::SoftirqEntry { vec },
                    SoftKind::Exit => EventKind::SoftirqExit { vec },
                }
            }
            Plan::HrtimerEntry([h, now, f]) => EventKind::HrtimerExpireEntry {
                hrtimer: u64f(h)?,
                now: now.int(e, d)? as u64,
                function: self.sym(u64f(f)?, false),
            },
            Plan::HrtimerExit(h) => EventKind::HrtimerExpireExit { hrtimer: u64f(h)? },
            Plan::Ipi([cpu, site, cb]) => EventKind::IpiSendCpu {
                cpu: u32f(cpu)?,
                callsite: self.sym(u64f(site)?, true),
                callback: self.sym(u64f(cb)?, true),
            },
            Plan::WorkStart([w, f]) => EventKind::WorkqueueExecuteStart {
                work: u64f(w)?,
                function: self.sym(u64f(f)?, false),
            },
            Plan::WorkEnd(w, f) => EventKind::WorkqueueExecuteEnd {
                work: u64f(w)?,
                function: match f {
                    Some(f) => self.sym(u64f(f)?, false),
                    None => Sym::default(),
                },
            },
            Plan::Print(ip, buf) => EventKind::Print {
                ip: ip.as_ref().and_then(u64f).unwrap_or(0),
                text: Text::from(trim_nl(&buf.str(e, d)?)),
            },
            Plan::Bputs(ip, s) => {
                let addr = u64f(s)?;
                let text = match self.printk.as_ref().and_then(|p| p.get(addr)) {
                    Some(t) => Text::from(trim_nl(&t)),
                    None => Text::from(format!("(unknown trace_printk string {addr:#x})")),
                };
                EventKind::Print {
                    ip: ip.as_ref().and_then(u64f).unwrap_or(0),
                    text,
                }
            }
            Plan::Bprint(ip, fmt, buf) => {
                let addr = u64f(fmt)?;
                let args = buf.bytes(e, d)?;
                let printk = self.printk.clone();
                let text = match printk.as_deref().and_then(|p| p.get(addr)) {
                    Some(f) => {
                        let ks = self.kallsyms.clone();
                        let sym = move |a: u64, off: bool| {
                            let (n, o) = ks.as_ref()?.get().lookup(a)?;
                            Some(if off && o != 0 {
                                format!("{n}+{o:#x}")
                            } else {
                                n.to_string()
                            })
                        };
                        printf::format(&f, args, e, self.long_size, &sym)
                    }
                    None => format!("(unknown trace_printk format {addr:#x})"),
                };
                EventKind::Print {
                    ip: ip.as_ref().and_then(u64f).unwrap_or(0),
                    text: Text::from(trim_nl(&text)),
                }
            }
            Plan::FuncEntry([f, depth]) => EventKind::FuncEntry {
                func: self.sym(u64f(f)?, false),
                depth: u32f(depth)?,
            },
            Plan::FuncExit(f, depth, times) => EventKind::FuncReturn {
                func: self.sym(u64f(f)?, false),
                depth: u32f(depth)?,
                duration: match times {
                    Some([c, r]) => Some(u64f(r)?.saturating_sub(u64f(c)?)),
                    None => None,
                },
            },
            Plan::Lttng(p, fields) => {
                let values = RecordValues {
                    fields,
                    endian: e,
                    data: d,
                };
                let strings = &mut self.strings;
                lttng::kind(p, &values, &self.lttng, &mut |b| intern(strings, b))?
            }
            Plan::Other(fs) => {
                let mut out = Vec::with_capacity(fs.len());
                for f in fs {
                    let v = if f.is_string() {
                        Value::Str(self.text(f, d)?)
                    } else {
                        f.value(e, d)?
                    };
                    out.push((f.name.clone(), v));
                }
                EventKind::Other {
                    name: name.clone(),
                    fields: out,
                }
            }
        })
    }

    /// A text field, interned.
    fn text(&mut self, f: &Field, d: &[u8]) -> Option<Text> {
        let raw = f.bytes(self.endian, d)?;
        let raw = match raw.iter().position(|&b| b == 0) {
            Some(n) => &raw[..n],
            None => raw,
        };
        if let Some(t) = self.strings.get(raw) {
            return Some(t.clone());
        }
        let t = Text::from(String::from_utf8_lossy(raw));
        if self.strings.len() < MAX_INTERNED && f.kind != FieldKind::Tail {
            self.strings.insert(raw.into(), t.clone());
        }
        Some(t)
    }

    /// A code address with its symbol: `name` (and `+0xOFF` inside a function when
    /// `with_offset`, as `%pS` prints it).
    fn sym(&mut self, addr: u64, with_offset: bool) -> Sym {
        if addr == 0 {
            return Sym::default();
        }
        let Some(ks) = &self.kallsyms else {
            return Sym { addr, name: None };
        };
        let ks = ks.get();
        let name = self
            .syms
            .entry((addr, with_offset))
            .or_insert_with(|| {
                let (n, off) = ks.lookup(addr)?;
                Some(if with_offset && off != 0 {
                    Text::from(format!("{n}+{off:#x}"))
                } else {
                    Text::from(n)
                })
            })
            .clone();
        Sym { addr, name }
    }
}

/// `b` as text, interned while there is room.
fn intern(strings: &mut HashMap<Box<[u8]>, Text>, b: &[u8]) -> Text {
    if let Some(t) = strings.get(b) {
        return t.clone();
    }
    let t = Text::from(String::from_utf8_lossy(b));
    if strings.len() < MAX_INTERNED {
        strings.insert(b.into(), t.clone());
    }
    t
}

fn trim_nl(s: &str) -> &str {
    s.strip_suffix('\n').unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sched_switch of a 4.1 kernel (fifo-multicore.dat of the external traces): its own
    /// numbering of the states, `+` at 4096.
    const OLD_SWITCH: &str = "name: sched_switch\nID: 94\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:1;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
\tfield:long prev_state;\toffset:32;\tsize:4;\tsigned:1;\n\
\tfield:char next_comm[16];\toffset:36;\tsize:16;\tsigned:1;\n\
\tfield:pid_t next_pid;\toffset:52;\tsize:4;\tsigned:1;\n\
\tfield:int next_prio;\toffset:56;\tsize:4;\tsigned:1;\n\n\
print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, REC->prev_state & (4096-1) ? __print_flags(REC->prev_state & (4096-1), \"|\", { 1, \"S\"} , { 2, \"D\" }, { 4, \"T\" }, { 8, \"t\" }, { 16, \"Z\" }, { 32, \"X\" }, { 64, \"x\" }, { 128, \"K\" }, { 256, \"W\" }, { 512, \"P\" }, { 1024, \"N\" }) : \"R\", REC->prev_state & 4096 ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio\n";

    const OLD_WAKEUP: &str = "name: sched_wakeup\nID: 96\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:1;\n\
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\
\tfield:int success;\toffset:32;\tsize:4;\tsigned:1;\n\
\tfield:int target_cpu;\toffset:36;\tsize:4;\tsigned:1;\n\n\
print fmt: \"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu\n";

    /// The fields a typed event does not keep are still there for `report --json`.
    #[test]
    fn fields_beyond_the_typed_variant_are_found() {
        let mut formats = Formats::new();
        formats.add_text("sched", OLD_WAKEUP).unwrap();
        formats.add_text("sched", OLD_SWITCH).unwrap();
        let formats = Arc::new(formats);
        let mut p = crate::printfmt::Printer::new(Endian::Little, 4, formats.clone());
        let mut rec = vec![0u8; 40];
        rec[..2].copy_from_slice(&96u16.to_le_bytes());
        rec[8..17].copy_from_slice(b"rcu_sched");
        rec[32..36].copy_from_slice(&1i32.to_le_bytes());
        let untyped = p.untyped_fields(&rec);
        assert_eq!(untyped, [(Text::from("success"), Value::Int(1))]);
        let mut d = Decoder::new(Endian::Little, 4, formats);
        let ev = d.decode(0, 0, &rec).unwrap();
        let json = serde_json::to_string(&crate::EventJson {
            event: &ev,
            buffer: Some("inst"),
            untyped: &untyped,
        })
        .unwrap();
        assert_eq!(
            json,
            r#"{"ts":0,"cpu":0,"pid":0,"flags":0,"preempt_count":0,"buffer":"inst","event":"sched_wakeup","comm":"rcu_sched","pid_":0,"prio":0,"target_cpu":0,"success":1}"#
        );
        // sched_switch keeps all its fields.
        let mut rec = vec![0u8; 60];
        rec[..2].copy_from_slice(&94u16.to_le_bytes());
        assert!(p.untyped_fields(&rec).is_empty());
    }

    /// A sched_switch or wake-up read at its fixed offsets ([`Quick`]) is what the
    /// general path reads field by field; a record too short for its fields gets the
    /// general path's error.
    #[test]
    fn fixed_offsets_read_what_the_fields_read() {
        let mut formats = Formats::new();
        formats.add_text("sched", OLD_WAKEUP).unwrap();
        formats.add_text("sched", OLD_SWITCH).unwrap();
        let mut d = Decoder::new(Endian::Little, 4, Arc::new(formats));
        let mut switch = vec![0u8; 60];
        switch[..2].copy_from_slice(&94u16.to_le_bytes());
        switch[2] = 0x0d;
        switch[3] = 0x21;
        switch[4..8].copy_from_slice(&(-3i32).to_le_bytes());
        switch[8..24].copy_from_slice(b"sixteen-byte-com");
        switch[24..28].copy_from_slice(&4321i32.to_le_bytes());
        switch[28..32].copy_from_slice(&(-51i32).to_le_bytes());
        switch[32..36].copy_from_slice(&130u32.to_le_bytes());
        switch[36..44].copy_from_slice("k\u{e9}rn\u{e9}l".as_bytes());
        switch[52..56].copy_from_slice(&i32::MAX.to_le_bytes());
        switch[56..60].copy_from_slice(&139i32.to_le_bytes());
        let mut wake = vec![0u8; 40];
        wake[..2].copy_from_slice(&96u16.to_le_bytes());
        wake[4..8].copy_from_slice(&77i32.to_le_bytes());
        wake[8..17].copy_from_slice(b"rcu_sched");
        wake[24..28].copy_from_slice(&16i32.to_le_bytes());
        wake[28..32].copy_from_slice(&98i32.to_le_bytes());
        wake[36..40].copy_from_slice(&3i32.to_le_bytes());
        for (id, rec) in [(94u16, &switch), (96, &wake)] {
            let ev = d.decode(1, 9, rec).unwrap();
            let Decoder {
                formats,
                plans,
                ctx,
            } = &mut d;
            let entry = plan(formats, plans, id, 4, Endian::Little).unwrap();
            assert!(entry.quick.is_some(), "{id}");
            let kind = ctx.kind(&entry.plan, rec, &entry.name).unwrap();
            assert_eq!(ev.kind, kind);
            let c = &entry.common;
            let int = |f: &Option<Field>| f.as_ref().and_then(|f| f.int(Endian::Little, rec));
            assert_eq!(Some(i64::from(ev.pid)), int(&c.pid));
            assert_eq!(Some(i64::from(ev.flags.0)), int(&c.flags));
            assert_eq!(Some(i64::from(ev.preempt_count)), int(&c.preempt));
            let err = d.decode(1, 9, &rec[..rec.len() - 1]).unwrap_err();
            assert!(err.contains("lies outside the"), "{err}");
        }
    }

    #[test]
    fn prev_state_is_read_through_the_traces_own_table() {
        let mut formats = Formats::new();
        formats.add_text("sched", OLD_SWITCH).unwrap();
        let mut d = Decoder::new(Endian::Little, 4, Arc::new(formats));
        let mut rec = vec![0u8; 60];
        rec[..2].copy_from_slice(&94u16.to_le_bytes());
        for (raw, want) in [
            (4096, "R+"),
            (0, "R"),
            (130, "D|K"),
            (64, "x"),
            (16, "Z"),
            (32, "X"),
            // Parked and no-load are sleeps: read as raw bits, 512 and 1024 would have
            // been runnable (no bit under 0x100), i.e. preempted.
            (512, "P"),
            (1026, "D|N"),
        ] {
            rec[32..36].copy_from_slice(&(raw as u32).to_le_bytes());
            let ev = d.decode(0, 0, &rec).unwrap();
            let EventKind::SchedSwitch { prev_state, .. } = ev.kind else {
                panic!("{ev:?}");
            };
            assert_eq!(prev_state.to_string(), want, "{raw}");
            assert_eq!(prev_state.is_runnable(), want.starts_with('R'), "{raw}");
        }
    }
}

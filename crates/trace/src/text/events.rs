//! Event bodies as the kernel and trace-cmd print them (`prev_comm=bash prev_pid=1 ...`,
//! `bash:11382 [120] S ==> bash:11384 [120]`, `vec=4 [action=BLOCK]`, ...), and the
//! interner for repeated names.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;
use std::sync::Arc;

use super::syntax::{is_key_values, Fields};
use crate::{Comm, EventKind, Sym, TaskState, Text, Value, Wakeup};

/// Strings longer than this are not interned (marker texts and the like are rarely repeated).
const INTERN_MAX_LEN: usize = 96;
/// Interned strings kept at most; later ones are allocated each time.
const INTERN_MAX_COUNT: usize = 16 * 1024;

/// Interned names and the per-trace state of body parsing.
#[derive(Default)]
pub(crate) struct Ctx {
    strings: HashSet<Text>,
    names: HashMap<Box<str>, Text>,
    /// trace-cmd's pretty `sched_switch` state letters use libtraceevent's newer table
    /// (`SDTtXZPI`) rather than the old one (`SDTtZXxW`); set once a `P` or `I` is seen.
    new_state_table: bool,
}

impl Ctx {
    /// `s` as shared text, interned when short.
    pub(crate) fn text(&mut self, s: &str) -> Text {
        if let Some(t) = self.strings.get(s) {
            return t.clone();
        }
        let t: Text = Arc::from(s);
        if s.len() <= INTERN_MAX_LEN && self.strings.len() < INTERN_MAX_COUNT {
            self.strings.insert(t.clone());
        }
        t
    }

    /// The `system:name` of an event the text names only by `name`; the bare name when the
    /// system is not one of the well-known ones.
    fn event_name(&mut self, name: &str) -> Text {
        if let Some(t) = self.names.get(name) {
            return t.clone();
        }
        let full: Text = match system_of(name) {
            Some(sys) => Arc::from(format!("{sys}:{name}")),
            None => Arc::from(name),
        };
        if self.names.len() < INTERN_MAX_COUNT {
            self.names.insert(name.into(), full.clone());
        }
        full
    }

    /// A symbol as printed: `func`, `func+0x55/0xa0` (kernel `%pS`), `func+0x55` or
    /// `func/0x0` (trace-cmd), `0xffffffff81000000` (unresolved). The `/size` suffix is
    /// dropped so that both printers give the same [`Sym`].
    pub(crate) fn sym(&mut self, s: &str) -> Sym {
        let s = strip_size(s.trim());
        if let Some(hex) = s.strip_prefix("0x") {
            if let Ok(addr) = u64::from_str_radix(hex, 16) {
                return Sym { addr, name: None };
            }
        }
        Sym {
            addr: 0,
            name: Some(self.text(s)),
        }
    }
}

/// `func+0x55/0xa0` -> `func+0x55`; `func/0x0` -> `func`.
fn strip_size(s: &str) -> &str {
    match s.rsplit_once('/') {
        Some((head, size))
            if !head.is_empty()
                && size.len() > 2
                && size.starts_with("0x")
                && size[2..].bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            head
        }
        _ => s,
    }
}

/// The subsystem of well-known events, by name prefix.
pub(crate) fn system_of(name: &str) -> Option<&'static str> {
    const EXACT: &[(&str, &str)] = &[
        ("sys_enter", "raw_syscalls"),
        ("sys_exit", "raw_syscalls"),
        ("function", "ftrace"),
        ("print", "ftrace"),
        ("bprint", "ftrace"),
        ("bputs", "ftrace"),
        ("tracing_mark_write", "ftrace"),
        ("kernel_stack", "ftrace"),
        ("user_stack", "ftrace"),
        ("funcgraph_entry", "ftrace"),
        ("funcgraph_exit", "ftrace"),
        ("tick_stop", "timer"),
        ("task_newtask", "task"),
        ("task_rename", "task"),
        ("kmalloc", "kmem"),
        ("kfree", "kmem"),
        ("kmem_cache_alloc", "kmem"),
        ("kmem_cache_free", "kmem"),
        ("local_timer_entry", "irq_vectors"),
        ("local_timer_exit", "irq_vectors"),
    ];
    const PREFIX: &[(&str, &str)] = &[
        ("sched_", "sched"),
        ("irq_handler_", "irq"),
        ("softirq_", "irq"),
        ("tasklet_", "irq"),
        ("hrtimer_", "timer"),
        ("timer_", "timer"),
        ("itimer_", "timer"),
        ("ipi_", "ipi"),
        ("workqueue_", "workqueue"),
        ("sys_enter_", "syscalls"),
        ("sys_exit_", "syscalls"),
        ("cpu_idle", "power"),
        ("cpu_frequency", "power"),
        ("mm_page_", "kmem"),
        ("block_", "block"),
        ("rcu_", "rcu"),
        ("signal_", "signal"),
        ("csd_", "csd"),
        ("napi_", "napi"),
        ("net_dev_", "net"),
        ("netif_", "net"),
        ("reschedule_", "irq_vectors"),
        ("call_function_", "irq_vectors"),
    ];
    if let Some((_, sys)) = EXACT.iter().find(|(n, _)| *n == name) {
        return Some(sys);
    }
    PREFIX
        .iter()
        .find(|(p, _)| name.starts_with(p))
        .map(|(_, sys)| *sys)
}

/// The values of `keys` in `body` (first occurrence of each), in one pass.
fn pick<'a, const N: usize>(body: &'a str, keys: [&str; N]) -> [Option<&'a str>; N] {
    let mut out = [None; N];
    for (k, v) in Fields::new(body) {
        if let Some(i) = keys.iter().position(|x| *x == k) {
            out[i].get_or_insert(v);
        }
    }
    out
}

type Res<T> = std::result::Result<T, String>;

fn need<'a>(v: Option<&'a str>, event: &str, key: &str) -> Res<&'a str> {
    v.ok_or_else(|| format!("{event}: expected a `{key}=` field"))
}

fn num<T: FromStr>(v: &str, event: &str, key: &str) -> Res<T> {
    v.trim()
        .parse()
        .map_err(|_| format!("{event}: expected a number for `{key}`, found `{v}`"))
}

/// The leading decimal number of `4 [action=BLOCK]`.
fn lead_num<T: FromStr>(v: &str, event: &str, key: &str) -> Res<T> {
    let end = v.bytes().take_while(u8::is_ascii_digit).count();
    num(&v[..end], event, key)
}

fn hex(v: &str, event: &str, key: &str) -> Res<u64> {
    let h = v.strip_prefix("0x").unwrap_or(v);
    u64::from_str_radix(h, 16)
        .map_err(|_| format!("{event}: expected a hex value for `{key}`, found `{v}`"))
}

/// Decodes the body of event `name` (the text after `name: `).
pub(crate) fn parse_event(ctx: &mut Ctx, name: &str, body: &str) -> Res<EventKind> {
    let body = body.trim();
    Ok(match name {
        "sched_switch" => sched_switch(ctx, body)?,
        "sched_waking" => EventKind::SchedWaking(wakeup(name, body)?),
        "sched_wakeup" => EventKind::SchedWakeup(wakeup(name, body)?),
        "sched_wakeup_new" => EventKind::SchedWakeupNew(wakeup(name, body)?),
        "sched_migrate_task" => {
            let [c, p, pr, o, d] = pick(body, ["comm", "pid", "prio", "orig_cpu", "dest_cpu"]);
            EventKind::SchedMigrateTask {
                comm: Comm::new(need(c, name, "comm")?),
                pid: num(need(p, name, "pid")?, name, "pid")?,
                prio: num(need(pr, name, "prio")?, name, "prio")?,
                orig_cpu: num(need(o, name, "orig_cpu")?, name, "orig_cpu")?,
                dest_cpu: num(need(d, name, "dest_cpu")?, name, "dest_cpu")?,
            }
        }
        "sched_process_fork" => {
            let [c, p, cc, cp] = pick(body, ["comm", "pid", "child_comm", "child_pid"]);
            EventKind::SchedProcessFork {
                parent_comm: Comm::new(need(c, name, "comm")?),
                parent_pid: num(need(p, name, "pid")?, name, "pid")?,
                child_comm: Comm::new(need(cc, name, "child_comm")?),
                child_pid: num(need(cp, name, "child_pid")?, name, "child_pid")?,
            }
        }
        "sched_process_exec" => {
            let [f, p, o] = pick(body, ["filename", "pid", "old_pid"]);
            EventKind::SchedProcessExec {
                filename: ctx.text(need(f, name, "filename")?),
                pid: num(need(p, name, "pid")?, name, "pid")?,
                old_pid: num(need(o, name, "old_pid")?, name, "old_pid")?,
            }
        }
        "sched_process_exit" => {
            let [c, p, pr] = pick(body, ["comm", "pid", "prio"]);
            EventKind::SchedProcessExit {
                comm: Comm::new(need(c, name, "comm")?),
                pid: num(need(p, name, "pid")?, name, "pid")?,
                prio: num(need(pr, name, "prio")?, name, "prio")?,
            }
        }
        "irq_handler_entry" => {
            let [i, n] = pick(body, ["irq", "name"]);
            EventKind::IrqHandlerEntry {
                irq: num(need(i, name, "irq")?, name, "irq")?,
                name: ctx.text(need(n, name, "name")?),
            }
        }
        "irq_handler_exit" => {
            let [i, r] = pick(body, ["irq", "ret"]);
            EventKind::IrqHandlerExit {
                irq: num(need(i, name, "irq")?, name, "irq")?,
                ret: match need(r, name, "ret")? {
                    "handled" => 1,
                    "unhandled" => 0,
                    other => num(other, name, "ret")?,
                },
            }
        }
        "softirq_raise" | "softirq_entry" | "softirq_exit" => {
            let [v] = pick(body, ["vec"]);
            let vec = lead_num(need(v, name, "vec")?, name, "vec")?;
            match name {
                "softirq_raise" => EventKind::SoftirqRaise { vec },
                "softirq_entry" => EventKind::SoftirqEntry { vec },
                _ => EventKind::SoftirqExit { vec },
            }
        }
        "hrtimer_expire_entry" => {
            let [h, n, f] = pick(body, ["hrtimer", "now", "function"]);
            EventKind::HrtimerExpireEntry {
                hrtimer: hex(need(h, name, "hrtimer")?, name, "hrtimer")?,
                now: num(need(n, name, "now")?, name, "now")?,
                function: ctx.sym(need(f, name, "function")?),
            }
        }
        "hrtimer_expire_exit" => {
            let [h] = pick(body, ["hrtimer"]);
            EventKind::HrtimerExpireExit {
                hrtimer: hex(need(h, name, "hrtimer")?, name, "hrtimer")?,
            }
        }
        "ipi_send_cpu" => {
            let [c, s, b] = pick(body, ["cpu", "callsite", "callback"]);
            EventKind::IpiSendCpu {
                cpu: num(need(c, name, "cpu")?, name, "cpu")?,
                callsite: ctx.sym(need(s, name, "callsite")?),
                callback: ctx.sym(need(b, name, "callback")?),
            }
        }
        "workqueue_execute_start" | "workqueue_execute_end" => workqueue(ctx, name, body)?,
        "tracing_mark_write" => EventKind::Print {
            ip: 0,
            text: ctx.text(body),
        },
        "print" => {
            // trace-cmd: `print: tracing_mark_write: text` (or `0xffff...: text`).
            let (ip, text) = match body.split_once(": ") {
                Some((sym, text)) if !sym.contains(' ') => (ctx.sym(sym).addr, text),
                _ => (0, body),
            };
            EventKind::Print {
                ip,
                text: ctx.text(text),
            }
        }
        "function" if !is_key_values(body) => {
            // trace-cmd: `do_sys_open <-- do_syscall_64` (indented under ftrace_indent).
            let (ip, parent) = match body.split_once(" <-- ") {
                Some((ip, parent)) => (ip.trim(), Some(parent.trim())),
                None => (body, None),
            };
            if ip.is_empty() || ip.contains(' ') {
                return Err("function: expected `FUNCTION <-- PARENT`".into());
            }
            function(ctx, ip, parent)
        }
        _ => other(ctx, name, body),
    })
}

/// A function tracer record: fields `ip` and `parent_ip` as printed.
pub(crate) fn function(ctx: &mut Ctx, ip: &str, parent: Option<&str>) -> EventKind {
    let mut fields = vec![(ctx.text("ip"), Value::Str(ctx.text(ip)))];
    if let Some(p) = parent {
        fields.push((ctx.text("parent_ip"), Value::Str(ctx.text(p))));
    }
    EventKind::Other {
        name: ctx.text(super::FUNCTION),
        fields,
    }
}

/// True for the events [`parse_event`] decodes into typed kinds.
pub(crate) fn is_typed(name: &str) -> bool {
    matches!(
        name,
        "sched_switch"
            | "sched_waking"
            | "sched_wakeup"
            | "sched_wakeup_new"
            | "sched_migrate_task"
            | "sched_process_fork"
            | "sched_process_exec"
            | "sched_process_exit"
            | "irq_handler_entry"
            | "irq_handler_exit"
            | "softirq_raise"
            | "softirq_entry"
            | "softirq_exit"
            | "hrtimer_expire_entry"
            | "hrtimer_expire_exit"
            | "ipi_send_cpu"
            | "workqueue_execute_start"
            | "workqueue_execute_end"
            | "tracing_mark_write"
            | "print"
    )
}

/// Any other event: `key=value` fields as Int (decimal), Uint (`0x` hex) or Str; a body
/// that is not a `key=value` list is kept whole in a field named `text`.
pub(crate) fn other(ctx: &mut Ctx, name: &str, body: &str) -> EventKind {
    let name = ctx.event_name(name);
    other_fields(ctx, name, body)
}

/// [`other`] for an event whose text names its system (`perf script`'s
/// `sched:sched_stat_runtime`).
pub(crate) fn other_named(ctx: &mut Ctx, full_name: &str, body: &str) -> EventKind {
    let name = ctx.text(full_name);
    other_fields(ctx, name, body)
}

fn other_fields(ctx: &mut Ctx, name: Text, body: &str) -> EventKind {
    let mut fields = Vec::new();
    if is_key_values(body) {
        for (k, v) in Fields::new(body) {
            let value = value(ctx, v);
            fields.push((ctx.text(k), value));
        }
    } else if !body.is_empty() {
        fields.push((ctx.text("text"), Value::Str(ctx.text(body))));
    }
    EventKind::Other { name, fields }
}

/// A generic field value; a trailing unit in brackets (`5014167 [ns]`) is dropped from
/// numbers.
fn value(ctx: &mut Ctx, v: &str) -> Value {
    let n = match v.split_once(" [") {
        Some((n, unit)) if unit.ends_with(']') => n,
        _ => v,
    };
    if let Some(h) = n.strip_prefix("0x") {
        if let Ok(u) = u64::from_str_radix(h, 16) {
            return Value::Uint(u);
        }
    }
    let digits = n.strip_prefix('-').unwrap_or(n);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = n.parse::<i64>() {
            return Value::Int(i);
        }
        if let Ok(u) = n.parse::<u64>() {
            return Value::Uint(u);
        }
    }
    Value::Str(ctx.text(v))
}

/// sched_switch, in the kernel's `prev_comm=... ==> next_comm=...` form or trace-cmd's
/// `comm:pid [prio] STATE ==> comm:pid [prio]`.
fn sched_switch(ctx: &mut Ctx, body: &str) -> Res<EventKind> {
    const E: &str = "sched_switch";
    let (prev, next) = body
        .split_once(" ==> ")
        .ok_or_else(|| format!("{E}: expected `PREV ==> NEXT`"))?;
    if body.starts_with("prev_comm=") {
        let [pc, pp, ppr, ps] = pick(prev, ["prev_comm", "prev_pid", "prev_prio", "prev_state"]);
        let [nc, np, npr] = pick(next, ["next_comm", "next_pid", "next_prio"]);
        let state = need(ps, E, "prev_state")?;
        return Ok(EventKind::SchedSwitch {
            prev_comm: Comm::new(need(pc, E, "prev_comm")?),
            prev_pid: num(need(pp, E, "prev_pid")?, E, "prev_pid")?,
            prev_prio: num(need(ppr, E, "prev_prio")?, E, "prev_prio")?,
            prev_state: TaskState::from_letters(state)
                .ok_or_else(|| format!("{E}: expected a task state, found `{state}`"))?,
            next_comm: Comm::new(need(nc, E, "next_comm")?),
            next_pid: num(need(np, E, "next_pid")?, E, "next_pid")?,
            next_prio: num(need(npr, E, "next_prio")?, E, "next_prio")?,
        });
    }
    let (prev, state) = prev
        .rsplit_once(' ')
        .ok_or_else(|| format!("{E}: expected `COMM:PID [PRIO] STATE ==>`"))?;
    let (prev_comm, prev_pid, prev_prio) = pretty_task(E, prev)?;
    let (next_comm, next_pid, next_prio) = pretty_task(E, next)?;
    Ok(EventKind::SchedSwitch {
        prev_comm,
        prev_pid,
        prev_prio,
        prev_state: ctx.report_state(state)?,
        next_comm,
        next_pid,
        next_prio,
    })
}

impl Ctx {
    /// A state as trace-cmd's sched_switch plugin prints it. libtraceevent's table is
    /// `SDTtZXxW` per bit (so the kernel's `X` dead is printed `Z`, zombie `X`, parked `x`,
    /// idle `W`), and it has no `+`: a preempted task is printed `R` like a runnable one.
    /// Newer libtraceevent prints `SDTtXZPI`; its `P` or `I` switches the table.
    fn report_state(&mut self, s: &str) -> Res<TaskState> {
        match s {
            "R" => return Ok(TaskState(0)),
            "R+" => return Ok(TaskState(TaskState::PREEMPTED)),
            _ => {}
        }
        if s.contains(['P', 'I']) {
            self.new_state_table = true;
        }
        let mut bits = 0;
        for part in s.split('|') {
            bits |= match part {
                "S" => TaskState::INTERRUPTIBLE,
                "D" => TaskState::UNINTERRUPTIBLE,
                "T" => TaskState::STOPPED,
                "t" => TaskState::TRACED,
                "Z" if self.new_state_table => TaskState::ZOMBIE,
                "X" if self.new_state_table => TaskState::DEAD,
                "Z" => TaskState::DEAD,
                "X" => TaskState::ZOMBIE,
                "x" | "P" => TaskState::PARKED,
                "W" | "I" => TaskState::IDLE,
                _ => return Err(format!("sched_switch: expected a task state, found `{s}`")),
            };
        }
        Ok(TaskState(bits))
    }
}

/// `comm:pid [prio]` of trace-cmd's pretty sched events (the comm may hold `:`).
fn pretty_task(event: &str, s: &str) -> Res<(Comm, i32, i32)> {
    let bad = || format!("{event}: expected `COMM:PID [PRIO]`, found `{s}`");
    let (task, prio) = s.trim().rsplit_once(' ').ok_or_else(bad)?;
    let prio = prio
        .strip_prefix('[')
        .and_then(|p| p.strip_suffix(']'))
        .ok_or_else(bad)?;
    let (comm, pid) = task.rsplit_once(':').ok_or_else(bad)?;
    Ok((
        Comm::new(comm),
        num(pid, event, "pid")?,
        num(prio, event, "prio")?,
    ))
}

/// sched_waking / sched_wakeup / sched_wakeup_new: `comm=X pid=N prio=N target_cpu=NNN`
/// (kernel), or trace-cmd's `comm:pid [prio] [success=1] CPU:NNN`.
fn wakeup(event: &str, body: &str) -> Res<Wakeup> {
    if body.starts_with("comm=") {
        let [c, p, pr, t] = pick(body, ["comm", "pid", "prio", "target_cpu"]);
        return Ok(Wakeup {
            comm: Comm::new(need(c, event, "comm")?),
            pid: num(need(p, event, "pid")?, event, "pid")?,
            prio: num(need(pr, event, "prio")?, event, "prio")?,
            target_cpu: num(need(t, event, "target_cpu")?, event, "target_cpu")?,
        });
    }
    let (rest, cpu) = body
        .rsplit_once(" CPU:")
        .ok_or_else(|| format!("{event}: expected `COMM:PID [PRIO] CPU:NNN`"))?;
    let rest = match rest.rsplit_once(' ') {
        Some((r, s)) if s.starts_with("success=") => r,
        _ => rest,
    };
    let (comm, pid, prio) = pretty_task(event, rest)?;
    Ok(Wakeup {
        comm,
        pid,
        prio,
        target_cpu: num(cpu, event, "CPU")?,
    })
}

/// `work struct 0000000012345678: function vmstat_update` (kernel `%p`, or trace-cmd's
/// `0xffff...`); older kernels print no function on the end event.
fn workqueue(ctx: &mut Ctx, event: &str, body: &str) -> Res<EventKind> {
    let rest = body
        .strip_prefix("work struct ")
        .ok_or_else(|| format!("{event}: expected `work struct ADDR: function FUNC`"))?;
    let (work, function) = match rest.split_once(':') {
        Some((w, f)) => {
            let f = f.trim();
            let f = f.strip_prefix("function ").unwrap_or(f).trim();
            (w, if f.is_empty() { None } else { Some(f) })
        }
        None => (rest, None),
    };
    let work = hex(work.trim(), event, "work struct")?;
    let function = function.map(|f| ctx.sym(f)).unwrap_or_default();
    Ok(if event == "workqueue_execute_start" {
        EventKind::WorkqueueExecuteStart { work, function }
    } else {
        EventKind::WorkqueueExecuteEnd { work, function }
    })
}

//! function_graph lines after their prefix columns (`[MARK] DURATION |  INDENT CALL`), and the
//! per-CPU call stacks that pair each `}` with its `{`. Shared by the function_graph text
//! reader and by `trace-cmd report`'s `funcgraph_entry` / `funcgraph_exit` events.

use std::collections::HashMap;

use super::events::Ctx;
use super::lines::LineError;
use crate::{EventKind, Sym};

/// Deepest call stack kept per CPU (the kernel's own limit is far lower).
const MAX_DEPTH: usize = 512;

/// What a function_graph line says after its duration column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Content<'a> {
    /// `func() {`
    Entry(&'a str),
    /// `func();` with its duration in ns.
    Leaf(&'a str, Option<u64>),
    /// `}`, `} /* func */`, with its duration in ns.
    Return(Option<&'a str>, Option<u64>),
    /// `/* text */`: a trace_printk, a marker write or an event.
    Comment(&'a str),
}

/// A decoded function_graph line body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GraphLine<'a> {
    pub(crate) content: Content<'a>,
    /// The call depth the indentation shows, when it has the kernel's layout
    /// (`|` + two spaces + two per level).
    pub(crate) indent: Option<u32>,
}

/// Decodes `[MARK] N.NNN us |  INDENT CONTENT` (the duration may be blank).
pub(crate) fn parse_graph(s: &str) -> Result<GraphLine<'_>, String> {
    let bar = s
        .find('|')
        .ok_or("expected `DURATION |` before the function")?;
    let col = s[..bar].trim();
    let duration = if col.is_empty() {
        None
    } else {
        Some(
            parse_duration(col)
                .ok_or_else(|| format!("expected a duration `[+!#*@$] N.NNN us`, found `{col}`"))?,
        )
    };
    let after = &s[bar + 1..];
    let body = after.trim_start_matches(' ');
    let n = after.len() - body.len();
    let indent = (n >= 2 && n % 2 == 0).then(|| ((n - 2) / 2) as u32);
    let body = body.trim_end();
    let (code, comment) = split_comment(body)?;
    let content = match code {
        "" => Content::Comment(comment.ok_or("expected a function call or a comment")?),
        "}" => Content::Return(comment.and_then(tail_name), duration),
        c if c.ends_with('{') => Content::Entry(func_name(&c[..c.len() - 1])?),
        c if c.ends_with(';') => Content::Leaf(func_name(&c[..c.len() - 1])?, duration),
        _ => return Err("expected `FUNC() {`, `FUNC();`, `}` or `/* COMMENT */`".into()),
    };
    Ok(GraphLine { content, indent })
}

/// A function_graph duration: an optional overhead mark (`+` > 10 us, `!` > 100 us,
/// `#` > 1 ms, `*` > 10 ms, `@` > 100 ms, `$` > 1 s), then microseconds with up to three
/// decimals (the kernel prints at most 7 digits: `12.345`, `28117.53`, `3594274`), in ns.
pub(crate) fn parse_duration(col: &str) -> Option<u64> {
    let mut s = col;
    if let Some(rest) = s.strip_prefix(['+', '!', '#', '*', '@', '$']) {
        s = rest.trim_start();
    }
    let num = s.strip_suffix("us")?.trim_end();
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || int.len() > 12 || !digits(int) || frac.len() > 3 || !digits(frac) {
        return None;
    }
    if num.contains('.') && frac.is_empty() {
        return None;
    }
    let mut f: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    for _ in frac.len()..3 {
        f *= 10;
    }
    int.parse::<u64>().ok()?.checked_mul(1000)?.checked_add(f)
}

/// `code /* comment */` -> (`code`, `comment`).
fn split_comment(s: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(c) = s.strip_prefix("/*") {
        let c = c
            .strip_suffix("*/")
            .ok_or("expected `*/` at the end of the comment")?;
        return Ok(("", Some(c.trim())));
    }
    if let Some(head) = s.strip_suffix("*/") {
        let open = head.rfind("/*").ok_or("expected `/*` before `*/`")?;
        return Ok((head[..open].trim_end(), Some(head[open + 2..].trim())));
    }
    Ok((s, None))
}

/// The function of `func()`, `func(a=1, b=2)`, `func [module]()`.
fn func_name(code: &str) -> Result<&str, String> {
    let c = code.trim_end();
    let name = match c.find('(') {
        Some(p) if c.ends_with(')') => c[..p].trim_end(),
        Some(_) => return Err("expected `)` after the arguments".into()),
        None => c,
    };
    if name.is_empty() || name.contains(['{', '}', ';', '|', '/']) {
        return Err(format!("expected a function name, found `{c}`"));
    }
    Ok(name)
}

/// The function a `} /* ... */` comment names: `func`, `func()`, `func = -22`,
/// `func ret=0x0`.
fn tail_name(c: &str) -> Option<&str> {
    let c = c.split(" = ").next()?.split(" ret=").next()?.trim();
    let c = c.strip_suffix("()").unwrap_or(c);
    (!c.is_empty() && !c.contains(' ')).then_some(c)
}

/// An open call.
struct Frame {
    func: Sym,
    depth: u32,
    entry_ts: u64,
}

/// One CPU's context.
#[derive(Default)]
struct Cpu {
    /// The task current on this CPU, from the proc column or the last task-switch line.
    pid: Option<i32>,
    /// The call stack of this CPU's idle task, or of its task while that is not known.
    stack: Vec<Frame>,
    /// Interrupt nesting from `==========>` / `<==========` lines.
    irq: u32,
    /// The latest time given to an event of this CPU.
    last_ts: u64,
}

/// The call stacks and the time line of a function_graph trace. A call stack belongs to a
/// task, as the kernel's return stack does: it is left open while the task is switched out
/// and continues where the task runs next, also on another CPU. Interrupts nest on the stack
/// of the task they interrupt.
#[derive(Default)]
pub(crate) struct GraphState {
    cpus: Vec<Cpu>,
    /// Call stacks of tasks other than idle, by pid.
    tasks: HashMap<i32, Vec<Frame>>,
    /// The latest time given to any event: the virtual clock of traces without times.
    now: u64,
    /// Lines whose indentation disagreed with the stack (lost or unpaired calls); the
    /// stack was resynchronised from the indentation.
    pub(crate) resyncs: u64,
}

impl GraphState {
    fn cpu(&mut self, cpu: u32) -> &mut Cpu {
        let c = cpu as usize;
        if self.cpus.len() <= c {
            self.cpus.resize_with(c + 1, Cpu::default);
        }
        &mut self.cpus[c]
    }

    /// The time of a line of `cpu` that is not a call (comments, irq and task-switch lines):
    /// its own time if it has one, never before the CPU's last event.
    pub(crate) fn time(&mut self, cpu: u32, ts: Option<u64>) -> u64 {
        let now = self.now;
        let c = self.cpu(cpu);
        let t = place(ts, now, c.last_ts);
        c.last_ts = c.last_ts.max(t);
        self.now = now.max(t);
        t
    }

    /// The task current on `cpu`, if the text said.
    pub(crate) fn pid(&mut self, cpu: u32) -> Option<i32> {
        self.cpu(cpu).pid
    }

    /// Records that `next` runs on `cpu` from now on, after `prev` when a task-switch line
    /// names it. Calls seen while the CPU's task was not known were that task's.
    pub(crate) fn switch(&mut self, cpu: u32, prev: Option<i32>, next: i32) {
        let c = cpu as usize;
        self.cpu(cpu);
        if self.cpus[c].pid.is_none() {
            let owner = prev.unwrap_or(next);
            if owner > 0 && !self.cpus[c].stack.is_empty() {
                let stack = std::mem::take(&mut self.cpus[c].stack);
                self.tasks.entry(owner).or_insert(stack);
            }
        }
        self.cpus[c].pid = Some(next);
    }

    /// Whether `cpu` is between `==========>` and `<==========`.
    pub(crate) fn in_irq(&mut self, cpu: u32) -> bool {
        self.cpu(cpu).irq > 0
    }

    /// Counts an interrupt entry (`true`) or exit on `cpu`.
    pub(crate) fn irq(&mut self, cpu: u32, enter: bool) {
        let c = self.cpu(cpu);
        c.irq = if enter {
            c.irq.saturating_add(1)
        } else {
            c.irq.saturating_sub(1)
        };
    }

    /// Applies a call line of `cpu` (`ts`: its time, `None` when the text has none),
    /// appending the events it means to `out`. Comments are left to the caller.
    pub(crate) fn call(
        &mut self,
        cpu: u32,
        ts: Option<u64>,
        line: &GraphLine<'_>,
        ctx: &mut Ctx,
        out: &mut Vec<(u64, EventKind)>,
    ) -> Result<(), LineError> {
        let now = self.now;
        let c = self.cpu(cpu);
        let t = place(ts, now, c.last_ts);
        let stack = match c.pid {
            Some(p) if p > 0 => self.tasks.entry(p).or_default(),
            _ => &mut self.cpus[cpu as usize].stack,
        };
        let last = match line.content {
            Content::Entry(name) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(LineError::limit(format!(
                        "expected a call depth under {MAX_DEPTH}"
                    )));
                }
                let (depth, resync) = new_depth(stack, line.indent);
                self.resyncs += resync as u64;
                let func = func_sym(ctx, name);
                out.push((
                    t,
                    EventKind::FuncEntry {
                        func: func.clone(),
                        depth,
                    },
                ));
                stack.push(Frame {
                    func,
                    depth,
                    entry_ts: t,
                });
                t
            }
            Content::Leaf(name, duration) => {
                let (depth, resync) = new_depth(stack, line.indent);
                self.resyncs += resync as u64;
                let func = func_sym(ctx, name);
                let r = t.saturating_add(duration.unwrap_or(0));
                out.push((
                    t,
                    EventKind::FuncEntry {
                        func: func.clone(),
                        depth,
                    },
                ));
                out.push((
                    r,
                    EventKind::FuncReturn {
                        func,
                        depth,
                        duration,
                    },
                ));
                r
            }
            Content::Return(tail, duration) => {
                let (func, depth, entry, resync) = pop(stack, tail, line.indent, ctx);
                self.resyncs += resync as u64;
                let r = match (ts, entry) {
                    (None, Some(e)) => t.max(e.saturating_add(duration.unwrap_or(0))),
                    _ => t,
                };
                out.push((
                    r,
                    EventKind::FuncReturn {
                        func,
                        depth,
                        duration,
                    },
                ));
                r
            }
            Content::Comment(_) => return Ok(()),
        };
        let c = &mut self.cpus[cpu as usize];
        c.last_ts = c.last_ts.max(last);
        self.now = match ts {
            None => now.max(last),
            Some(_) => now.max(t),
        };
        Ok(())
    }
}

/// The time of a line of a CPU whose last event was at `last`: its own time `ts`, moved
/// up to `last` when it is less than 1 us before (text times are cut to microseconds while
/// a leaf's return is its entry plus a duration in ns, so the return of the line before may
/// seem up to 1 us later than this line); without a time, the virtual clock `now`.
fn place(ts: Option<u64>, now: u64, last: u64) -> u64 {
    match ts {
        Some(t) if t < last && last - t < 1000 => last,
        Some(t) => t,
        None => now.max(last),
    }
}

fn func_sym(ctx: &mut Ctx, name: &str) -> Sym {
    Sym {
        addr: 0,
        name: Some(ctx.text(name)),
    }
}

/// The depth of a new call: one below the open call, or what the indentation shows when
/// the stack is empty (the trace starts inside a call tree). When the indentation shows a
/// shallower depth, returns were lost: those calls are dropped from the stack. When it shows
/// a deeper one, entries were lost: the indentation wins. Returns (depth, resynchronised).
fn new_depth(stack: &mut Vec<Frame>, indent: Option<u32>) -> (u32, bool) {
    let from_stack = stack.last().map(|f| f.depth + 1);
    match (from_stack, indent) {
        (None, d) => (d.unwrap_or(0), false),
        (Some(s), None) => (s, false),
        (Some(s), Some(d)) if d == s => (s, false),
        (Some(_), Some(d)) => {
            while stack.last().is_some_and(|f| f.depth >= d) {
                stack.pop();
            }
            (d, true)
        }
    }
}

/// Pairs a `}` with its open call: by the function its comment names (searching down the
/// stack), else by the indentation, else the innermost call. A `}` without a matching call
/// (its entry was lost, or is before the trace's start) keeps the function its comment
/// names, if any. Returns (function, depth, entry time, resynchronised).
fn pop(
    stack: &mut Vec<Frame>,
    tail: Option<&str>,
    indent: Option<u32>,
    ctx: &mut Ctx,
) -> (Sym, u32, Option<u64>, bool) {
    let orphan_depth =
        |stack: &Vec<Frame>| indent.unwrap_or_else(|| stack.last().map_or(0, |f| f.depth + 1));
    if let Some(name) = tail {
        let Some(at) = stack
            .iter()
            .rposition(|f| f.func.name.as_deref() == Some(name))
        else {
            let d = orphan_depth(stack);
            return (func_sym(ctx, name), d, None, false);
        };
        let resync = at + 1 != stack.len();
        let f = stack.swap_remove(at);
        stack.truncate(at);
        return (f.func, f.depth, Some(f.entry_ts), resync);
    }
    let mut resync = false;
    if let Some(d) = indent {
        while stack.last().is_some_and(|f| f.depth > d) {
            stack.pop();
            resync = true;
        }
        if stack.last().is_some_and(|f| f.depth < d) || stack.is_empty() {
            return (Sym::default(), d, None, resync);
        }
    }
    match stack.pop() {
        Some(f) => (f.func, f.depth, Some(f.entry_ts), resync),
        None => (Sym::default(), orphan_depth(stack), None, resync),
    }
}

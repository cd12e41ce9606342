// sections.js: the analyze sections (jitterlab.analyze, docs/json.md) as pages: summary,
// CPUs, tasks, IRQs and chains, blame, functions. Every figure is the model's; the page
// only converts units and lays out.
import { action, compareTable, el, facts, fmtCount, fmtDur, fmtLost, fmtOpt, fmtPct, fmtPrio, fmtTs, put, section, table } from "./tables.js";
import { decadeTicks, fmtCountTick, frame, legend, linear, log10, niceTicks, seriesColor, svgEl } from "./svg.js";

/** The timeline's origin (absolute ns of its relative 0), or null without a timeline. */
function originOf(ctx) {
  return ctx.meta.timeline ? ctx.meta.timeline.origin_ns : null;
}

/**
 * An absolute trace time as the kernel prints it; a link into the timeline when the
 * report has one: the window [ns - before - pad, ns + after + pad].
 */
function timeLink(ctx, ns, { before = 0, after = 0, cpu, slice, label } = {}) {
  const text = label ?? fmtTs(ns);
  if (ns === null || ns === undefined) return "-";
  const origin = originOf(ctx);
  if (origin === null || !ctx.nav.canOpenTimeline()) return text;
  const pad = Math.max(20e3, (before + after) * 0.25);
  const rel = ns - origin;
  return action(text, () => ctx.nav.openTimeline({ t0: Math.max(0, rel - before - pad), t1: rel + after + pad, cpu, slice }), "show this moment in the timeline");
}

/** The index of the slice of CPU `cpu` that starts at absolute time `ns`, or undefined. */
function sliceAt(ctx, cpu, ns) {
  const origin = originOf(ctx);
  const lane = ctx.lanes?.find((l) => l.cpu === cpu);
  if (!lane || origin === null) return undefined;
  const t = ns - origin, start = lane.slices.start;
  let lo = 0, hi = start.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (start[mid] < t - 0.5) lo = mid + 1;
    else hi = mid;
  }
  return lo < start.length && Math.abs(start[lo] - t) < 1 ? lo : undefined;
}

/**
 * A table of the report's rows (`spec.rows(report)`) in the columns `spec.columns(ctx)`;
 * on a compare page (`ctx.other`: B's), A's and B's rows paired by `spec.key(row)`, each
 * figure as A, B and B/A (tables.js compareTable). Column makers take the side's ctx, so
 * that B's time links open B's timeline.
 */
function tableOf(ctx, spec) {
  if (!ctx.other) return table({ ...spec, columns: spec.columns(ctx), rows: spec.rows(ctx.report) });
  return compareTable({
    ...spec,
    columns: [spec.columns(ctx), spec.columns(ctx.other)],
    rows: [spec.rows(ctx.report), spec.rows(ctx.other.report)],
  });
}

/** Whether `rows(report)` has a row, of A's report or (on a compare page) of B's. */
function anyRows(ctx, rows) {
  return rows(ctx.report).length > 0 || (!!ctx.other && rows(ctx.other.report).length > 0);
}

/** On a compare page, `make(c)` for A's side and B's, each under its name; else A's. */
function eachSide(ctx, make) {
  if (!ctx.other) return [make(ctx)];
  return [ctx, ctx.other].map((c, i) => el("div", { class: "jl-side-part", dataset: { side: i ? "b" : "a" } },
    el("h3", { class: "jl-side-title" }, `${i ? "B" : "A"}: ${c.name}`), make(c)));
}

/** A compare page's page that shows each side's as it is (blame, functions): `mount`
 * of A's, then of B's, each under its name, when its report has section `key`. */
function mountEachSide(root, ctx, key, mount) {
  put(root, eachSide(ctx, (c) => {
    const d = el("div");
    if (c.report[key]) mount(d, { ...c, other: null });
    return d;
  }));
}

/** `0:12, 1:30` from [{cpu, count}]. */
function cpuCounts(list) {
  return list && list.length ? list.map((c) => `${c.cpu}:${fmtCount(c.count)}`).join(", ") : "-";
}

/** The columns of a stats object (docs/json.md "stats"): which of them, under a prefix. */
function statCols(get, which, prefix = "", title = "") {
  const names = { count: "count", min: "min", avg: "avg", p50: "p50", p99: "p99", max: "max", total: "total" };
  return which.map((w) => ({
    label: `${prefix}${names[w]}`.trim(),
    title: `${title}${title ? ": " : ""}${names[w]}`,
    num: true,
    value: (r) => { const s = get(r); return s ? s[w === "count" ? "count" : `${w}_ns`] : null; },
    fmt: w === "count" ? fmtCount : fmtDur,
  }));
}

// ---- Summary

/** The figures of a summary that two traces compare, as rows. */
const SUMMARY_FIGURES = [
  ["span", "span_ns", fmtDur], ["events", "events", fmtCount], ["CPUs", "cpus", fmtCount], ["tasks", "tasks", fmtCount],
  ["wake-ups measured", "wakeups", fmtCount], ["with an inferred switch-in", "wakeups_inferred", fmtCount],
  ["of tasks already running", "wakes_of_running", fmtCount], ["pending at the end", "wakes_pending_at_end", fmtCount],
  ["records skipped as undecodable", "skipped", fmtCount],
];

/** The summary page; on a compare page each figure, events per CPU and by type as A, B
 * and B/A. */
export function mountSummary(root, ctx) {
  const s = ctx.report.summary;
  const one = !ctx.other;
  const sum = (report) => report.summary ?? null;
  const lostNote = one && !s.lost_recorded ? "this format does not record lost events: 0 means unknown" : null;
  const figures = one
    ? section("Summary", null, facts([
      ["span", `${fmtDur(s.span_ns)} (${fmtTs(s.start_ns)} s .. ${fmtTs(s.end_ns)} s)`, "span_ns"],
      ["events", fmtCount(s.events), "events"],
      ["CPUs", fmtCount(s.cpus), "cpus"],
      ["tasks", fmtCount(s.tasks), "tasks"],
      ["IRQs", s.irqs.length ? s.irqs.map((i) => `${i.irq} ${i.name}`).join(", ") : "none", "irqs"],
      ["wake-ups measured", fmtCount(s.wakeups), "wakeups"],
      ["with an inferred switch-in", `${fmtCount(s.wakeups_inferred)} (from common_pid: upper bounds)`, "wakeups_inferred"],
      ["of tasks already running", fmtCount(s.wakes_of_running), "wakes_of_running"],
      ["pending at the end", fmtCount(s.wakes_pending_at_end), "wakes_pending_at_end"],
      ["records skipped as undecodable", fmtCount(s.skipped), "skipped"],
    ], "jl-summary"))
    : section("Summary", `A: ${ctx.name}; B: ${ctx.other.name}`, tableOf(ctx, {
      id: "jl-summary",
      key: (r) => r.name,
      columns: () => [
        { label: "figure", value: (r) => r.name },
        { label: "", num: true, value: (r) => r.value, fmt: (v, r) => r.fmt(v) },
      ],
      rows: (report) => (sum(report) ? SUMMARY_FIGURES.map(([name, key, fmt]) => ({ name, value: sum(report)[key], fmt })) : []),
    }));
  put(root, el("div", { class: "jl-columns" }, el("div", null,
    figures,
    section("Events and lost events per CPU", lostNote, tableOf(ctx, {
      id: "jl-summary-cpus",
      key: (r) => r.cpu,
      columns: () => [
        { label: "CPU", num: true, value: (r) => r.cpu },
        { label: "events", num: true, value: (r) => r.events, fmt: fmtCount },
        { label: "lost", num: true, value: (r) => r.lost, fmt: (v) => fmtLost(v), title: one ? "events lost in ring-buffer overruns (count unknown: some were lost)" : undefined },
      ],
      rows: (report) => (sum(report) ? sum(report).events_per_cpu.map((events, cpu) => ({ cpu, events, lost: sum(report).lost_per_cpu[cpu] })) : []),
      rowAttrs: one ? (r) => ({ class: r.lost !== 0 ? "jl-lost" : null, dataset: { cpu: r.cpu } }) : undefined,
    }))), el("div", null,
    section("Events by type", null, tableOf(ctx, {
      id: "jl-summary-types",
      key: (r) => r.name,
      columns: (c) => [
        { label: "event", value: (r) => r.name },
        { label: "count", num: true, value: (r) => r.count, fmt: fmtCount },
        // A share of its own trace's events: one trace's page only.
        one ? { label: "share", num: true, value: (r) => r.count, fmt: (v) => fmtPct(v, c.report.summary.events) } : null,
      ].filter(Boolean),
      rows: (report) => sum(report)?.events_by_type ?? [],
    })),
    one ? section("Anomalies", "corrections the analysis made (GUIDE.md explains each kind)", s.anomalies.length ? table({
      id: "jl-summary-anomalies",
      columns: [
        { label: "kind", value: (r) => r.kind },
        { label: "CPU", num: true, value: (r) => r.cpu },
        { label: "count", num: true, value: (r) => r.count, fmt: fmtCount },
        { label: "first at (s)", num: true, value: (r) => r.first_ns, fmt: (v, r) => timeLink(ctx, v, { cpu: r.cpu }) },
      ],
      rows: s.anomalies,
    }) : el("p", null, "none")) : null,
  )));
}

// ---- CPUs

/** The per-CPU load over time: busy % of each bucket, one line per CPU. */
function loadChart(ctx, c) {
  const n = Math.max(0, ...c.cpus.map((x) => x.load.length));
  if (!n || !c.bucket_ns) return el("p", null, "no load buckets");
  const width = 1300, height = 260;
  // The trace ends inside the last bucket: busy is a share of the time it covers.
  const endNs = Math.min(n * c.bucket_ns, Math.max(...c.cpus.map((x) => x.first_ns + x.span_ns)) - c.origin_ns);
  const covered = (i) => Math.max(1, Math.min(c.bucket_ns, endNs - i * c.bucket_ns));
  const end = endNs / 1e9;
  const f = frame({
    width, height, class: "jl-load",
    title: "busy time per bucket, per CPU",
    x: (a, b) => linear(0, end, a, b),
    y: (a, b) => linear(0, 100, a, b),
    xTicks: niceTicks(0, end, 10), yTicks: [0, 25, 50, 75, 100],
    xFmt: (v) => `${+v.toPrecision(6)} s`, yFmt: (v) => `${v}%`,
    xLabel: `time from ${fmtTs(c.origin_ns)} s (buckets of ${fmtDur(c.bucket_ns)})`,
    yLabel: "busy",
  });
  c.cpus.forEach((cpu, k) => {
    let d = "";
    cpu.load.forEach((busy, i) => {
      const x0 = f.x((i * c.bucket_ns) / 1e9), x1 = f.x(Math.min(endNs, (i + 1) * c.bucket_ns) / 1e9);
      const y = f.y(Math.min(100, (busy * 100) / covered(i)));
      d += i === 0 ? `M${x0},${y}H${x1}` : `V${y}H${x1}`;
    });
    f.plot.append(svgEl("path", { d, class: "jl-series", style: `stroke: ${seriesColor(k)}`, "data-cpu": cpu.cpu }));
  });
  // One hit area per bucket: its figures, and a click into the timeline.
  const origin = originOf(ctx);
  const canOpen = origin !== null && ctx.nav.canOpenTimeline();
  for (let i = 0; i < n; i++) {
    const x0 = f.x((i * c.bucket_ns) / 1e9), x1 = f.x(Math.min(endNs, (i + 1) * c.bucket_ns) / 1e9);
    const lines = c.cpus.map((cpu) => `CPU ${cpu.cpu}: ${fmtPct(cpu.load[i] ?? 0, covered(i))} busy (${fmtDur(cpu.load[i] ?? 0)})`);
    const t0 = c.origin_ns + i * c.bucket_ns;
    const rect = svgEl("rect", { class: "jl-hit", x: x0, y: f.inner.top, width: Math.max(1, x1 - x0), height: f.inner.bottom - f.inner.top },
      svgEl("title", { text: `${fmtTs(t0)} s + ${fmtDur(covered(i))}\n${lines.join("\n")}${canOpen ? "\nclick: show in the timeline" : ""}` }));
    if (canOpen) {
      rect.addEventListener("click", () => ctx.nav.openTimeline({ t0: t0 - origin, t1: t0 - origin + c.bucket_ns }));
      rect.classList.add("jl-clickable");
    }
    f.plot.append(rect);
  }
  return el("div", { class: "jl-chart" }, f.svg, legend(c.cpus.map((cpu, k) => ({ label: `CPU ${cpu.cpu}`, color: seriesColor(k) }))));
}

/** The CPUs page. */
export function mountCpus(root, ctx) {
  const d = (key, label, title) => ({ label, title, num: true, value: (r) => r[key], fmt: fmtDur });
  put(root,
    section("CPUs", "where each CPU's time went, from its first event to the end of the trace", tableOf(ctx, {
      id: "jl-cpus",
      key: (r) => r.cpu,
      columns: () => [
        { label: "CPU", num: true, value: (r) => r.cpu },
        d("span_ns", "span"),
        d("busy_ns", "busy", "running a task"),
        { label: "busy %", num: true, value: (r) => (r.span_ns ? r.busy_ns / r.span_ns : null), fmt: (v, r) => fmtPct(r.busy_ns, r.span_ns) },
        d("idle_ns", "idle"),
        d("unknown_ns", "unknown", "state unknown: lost events"),
        d("hardirq_ns", "hardirq"),
        d("softirq_ns", "softirq"),
        { label: "IRQs", num: true, value: (r) => r.irqs, fmt: fmtCount },
        { label: "softirqs", num: true, value: (r) => r.softirqs, fmt: fmtCount },
        { label: "slices", num: true, value: (r) => r.slices, fmt: fmtCount, title: "task slices, idle excluded" },
        { label: "switches", num: true, value: (r) => r.switches, fmt: fmtCount },
        { label: "inferred", num: true, value: (r) => r.inferred_switches, fmt: fmtCount, title: "switches inferred, not recorded" },
        { label: "events", num: true, value: (r) => r.events, fmt: fmtCount },
      ],
      rows: (report) => report.cpus?.cpus ?? [],
    })),
    section("Load over time", "busy time per bucket; hover for the figures, click a bucket to see it in the timeline",
      eachSide(ctx, (c) => (c.report.cpus ? loadChart(c, c.report.cpus) : el("p", null, "no CPU section")))),
  );
}

// ---- Tasks

/** The tasks page: processes (or names) and their threads, run time and wake-ups. */
export function mountTaskTable(root, ctx) {
  if (ctx.other) return mountTaskTableCompared(root, ctx);
  const t = ctx.report.tasks;
  const byTid = new Map(t.tasks.map((x) => [x.tid, x]));
  const shown = new Set();
  const groups = t.groups.map((g) => {
    const rows = g.threads.map((tid) => byTid.get(tid)).filter(Boolean);
    rows.forEach((r) => shown.add(r.tid));
    return { head: rows.length > 1 ? { group: g } : null, rows };
  });
  // Tasks the groups do not name (none, normally) still get a row.
  for (const x of t.tasks) if (!shown.has(x.tid)) groups.push({ head: null, rows: [x] });
  const G = (r) => r.group; // a group's head row
  const wake = (r) => (G(r) ? null : r.wakeups);
  const topWaker = (r) => (r.wakers && r.wakers.length ? r.wakers[0] : null);
  const columns = [
    { label: "task", value: (r) => (G(r) ? G(r).comm : r.comm), fmt: (v, r) => (G(r) ? el("span", null, el("strong", null, v), ` (${r.group.threads.length} threads)`) : `${v}-${r.tid}`) },
    t.group_by === "tgid" ? { label: "tgid", num: true, value: (r) => (G(r) ? G(r).tgid : r.tgid), fmt: fmtOpt } : null,
    { label: "prio", num: true, value: (r) => (G(r) ? null : r.prio), fmt: (v) => (v === null ? "-" : fmtPrio(v)) },
    { label: "run", num: true, value: (r) => (G(r) ? G(r).run_ns : r.run_ns), fmt: fmtDur, title: "time on a CPU" },
    { label: "CPUs", lines: true, value: (r) => (G(r) ? G(r).cpus.join(", ") : r.cpus.map((c) => `${c.cpu}: ${fmtDur(c.run_ns)}`).join("\n")), title: "run time per CPU" },
    ...statCols((r) => (G(r) ? null : r.instances), ["count", "avg", "max"], "inst. ", "instances (switch-in to switch-out)").map((c, i) => (i === 0 ? { ...c, label: "inst." } : c)),
    { label: "migr.", num: true, value: (r) => (G(r) ? null : r.migrations), fmt: fmtCount, title: "migrations" },
    { label: "preempt.", title: "slices that ended preempted", num: true, value: (r) => (G(r) ? null : r.preempted), fmt: fmtCount },
    { label: "slept", title: "slices that ended asleep", num: true, value: (r) => (G(r) ? null : r.slept), fmt: fmtCount },
    { label: "wake-ups", num: true, value: (r) => (G(r) ? G(r).wakeups : r.wakeups ? r.wakeups.count : 0), fmt: fmtCount, title: "wake-ups measured (sched_waking -> switch-in)" },
    ...statCols(wake, ["p50", "p99"], "wake ", "wake-up latency (sched_waking -> switch-in)"),
    { label: "wake max", num: true, title: "the worst wake-up latency (a link to its place in the timeline)", value: (r) => wake(r)?.max_ns ?? null,
      fmt: (v, r) => (v === null ? "-" : timeLink(ctx, wake(r).max_at_ns, { before: v, label: fmtDur(v) })) },
    { label: "inferred", num: true, value: (r) => (G(r) ? null : r.wakeups_inferred), fmt: fmtCount, title: "wake-ups whose switch-in was inferred: upper bounds" },
    { label: "woken mostly by", wrap: true, value: (r) => (G(r) ? null : topWaker(r)?.name ?? null), fmt: (v, r) => (G(r) || !v ? "" : `${v} (${fmtCount(topWaker(r).count)})`) },
  ].filter(Boolean);
  const by = t.group_by === "tgid" ? "process (thread group id)" : "name (this trace has no thread group ids)";
  const w = t.wakeups;
  put(root,
    section("Tasks", `threads grouped by ${by}; instance = switch-in to switch-out; wake-up latency = sched_waking -> switch-in`, table({
      id: "jl-tasks", class: "jl-grouped", columns, groups, sort: { col: columns.findIndex((c) => c.label === "run"), desc: true },
      rowAttrs: (r, head) => ({ dataset: head ? { group: r.group.comm } : { tid: r.tid } }),
    })),
    section("All wake-ups", null, w ? facts([
      ["measured", fmtCount(w.count), "wakeups.count"],
      ["min", fmtDur(w.min_ns)], ["avg", fmtDur(w.avg_ns)], ["p50", fmtDur(w.p50_ns)],
      ["p99", fmtDur(w.p99_ns)], ["max", fmtDur(w.max_ns)],
      ["max at", timeLink(ctx, w.max_at_ns, { before: w.max_ns })],
    ]) : el("p", null, "no wake-up measured")),
  );
}

/**
 * A compare page's tasks: one row per thread, paired by name (tids differ from trace to
 * trace; threads of one name paired busiest first), run time and wake-ups, A, B and
 * B/A; and all wake-ups.
 */
function mountTaskTableCompared(root, ctx) {
  const threads = (report) => [...(report.tasks?.tasks ?? [])].sort((a, b) => b.run_ns - a.run_ns);
  const w = (r) => r.wakeups;
  put(root,
    section("Tasks", "threads paired by name, the busiest of a name with the busiest; instance = switch-in to switch-out; wake-up latency = sched_waking -> switch-in", tableOf(ctx, {
      id: "jl-tasks",
      key: (r) => r.comm,
      sort: { col: 1, desc: true },
      columns: (c) => [
        { label: "task", value: (r) => `${r.comm}-${r.tid}` },
        { label: "run", num: true, value: (r) => r.run_ns, fmt: fmtDur, title: "time on a CPU" },
        { label: "CPUs", lines: true, value: (r) => r.cpus.map((x) => `${x.cpu}: ${fmtDur(x.run_ns)}`).join("\n"), title: "run time per CPU" },
        ...statCols((r) => r.instances, ["count", "max"], "inst. ", "instances (switch-in to switch-out)"),
        { label: "migr.", num: true, value: (r) => r.migrations, fmt: fmtCount, title: "migrations" },
        { label: "preempt.", num: true, value: (r) => r.preempted, fmt: fmtCount, title: "slices that ended preempted" },
        { label: "wake-ups", num: true, value: (r) => (r.wakeups ? r.wakeups.count : 0), fmt: fmtCount },
        ...statCols(w, ["p50", "p99"], "wake ", "wake-up latency (sched_waking -> switch-in)"),
        { label: "wake max", num: true, value: (r) => w(r)?.max_ns ?? null,
          fmt: (v, r) => (v === null ? "-" : timeLink(c, w(r).max_at_ns, { before: v, label: fmtDur(v) })), title: "the worst wake-up latency" },
      ],
      rows: threads,
    })),
    section("All wake-ups", null, tableOf(ctx, {
      id: "jl-wakeups",
      key: () => "all",
      columns: () => [
        { label: "wake-ups", value: () => "all" },
        ...statCols((x) => x, ["count", "min", "avg", "p50", "p99", "max"]),
      ],
      rows: (report) => (report.tasks?.wakeups ? [report.tasks.wakeups] : []),
    })),
  );
}

// ---- IRQs

/** A chain's latency histogram: a bar per bucket, log count. An IRQ's chain (`irq`),
 * or a softirq's (`vec`; its `source` names it). */
function chainHistogram(c) {
  const soft = c.vec !== undefined;
  const name = soft ? `${c.source} -> ${c.comm}-${c.tid}` : `irq ${c.irq} ${c.irq_name} -> ${c.comm}-${c.tid}`;
  const buckets = c.histogram;
  const max = Math.max(0, ...buckets.map((b) => b.count));
  const width = 420, height = 200;
  const n = buckets.length;
  const f = frame({
    width, height, margin: { left: 50, bottom: 58, right: 10, top: 22 },
    title: name,
    x: (a, b) => linear(0, n, a, b),
    y: (a, b) => log10(0.7, Math.max(10, max * 1.5), a, b),
    yTicks: decadeTicks(1, Math.max(10, max * 1.5)), yFmt: fmtCountTick,
    yLabel: "wake-ups",
  });
  const bw = (f.inner.right - f.inner.left) / n;
  buckets.forEach((b, i) => {
    const label = b.le_ns === null ? "more" : `≤ ${fmtDur(b.le_ns)}`;
    const x = f.x(i);
    f.plot.append(svgEl("text", { class: "jl-tick-label", transform: `translate(${x + bw / 2 + 3} ${f.inner.bottom + 6}) rotate(45)`, text: label }));
    if (!b.count) return;
    const y = f.y(b.count);
    f.plot.append(
      svgEl("rect", { class: "jl-bar", x: x + 1, y, width: Math.max(1, bw - 2), height: f.inner.bottom - y, "data-count": b.count },
        svgEl("title", { text: `${label}: ${fmtCount(b.count)} wake-ups` })),
      svgEl("text", { class: "jl-bar-label", x: x + bw / 2, y: y - 3, "text-anchor": "middle", text: fmtCount(b.count) }));
  });
  return el("figure", { class: "jl-hist", dataset: soft ? { vec: c.vec, tid: c.tid } : { irq: c.irq, tid: c.tid } },
    el("figcaption", null, `${name}: ${soft ? "softirq_exit" : "irq_handler_exit"} -> switch-in`), f.svg);
}

/** The IRQs page: hardirq and softirq durations, IRQ -> task chains and their histograms. */
export function mountIrqs(root, ctx) {
  const irqsOf = (report) => report.irqs ?? { irqs: [], softirqs: [], chains: [], softirq_chains: [] };
  const s = irqsOf(ctx.report);
  const dur = (r) => r.duration;
  const irqRows = (report) => irqsOf(report).irqs;
  const irqs = anyRows(ctx, irqRows) ? tableOf(ctx, {
    id: "jl-irqs",
    key: (r) => `${r.irq} ${r.name}`,
    keyCols: 2,
    columns: (c) => [
      { label: "IRQ", num: true, value: (r) => r.irq },
      { label: "name", value: (r) => r.name },
      { label: "count", num: true, value: (r) => r.count, fmt: fmtCount },
      { label: "CPUs", value: (r) => cpuCounts(r.cpus), title: "CPU:count" },
      ...statCols(dur, ["min", "avg", "p50", "p99", "max"], "", "handler duration"),
      { label: "max at (s)", num: true, at: true, value: (r) => r.duration?.max_at_ns ?? null, fmt: (v, r) => timeLink(c, v, { after: r.duration?.max_ns ?? 0 }) },
      { label: "wake-ups", num: true, value: (r) => r.wakeups, fmt: fmtCount, title: "wake-ups done in the handler" },
    ],
    rows: irqRows,
  }) : el("p", null, "no irq_handler_entry/exit pairs in the trace");
  const softRows = (report) => irqsOf(report).softirqs;
  const softirqs = anyRows(ctx, softRows) ? tableOf(ctx, {
    id: "jl-softirqs",
    key: (r) => r.vec,
    keyCols: 2,
    columns: (c) => [
      { label: "vec", num: true, value: (r) => r.vec },
      { label: "name", value: (r) => r.name },
      { label: "count", num: true, value: (r) => r.count, fmt: fmtCount },
      { label: "CPUs", value: (r) => cpuCounts(r.cpus) },
      ...statCols(dur, ["avg", "p99", "max"], "", "duration"),
      { label: "max at (s)", num: true, at: true, value: (r) => r.duration?.max_at_ns ?? null, fmt: (v, r) => timeLink(c, v, { after: r.duration?.max_ns ?? 0 }) },
      ...statCols((r) => r.raise_to_entry, ["avg", "max"], "raise→entry ", "softirq_raise -> softirq_entry"),
      { label: "raised by", value: (r) => r.raised_by.map((b) => (b.irq === null ? `no IRQ (${fmtCount(b.count)})` : `irq ${b.irq} (${fmtCount(b.count)})`)).join(", ") },
    ],
    rows: softRows,
  }) : null;
  const focus = s.focus_irq || s.focus_task ? ` (--irq ${s.focus_irq ?? "*"} --task ${s.focus_task ?? "*"})` : "";
  const lat = (r) => r.latency;
  const chainRows = (report) => irqsOf(report).chains;
  const chains = anyRows(ctx, chainRows) ? tableOf(ctx, {
    id: "jl-chains",
    // Tids differ from trace to trace: a chain is its IRQ and its task's name.
    key: (r) => `${r.irq_name} ${r.comm}`,
    keyCols: 2,
    columns: (c) => [
      { label: "IRQ", value: (r) => `${r.irq} ${r.irq_name}` },
      { label: "task", value: (r) => `${r.comm}-${r.tid}` },
      { label: "wake-ups", num: true, value: (r) => r.count, fmt: fmtCount },
      { label: "via", value: (r) => (r.via_hardirq === 0 ? "softirq" : r.via_softirq === 0 ? "hardirq" : `hardirq ${r.via_hardirq}, softirq ${r.via_softirq}`) },
      ...statCols(lat, ["min", "avg", "p50", "p99", "max"], "", "irq_handler_exit -> switch-in"),
      { label: "max at (s)", num: true, at: true, value: (r) => r.latency?.max_at_ns ?? null, fmt: (v, r) => timeLink(c, v, { before: r.latency?.max_ns ?? 0 }) },
      { label: "waking→switch-in max", num: true, value: (r) => r.wake_latency?.max_ns ?? null, fmt: fmtDur, title: "sched_waking -> switch-in, the worst" },
      { label: "exit unknown", num: true, value: (r) => r.exit_unknown, fmt: fmtCount, title: "switched in before the IRQ's exit was seen: not in the latencies" },
    ],
    rows: chainRows,
    rowAttrs: (r) => ({ dataset: { irq: r.irq, tid: r.tid } }),
  }) : el("p", null, "no wake-up done in a hardirq handler or in a softirq an IRQ raised");
  // Wake-ups in softirqs that no traced IRQ raised (NET_RX of loopback, veth or a
  // sending task; TIMER; RCU): the softirq's exit to the task's switch-in.
  const softChainRows = (report) => irqsOf(report).softirq_chains ?? [];
  const softTable = anyRows(ctx, softChainRows) ? tableOf(ctx, {
    id: "jl-softirq-chains",
    key: (r) => `${r.name} ${r.comm}`,
    keyCols: 2,
    columns: (c) => [
      { label: "softirq", value: (r) => r.name, title: "the vector" },
      { label: "task", value: (r) => `${r.comm}-${r.tid}` },
      { label: "wake-ups", num: true, value: (r) => r.count, fmt: fmtCount },
      { label: "waker CPUs", value: (r) => cpuCounts(r.waker_cpus ?? []), title: "CPU:count of the softirqs that woke it" },
      ...statCols(lat, ["min", "avg", "p50", "p99", "max"], "", "softirq_exit -> switch-in"),
      { label: "max at (s)", num: true, at: true, value: (r) => r.latency?.max_at_ns ?? null, fmt: (v, r) => timeLink(c, v, { before: r.latency?.max_ns ?? 0 }) },
      { label: "waking→switch-in max", num: true, value: (r) => r.wake_latency?.max_ns ?? null, fmt: fmtDur, title: "sched_waking -> switch-in, the worst" },
      { label: "exit unknown", num: true, value: (r) => r.exit_unknown, fmt: fmtCount, title: "switched in before the softirq's exit was seen: not in the latencies" },
    ],
    rows: softChainRows,
    rowAttrs: (r) => ({ dataset: { vec: r.vec, tid: r.tid } }),
  }) : null;
  const hists = (report) => [...chainRows(report), ...softChainRows(report)];
  put(root,
    section("IRQs", "handler duration = irq_handler_entry -> irq_handler_exit", irqs),
    softirqs ? section("Softirqs", "duration = softirq_entry -> softirq_exit", softirqs) : null,
    section(`IRQ → task chains${focus}`, "latency = the IRQ's irq_handler_exit -> the woken task's switch-in", chains),
    softTable ? section(`Softirq → task chains${focus}`, "wake-ups in softirqs no traced IRQ raised; latency = the softirq's softirq_exit -> the woken task's switch-in", softTable) : null,
    anyRows(ctx, hists) ? section("Chain histograms", "wake-ups per latency bucket (log scale), one per chain",
      eachSide(ctx, (c) => el("div", { class: "jl-hists" }, hists(c.report).map(chainHistogram)))) : null,
  );
}

// ---- Blame

const STEP_CLASS = { task: "jl-step-task", irq: "jl-step-irq", softirq: "jl-step-softirq", gap: "jl-step-gap", unrecorded: "jl-step-unrecorded" };

function stepLabel(step) {
  switch (step.kind) {
    case "task": return step.tid === 0 ? `idle (${step.name})` : `task ${step.name}-${step.tid} (${fmtPrio(step.prio)})`;
    case "irq": return `irq ${step.irq} ${step.name}`;
    case "softirq": return `softirq ${step.name}`;
    case "gap": return "no events at all";
    case "unrecorded": return `no events; ${step.name}-${step.tid} shows up current after, no switch-in recorded`;
    default: return step.name;
  }
}

/** What the woken task's CPU did between the waking and the switch-in, as bars. */
function spikeSteps(p) {
  const rows = [];
  const rowOf = new Map();
  const rank = { task: 0, unrecorded: 1, irq: 2, softirq: 3, gap: 4 };
  const steps = [...p.timeline].sort((a, b) => (rank[a.kind] ?? 5) - (rank[b.kind] ?? 5));
  for (const st of steps) {
    const key = `${st.kind}:${st.kind === "task" || st.kind === "unrecorded" ? st.tid : st.name}`;
    if (!rowOf.has(key)) { rowOf.set(key, rows.length); rows.push(stepLabel(st)); }
  }
  const from = Math.min(p.waking_ns, p.due_ns ?? Infinity);
  const t0 = Math.min(from, ...p.timeline.map((s) => s.start_ns));
  const t1 = Math.max(p.switch_in_ns, ...p.timeline.map((s) => s.end_ns));
  const width = 1100, rowH = 20;
  const height = 40 + rows.length * rowH;
  const f = frame({
    width, height, class: "jl-steps", margin: { left: 330, top: 8, bottom: 32, right: 20 },
    title: "the CPU from the waking to the switch-in",
    x: (a, b) => linear(0, Math.max(1, t1 - t0), a, b),
    y: (a, b) => linear(0, rows.length, b, a),
    xTicks: niceTicks(0, t1 - t0, 8), xFmt: (v) => `+${fmtDur(v)}`,
  });
  rows.forEach((label, i) => f.plot.append(svgEl("text", { class: "jl-row-label", x: f.inner.left - 6, y: f.y(i) + rowH * 0.7, "text-anchor": "end", text: label })));
  for (const st of p.timeline) {
    const i = rowOf.get(`${st.kind}:${st.kind === "task" || st.kind === "unrecorded" ? st.tid : st.name}`);
    const x0 = f.x(st.start_ns - t0), x1 = f.x(st.end_ns - t0);
    f.plot.append(svgEl("rect", { class: `jl-step ${STEP_CLASS[st.kind] ?? ""}`, x: x0, y: f.y(i) + 3, width: Math.max(1, x1 - x0), height: rowH - 6 },
      svgEl("title", { text: `${stepLabel(st)}: +${fmtDur(st.start_ns - from)} for ${fmtDur(st.end_ns - st.start_ns)}` })));
  }
  const marks = [[p.waking_ns, "jl-mark-waking"], [p.switch_in_ns, "jl-mark-switch"]];
  if (p.due_ns != null && p.due_ns < p.waking_ns) marks.push([p.due_ns, "jl-mark-due"]);
  for (const [t, cls] of marks) {
    f.plot.append(svgEl("line", { class: `jl-mark ${cls}`, x1: f.x(t - t0), x2: f.x(t - t0), y1: f.inner.top, y2: f.inner.bottom }));
  }
  return f.svg;
}

/** The blame page: each blamed wake-up, its verdict, what ran meanwhile. */
export function mountBlame(root, ctx) {
  if (ctx.other) return mountEachSide(root, ctx, "blame", mountBlame);
  const spikes = ctx.report.blame.spikes;
  if (!spikes.length) {
    put(root, section("Blame", null, el("p", null, "no wake-up to blame")));
    return;
  }
  const origin = originOf(ctx);
  const cards = spikes.map((p, i) => {
    const lat = p.latency_min_ns !== null && p.latency_min_ns !== undefined ? `${fmtDur(p.latency_min_ns)} .. ${fmtDur(p.latency_ns)}` : fmtDur(p.latency_ns);
    const why = p.reason === "marker" ? `marked: "${p.marker}"` : "worst";
    const open = origin !== null && ctx.nav.canOpenTimeline()
      ? action("show in the timeline", () => {
        const pad = Math.max(50e3, (p.switch_in_ns - start) * 0.2);
        ctx.nav.openTimeline({ t0: Math.max(0, start - origin - pad), t1: p.switch_in_ns - origin + pad, cpu: p.cpu, slice: sliceAt(ctx, p.cpu, p.switch_in_ns) });
      }, "the waking to the switch-in, with the woken task's slice selected")
      : null;
    const b = p.breakdown;
    const start = Math.min(p.waking_ns, p.due_ns ?? Infinity);
    const span = p.switch_in_ns - start;
    const due = p.due_ns != null && p.due_ns < p.waking_ns ? `due at ${fmtTs(p.due_ns)} s (the timer itself was late); ` : "";
    return el("article", { class: "jl-spike", dataset: { index: i, cpu: p.cpu, tid: p.tid } },
      el("h3", null, `${i + 1}. ${p.comm}-${p.tid} (${fmtPrio(p.prio)}) on CPU ${p.cpu}: ${lat}`, el("span", { class: "jl-why" }, ` [${why}]`)),
      el("p", { class: "jl-verdict" }, p.verdict),
      el("p", { class: "jl-spike-meta" }, `${due}woken at ${fmtTs(p.waking_ns)} s by ${p.waker ?? "unknown"}; switched in at ${fmtTs(p.switch_in_ns)} s`,
        p.inferred ? " (switch-in inferred: an upper bound)" : "", " ", open),
      facts([
        ["tasks", `${fmtDur(b.tasks_ns)} (${fmtPct(b.tasks_ns, span)})`],
        ["idle", `${fmtDur(b.idle_ns)} (${fmtPct(b.idle_ns, span)})`],
        ["hardirq", `${fmtDur(b.hardirq_ns)} (${fmtPct(b.hardirq_ns, span)})`],
        ["softirq", `${fmtDur(b.softirq_ns)} (${fmtPct(b.softirq_ns, span)})`],
        ["no events", `${fmtDur(b.gaps_ns)} (${fmtPct(b.gaps_ns, span)})`],
      ], "jl-breakdown"),
      p.timeline.length ? spikeSteps(p) : el("p", null, "no step recorded"),
      p.elided > 0 ? el("p", { class: "jl-note" }, `${fmtCount(p.elided)} shorter steps left out`) : null,
      p.truncated ? el("p", { class: "jl-note" }, "the CPU's history did not reach back to the waking") : null);
  });
  put(root, section("Blame", "what the woken task's CPU did from the waking to the switch-in", cards));
}

// ---- Functions

/** The functions page: function_graph statistics, and the comparison with --compare. */
export function mountFunctions(root, ctx) {
  if (ctx.other) return mountEachSide(root, ctx, "functions", mountFunctions);
  const s = ctx.report.functions;
  if (!s.functions.length) {
    put(root, section("Functions", null, el("p", null, "no function_graph calls in the trace")));
    return;
  }
  const detail = el("div", { class: "jl-detail", id: "jl-function-detail" }, el("p", { class: "jl-note" }, "click a function for its callees and its longest call"));
  const showDetail = (f) => {
    const l = f.longest;
    detail.replaceChildren(
      el("h3", null, f.name),
      l ? el("p", null, `longest call: ${fmtDur(l.duration_ns)} at ${fmtTs(l.start_ns)} s on CPU ${l.cpu}, task ${l.tid}: ${l.path.join(" > ")}`) : null,
      f.callees.length ? table({
        columns: [
          { label: "callee", value: (r) => r.name },
          { label: "calls", num: true, value: (r) => r.calls, fmt: fmtCount },
        ],
        rows: f.callees,
      }) : el("p", null, "no traced callees"));
  };
  const longest = s.functions.map((f) => f.longest).filter(Boolean).sort((a, b) => b.duration_ns - a.duration_ns)[0];
  put(root, section("Functions", "self = inclusive minus the traced callees' inclusive time", table({
    id: "jl-functions",
    columns: [
      { label: "function", value: (r) => r.name, fmt: (v, r) => action(v, () => showDetail(r), "its callees and longest call") },
      { label: "calls", num: true, value: (r) => r.calls, fmt: fmtCount },
      ...statCols((r) => r.self_time, ["total", "avg", "max"], "self ", "self time"),
      ...statCols((r) => r.inclusive, ["avg", "p99", "max"], "incl. ", "inclusive time"),
      { label: "callees", num: true, value: (r) => r.distinct_callees, fmt: fmtCount },
      { label: "most called", value: (r) => (r.callees[0] ? r.callees[0].name : null), fmt: (v, r) => (v ? `${v} x${fmtCount(r.callees[0].calls)}` : "-") },
    ],
    rows: s.functions,
  }), longest ? el("p", null, `longest call: ${fmtDur(longest.duration_ns)} on CPU ${longest.cpu}: ${longest.path.join(" > ")}`) : null, detail));
  const c = s.comparison;
  if (c) {
    put(root, section(`Compared with ${c.other}`, "most changed total self time first", table({
      id: "jl-comparison",
      columns: [
        { label: "function", value: (r) => r.name },
        { label: "calls", num: true, value: (r) => r.calls, fmt: fmtCount },
        { label: "other", num: true, value: (r) => r.other_calls, fmt: fmtCount, title: `calls in ${c.other}` },
        { label: "self total", num: true, value: (r) => r.self_ns, fmt: fmtDur },
        { label: "other", num: true, value: (r) => r.other_self_ns, fmt: fmtDur, title: `self total in ${c.other}` },
        { label: "self avg", num: true, value: (r) => r.self_avg_ns, fmt: fmtDur },
        { label: "other", num: true, value: (r) => r.other_self_avg_ns, fmt: fmtDur, title: `self avg in ${c.other}` },
      ],
      rows: c.changes,
    })));
  }
}

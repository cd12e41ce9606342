// audit.js: a result of jitterlab audit (jitterlab.audit, docs/json.md): the verdict per
// RT CPU with its limiting finding; the findings grouped by family, filterable by
// severity, each with its evidence, why it matters, its fix and whether that takes a
// reboot; the recommendations in rank order with the command to apply and the way to
// check; what was measured (the latency probe idle and loaded with its blamed spike, the
// noise probe). Every figure is the model's: verdicts, ranks and causes come with it.
import { el, facts, fmtBool, fmtCount, fmtDur, put, section, table, timelineLink } from "./tables.js";

/** The severities, worst first, as the model names them. */
const AUDIT_SEVERITIES = ["high", "medium", "low", "info"];

/** The families in the order the audit checks them (others after, by name). */
const AUDIT_FAMILIES = ["kernel", "cmdline", "power", "irqs", "sched", "memory", "limits", "environment", "measured"];

/** The header's line under the title. */
export function auditSubtitle(r) {
  const n = r.findings.length;
  return `audit of CPU ${r.rt_cpus} (${r.rt_cpus_from}): ${r.verdict}; kernel ${r.kernel || "-"}, ${r.mode}, ${n} finding${n === 1 ? "" : "s"}, ${fmtDur(r.wall_ns)}`;
}

/** What the reader should know first: the checks not made for want of root. */
export function auditNotes(r) {
  const out = r.needs_root.map((t) => ({ cls: "info", text: `without root: ${t}` }));
  if (r.mode === "static") out.push({ cls: "info", text: "a static audit: nothing was measured (the measured checks need root on the live machine)" });
  return out;
}

/** A finding's key as `--compare` and the recommendations name it: `id` or `id subject`. */
function findingKey(f) {
  return f.subject ? `${f.id} ${f.subject}` : f.id;
}

/** A severity as a badge. */
function badge(sev) {
  return el("span", { class: `jl-sev jl-sev-${sev}` }, sev);
}

/** The verdict per RT CPU, the comparison with an earlier audit, and the machine. */
export function mountAuditVerdict(root, ctx) {
  const r = ctx.report;
  put(root, section("Verdict per RT CPU", "ready: nothing of medium or high severity; tune: medium findings; unfit: a high one (exit status 3)", table({
    id: "jl-audit-verdicts",
    columns: [
      { label: "CPU", num: true, value: (v) => v.cpu },
      { label: "verdict", value: (v) => v.verdict, fmt: (v) => el("span", { class: `jl-audit-verdict jl-audit-verdict-${v}` }, v) },
      { label: "limited by", value: (v) => v.limiting, fmt: (v, x) => (v ? `${v}: ${x.limiting_what ?? ""}` : "-"), wrap: true },
      { label: "high", num: true, value: (v) => v.high },
      { label: "medium", num: true, value: (v) => v.medium },
      { label: "low", num: true, value: (v) => v.low },
    ],
    rows: r.verdicts,
    rowAttrs: (v) => ({ dataset: { cpu: v.cpu, verdict: v.verdict } }),
  })));
  put(root, section("The machine", null, facts([
    ["RT CPUs", `${r.rt_cpus} (${r.rt_cpus_from})`, "rt_cpus"],
    ["housekeeping", String(r.housekeeping || "-"), "housekeeping"],
    ["kernel", r.kernel || "-", "kernel"],
    ["kernel configuration", r.kernel_config ?? "not found", "kernel_config"],
    ["mode", r.mode, "mode"],
    ["took", fmtDur(r.wall_ns), "wall_ns"],
  ])));
  const c = r.compare;
  if (c) {
    const list = (title, keys, cls) => (keys.length ? [el("h3", null, title), el("ul", { class: cls }, keys.map((k) => el("li", null, badge(k.severity), " ", el("code", null, findingKey(k)), " ", k.what)))] : []);
    put(root, section(`Since ${c.old}`, null,
      list(`Gone (${c.gone.length})`, c.gone, "jl-audit-gone"),
      list(`New (${c.new.length})`, c.new, "jl-audit-new"),
      el("p", { class: "jl-note" }, `${c.kept} finding${c.kept === 1 ? "" : "s"} kept`),
      c.verdicts.length ? table({
        id: "jl-audit-verdict-changes",
        columns: [
          { label: "CPU", num: true, value: (v) => v.cpu },
          { label: "before", value: (v) => v.before ?? "-" },
          { label: "now", value: (v) => v.now ?? "-" },
        ],
        rows: c.verdicts,
      }) : null));
  }
}

/** One finding: its line, evidence, why, fix. */
function findingCard(f) {
  return el("article", { class: "jl-finding", dataset: { severity: f.severity, id: f.id, family: f.family } },
    el("h3", null, badge(f.severity), " ", el("code", null, findingKey(f)),
      f.noise_bound ? [" ", el("span", { class: "jl-noise-bound", title: "only one half of the measured window reached the worst figure (on a VM, one stop of the vCPU by the host): the severity and effect are what both halves reached" }, "noise-bound")] : [],
      " ", f.what),
    facts([
      ["CPUs", f.cpus === null ? "the machine" : String(f.cpus)],
      ["evidence", f.evidence.length ? el("ul", { class: "jl-evidence" }, f.evidence.map((e) => el("li", null, el("code", null, e.path), ": ", e.value))) : "-", "evidence"],
      ["why", f.why || "-", "why"],
      ["fix", f.fix ? el("code", { class: "jl-fix" }, f.fix.apply) : "nothing to change on this machine", "fix"],
      ["kind", f.fix ? f.fix.kind : undefined],
      ["check", f.fix ? el("code", null, f.fix.check) : undefined],
      ["reboot", fmtBool(f.needs_reboot), "needs_reboot"],
      ["effect", f.effect_ns === null ? undefined : `up to ${fmtDur(f.effect_ns)}`, "effect_ns"],
    ]));
}

/** The findings by family, with a severity filter. */
export function mountAuditFindings(root, ctx) {
  const r = ctx.report;
  const families = [...new Set(r.findings.map((f) => f.family))].sort((a, b) => {
    const ia = AUDIT_FAMILIES.indexOf(a), ib = AUDIT_FAMILIES.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
  });
  const count = (sev) => r.findings.filter((f) => sev === "all" || f.severity === sev).length;
  let shown = "all";
  const groups = families.map((fam) => {
    const list = r.findings.filter((f) => f.family === fam)
      .sort((a, b) => AUDIT_SEVERITIES.indexOf(a.severity) - AUDIT_SEVERITIES.indexOf(b.severity));
    return el("section", { class: "jl-section jl-family", dataset: { family: fam } }, el("h2", null, `${fam} (${list.length})`), list.map(findingCard));
  });
  const empty = el("p", { class: "jl-not-recorded", hidden: true }, "no finding of this severity");
  const buttons = ["all", ...AUDIT_SEVERITIES].map((sev) => el("button", {
    type: "button", "aria-pressed": String(sev === shown), dataset: { severity: sev },
    on: { click: () => filter(sev) },
  }, `${sev} (${count(sev)})`));
  function filter(sev) {
    shown = sev;
    for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.severity === sev));
    for (const g of groups) {
      let any = false;
      for (const card of g.querySelectorAll(".jl-finding")) {
        const on = sev === "all" || card.dataset.severity === sev;
        card.hidden = !on;
        any ||= on;
      }
      g.hidden = !any;
    }
    empty.hidden = count(sev) > 0;
  }
  put(root, el("div", { class: "jl-choice jl-severity-filter", role: "group", "aria-label": "severity" }, el("span", { class: "jl-note" }, "severity: "), buttons), empty, ...groups);
  return { filter };
}

/** The recommendations, most effective first. */
export function mountAuditRecommendations(root, ctx) {
  const r = ctx.report;
  put(root, section("Recommendations", "ranked by their expected effect: changes on this machine first, then by the most severe finding each removes, its effect and how many findings", r.recommendations.length ? table({
    id: "jl-audit-recs",
    columns: [
      { label: "rank", num: true, value: (x) => x.rank },
      { label: "apply", value: (x) => x.apply, fmt: (v) => el("code", null, v), wrap: true },
      { label: "kind", value: (x) => x.kind },
      { label: "reboot", value: (x) => x.needs_reboot, fmt: fmtBool },
      { label: "check", value: (x) => x.check, fmt: (v) => el("code", null, v), wrap: true },
      { label: "severity", value: (x) => AUDIT_SEVERITIES.length - AUDIT_SEVERITIES.indexOf(x.severity), fmt: (_, x) => badge(x.severity) },
      { label: "effect", num: true, value: (x) => x.effect_ns, fmt: fmtDur },
      { label: "removes", value: (x) => x.resolves.join(", "), wrap: true },
    ],
    rows: r.recommendations,
    rowAttrs: (x) => ({ dataset: { rank: x.rank } }),
  }) : el("p", { class: "jl-not-recorded" }, "nothing to change")));
}

/** What was measured: the latency phases with their blamed spikes, the noise probe. */
export function mountAuditMeasured(root, ctx) {
  const m = ctx.report.measured;
  const rows = m.latency.flatMap((p) => p.cpus.map((s) => ({ p, s })));
  put(root, section("Wake-up latency", "the latency probe (SCHED_FIFO, 1 ms period) on the RT CPUs, idle then under a load", table({
    id: "jl-audit-latency",
    columns: [
      { label: "phase", value: (x) => x.p.load },
      { label: "CPU", num: true, value: (x) => x.s.cpu },
      { label: "samples", num: true, value: (x) => x.s.samples, fmt: fmtCount },
      { label: "min", num: true, value: (x) => x.s.min_ns, fmt: fmtDur },
      { label: "p50", num: true, value: (x) => x.s.p50_ns, fmt: fmtDur },
      { label: "p99", num: true, value: (x) => x.s.p99_ns, fmt: fmtDur },
      { label: "p99.99", num: true, value: (x) => x.s.p99_99_ns, fmt: fmtDur },
      { label: "max", num: true, value: (x) => x.s.max_ns, fmt: fmtDur },
      { label: "max by half", num: true, value: (x) => half(x.p, x.s.cpu)?.max_ns[0], fmt: (v, x) => byHalf(half(x.p, x.s.cpu)?.max_ns), title: "the worst wake-up of the window's first half / second half: a worst case one half alone reached is one stop of the host, not the machine" },
      { label: "missed periods", num: true, value: (x) => x.s.missed_periods, fmt: fmtCount },
    ],
    rows,
  })));
  put(root, section("The worst wake-up of each phase, blamed", "the flight recorder traced sched and irq events during each phase; analyze's blame names what held the CPU between the probe's waking and its switch-in", table({
    id: "jl-audit-blamed",
    columns: [
      { label: "phase", value: (p) => p.load },
      { label: "CPU", num: true, value: (p) => p.blamed?.cpu },
      { label: "latency", num: true, value: (p) => p.blamed?.latency_ns, fmt: fmtDur },
      { label: "at", num: true, value: (p) => p.blamed?.t_ns, fmt: fmtDur, title: "from the start of the trace" },
      { label: "cause", value: (p) => p.blamed?.cause, fmt: (v) => (v ? el("span", { class: "jl-cause" }, v.replace("_", " ")) : "-") },
      { label: "verdict", value: (p) => p.blamed?.verdict ?? p.blame_note, wrap: true },
      { label: "in the trace", value: (p) => p.blamed?.t_ns, fmt: (v, p) => (p.blamed ? timelineLink(p.trace, [p.blamed.t_ns - p.blamed.latency_ns, p.blamed.t_ns]) : "-"), title: "the wake-up in the phase's trace (kept with --html): the cursors on the waking and the switch-in" },
    ],
    rows: m.latency,
    rowAttrs: (p) => ({ dataset: { cause: p.blamed?.cause ?? "" } }),
  })));
  put(root, section("User-space noise", "a thread spinning on the clock on each RT CPU: every gap above the threshold is time taken from it; a recording of the CPU around it says what took each gap", table({
    id: "jl-audit-noise",
    columns: [
      { label: "CPU", num: true, value: (n) => n.cpu },
      { label: "window", num: true, value: (n) => n.window_ns, fmt: fmtDur },
      { label: "noise", num: true, value: (n) => n.noise_ns, fmt: fmtDur },
      { label: "available", num: true, value: (n) => n.available_ppm, fmt: (v) => `${(v / 10000).toFixed(3)} %` },
      { label: "gaps", num: true, value: (n) => n.count, fmt: fmtCount },
      { label: "longest", num: true, value: (n) => n.longest[0]?.ns, fmt: fmtDur },
      { label: "longest by half", num: true, value: (n) => n.halves?.[0]?.longest_ns, fmt: (v, n) => byHalf(n.halves?.length === 2 ? n.halves.map((h) => h.longest_ns) : undefined), title: "the longest gap of the window's first half / second half, each counted alone, without the scheduler's throttling" },
      { label: "traced", num: true, value: (n) => n.traced?.traced_ns, fmt: fmtDur, title: "the time the trace shows something else on the CPU (handlers, softirqs, threads)" },
      { label: "silent gaps", num: true, value: (n) => silent(n)?.ns, fmt: (v, n) => (silent(n) ? `${fmtCount(silent(n).gaps)}, ${fmtDur(v)}` : n.traced ? "none" : "-"), title: "gaps with no event in the trace: the host stopping the vCPU, or SMIs" },
      { label: "preempted", num: true, value: (n) => n.preemptions, fmt: fmtCount },
      { label: "interrupts (most)", value: (n) => n.interrupts.map(([k, c]) => `${k} x${c}`).slice(0, 4).join(", "), wrap: true },
      { label: "trace", value: (n) => n.trace, fmt: (v) => timelineLink(v) },
    ],
    rows: m.noise,
    rowAttrs: (n) => ({ dataset: { cpu: n.cpu } }),
  })));
  const windows = [
    ...m.latency.flatMap((p) => (p.interrupts ?? []).map((c) => ({ window: `latency, ${p.load}`, cpu: c.cpu, ns: p.wall_ns, counts: c.counts }))),
    ...m.noise.map((n) => ({ window: "noise", cpu: n.cpu, ns: n.window_ns, counts: n.interrupts })),
  ];
  const perS = (n, ns) => (n * 1e9) / Math.max(1, ns);
  put(root, section("Interrupts on the RT CPUs", "interrupts and softirqs per second of each measured window (/proc/interrupts and /proc/softirqs before and after)", table({
    id: "jl-audit-interrupts",
    columns: [
      { label: "window", value: (w) => w.window },
      { label: "CPU", num: true, value: (w) => w.cpu },
      { label: "length", num: true, value: (w) => w.ns, fmt: fmtDur },
      { label: "per second", num: true, value: (w) => perS(w.counts.reduce((a, [, c]) => a + c, 0), w.ns), fmt: (v) => v.toFixed(0) },
      { label: "most (per second)", value: (w) => w.counts.slice(0, 4).map(([k, c]) => `${k} ${perS(c, w.ns).toFixed(0)}`).join(", "), wrap: true },
    ],
    rows: windows,
  })));
  const accounted = m.noise.filter((n) => n.traced);
  if (!accounted.length) {
    const notes = m.noise.filter((n) => n.trace_note).map((n) => `CPU ${n.cpu}: ${n.trace_note}`);
    if (notes.length) put(root, el("p", { class: "jl-not-recorded" }, `no trace of the noise windows: ${notes.join("; ")}`));
    return;
  }
  put(root, section("What took the noise probe's gaps", "each gap by what the trace of its CPU shows in it (the kind that took most of it); no events: nothing ran in the kernel, not even an interrupt", table({
    id: "jl-audit-noise-causes",
    columns: [
      { label: "CPU", num: true, value: (x) => x.cpu },
      { label: "cause", value: (x) => x.c.cause, fmt: (v) => el("span", { class: "jl-cause" }, v.replace("_", " ")) },
      { label: "gaps", num: true, value: (x) => x.c.gaps, fmt: fmtCount },
      { label: "time", num: true, value: (x) => x.c.ns, fmt: fmtDur },
      { label: "share of the noise", num: true, value: (x) => x.c.ns / Math.max(1, x.noise), fmt: (v) => `${(v * 100).toFixed(1)} %` },
      { label: "traced in them", num: true, value: (x) => x.c.traced_ns, fmt: fmtDur, title: "the rest of each gap is interrupt entry and exit, or the host" },
    ],
    rows: accounted.flatMap((n) => n.traced.by_cause.map((c) => ({ cpu: n.cpu, noise: n.noise_ns, c }))),
    rowAttrs: (x) => ({ dataset: { cause: x.c.cause } }),
  })));
  put(root, section("The longest gaps", "what ran in each, most time first; a link opens the trace of the window at the gap, the cursors on its ends", table({
    id: "jl-audit-noise-gaps",
    columns: [
      { label: "CPU", num: true, value: (x) => x.cpu },
      { label: "at", num: true, value: (x) => x.g.at_ns, fmt: fmtDur, title: "from the start of the probe's window" },
      { label: "length", num: true, value: (x) => x.g.ns, fmt: fmtDur },
      { label: "cause", value: (x) => x.g.cause, fmt: (v) => el("span", { class: "jl-cause" }, v.replace("_", " ")) },
      { label: "what ran", value: (x) => x.g.what.join(", ") || "-", wrap: true },
      { label: "traced", num: true, value: (x) => x.g.traced_ns, fmt: fmtDur },
      { label: "in the trace", value: (x) => x.g.t_ns, fmt: (v, x) => timelineLink(x.trace, [x.g.t_ns, x.g.t_ns + x.g.ns]) },
    ],
    rows: accounted.flatMap((n) => n.traced.gaps.map((g) => ({ cpu: n.cpu, trace: n.trace, g }))),
    rowAttrs: (x) => ({ dataset: { cause: x.g.cause } }),
  })));
}

/** A latency phase's halves on one CPU (absent in audits from before they were kept). */
function half(p, cpu) {
  return p.halves?.find((h) => h.cpu === cpu);
}

/** Two halves' figures, `first / second`, or `-`. */
function byHalf(ns) {
  return ns ? `${fmtDur(ns[0])} / ${fmtDur(ns[1])}` : "-";
}

/** The noise window's gaps with no event in the trace, when it was traced. */
function silent(n) {
  return n.traced?.by_cause.find((c) => c.cause === "no_events");
}

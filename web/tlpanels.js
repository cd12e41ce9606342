// tlpanels.js: the timeline's panels as HTML: a selection's details (with its wake-up's
// cause chain, hop by hop, as analyze's "IRQ -> task chains" measures it), the run time
// per task in an area, and what a report with `left_out` does not hold.
import { tlDur, tlAbs, tlEsc } from "./tlformat.js";

/** A kernel priority as analyze prints it: `rt 90`, `nice 0`. */
export function tlPrio(p) {
  if (p === 255 || p == null) return "-";
  return p < 100 ? `rt ${99 - p}` : `nice ${p - 120}`;
}

const TL_ENDS = ["preempted", "exited", "still running at the trace's end", "displaced (its switch-out is missing)", "cut by lost events"];
const TL_BEGINS = ["sched_switch", "running at the trace's start", "inferred (its switch-in is missing)"];

/** How a slice ended (flags bits 0-3, docs/html.md). */
export function tlEnded(T, flags) {
  const code = flags & 15;
  if (code < 5) return TL_ENDS[code];
  if (code === 15) return "slept (another state)";
  const st = T.states[code - 5];
  return `slept (${st ?? "?"})`;
}

/** The details of slice `i` of `cpu` (what the panel shows), for the page and for tests. */
export function tlSliceInfo(model, cpu, i, wake) {
  const L = model.lane(cpu);
  const sl = L.slices;
  const k = sl.task[i];
  const t = model.tasks[k] || {};
  const info = {
    kind: "slice", cpu, index: i, task: model.taskLabel(k), taskIndex: k, comm: t.comm, tid: t.tid, tgid: t.tgid ?? null,
    prio: sl.prio[i], prioText: tlPrio(sl.prio[i]), start: sl.start[i], end: sl.end[i], dur: sl.end[i] - sl.start[i],
    startText: `${tlAbs(model.meta, sl.start[i])} s`, durText: tlDur(sl.end[i] - sl.start[i]),
    ended: tlEnded(model.T, sl.flags[i]), began: TL_BEGINS[(sl.flags[i] >> 4) & 3] ?? "?", wake: null,
  };
  if (wake) {
    info.wake = {
      waker: wake.waker, wakerKind: wake.kind, wakerCpu: wake.wakerCpu, lat: wake.lat, latText: tlDur(wake.lat),
      waking: wake.waking, wakingText: `${tlAbs(model.meta, wake.waking)} s`, wakeup: wake.wakeup,
      inferred: wake.inferred, newTask: wake.newTask, hrtimer: wake.hrtimer,
      chain: wake.chain, chainText: wake.chain == null ? null : tlDur(wake.chain),
      irqExitText: wake.chain == null ? null : `${tlAbs(model.meta, wake.switchIn - wake.chain)} s`,
      softirqChain: wake.softirqChain ?? null, softirqChainText: wake.softirqChain == null ? null : tlDur(wake.softirqChain),
      irq: wake.irq, softirq: wake.softirq, wakerSlice: wake.wakerSlice,
      hops: wake.hops.map((h) => ({ from: h.from, to: h.to, lat: h.lat, latText: tlDur(h.lat), t0: h.t0, t1: h.t1 })),
    };
  }
  return info;
}

/** The details of hardirq or softirq span `i` of `cpu`. */
export function tlSpanInfo(model, cpu, kind, i) {
  const L = model.lane(cpu);
  const sp = kind === "irq" ? L.irqs : L.softirqs;
  const info = {
    kind, cpu, index: i, start: sp.start[i], end: sp.end[i], dur: sp.end[i] - sp.start[i],
    startText: `${tlAbs(model.meta, sp.start[i])} s`, durText: tlDur(sp.end[i] - sp.start[i]),
  };
  if (kind === "irq") {
    info.name = `IRQ ${model.irqLabel(sp.irq[i])}`;
    info.depth = sp.depth[i];
  } else {
    info.name = `softirq ${model.softirqLabel(sp.vec[i])}`;
    info.raisedBy = sp.raisedBy[i] ? model.irqLabel(sp.raisedBy[i] - 1) : null;
    info.raise = sp.raise[i] || null;
  }
  return info;
}

function tlRow(k, v) {
  return `<tr><th>${k}</th><td>${v}</td></tr>`;
}

/** The details panel's HTML. */
export function tlDetailsHtml(model, info) {
  if (info.kind !== "slice") {
    let rows = tlRow("CPU", info.cpu) + tlRow("start", info.startText) + tlRow("duration", info.durText);
    if (info.kind === "irq") rows += tlRow("nesting depth", info.depth);
    else {
      rows += tlRow("raised by", info.raisedBy ? `IRQ ${tlEsc(info.raisedBy)}` : "-");
      rows += tlRow("raise → entry", info.raise ? tlDur(info.raise) : "-");
    }
    return `<h3>${tlEsc(info.name)}</h3><table class="tl-kv">${rows}</table>`;
  }
  const pid = info.tgid != null ? info.tgid : "-";
  let html = `<h3><i class="tl-sw" style="background:${model.colours[info.taskIndex]}"></i>${tlEsc(info.comm ?? "?")}</h3>
    <table class="tl-kv" data-kind="slice">
      ${tlRow("tid", info.tid)}${tlRow("pid (tgid)", pid)}${tlRow("priority", `${info.prioText} <span class="tl-dim">(${info.prio === 255 ? "unknown" : info.prio})</span>`)}
      ${tlRow("CPU", info.cpu)}${tlRow("start", info.startText)}${tlRow("duration", info.durText)}
      ${tlRow("began", info.began)}${tlRow("ended", tlEsc(info.ended))}
    </table>`;
  const w = info.wake;
  if (!w) return html + `<p class="tl-dim">No wake-up switched this slice in (preempted earlier, or woken before the trace).</p>`;
  const go = (cpu, kind, index, text) => `<button type="button" class="tl-link" data-go="${cpu}:${kind}:${index}">${text}</button>`;
  let waker = tlEsc(w.waker);
  if (w.wakerKind === "task" && w.wakerSlice >= 0) waker = go(w.wakerCpu, "slice", w.wakerSlice, waker);
  const notes = [w.inferred && "switch-in inferred: an upper bound", w.newTask && "a new task", w.hrtimer && "in a hrtimer callback"].filter(Boolean);
  html += `<h4>Wake-up</h4><table class="tl-kv" data-kind="wake">
    ${tlRow("woken by", waker)}${tlRow("on CPU", w.wakerCpu)}${tlRow("sched_waking", w.wakingText)}
    ${tlRow("latency", `<b>${w.latText}</b> <span class="tl-dim">sched_waking → switch-in</span>`)}
    ${w.wakeup != null ? tlRow("sched_wakeup", `${tlDur(info.start - w.wakeup)} before switch-in`) : ""}
    ${notes.length ? tlRow("note", notes.join("; ")) : ""}
  </table>`;
  html += `<h4>Cause chain</h4><ol class="tl-hops">` +
    w.hops.map((h) => `<li><span>${tlEsc(h.from)} → ${tlEsc(h.to)}</span> <b>${h.latText}</b></li>`).join("") + `</ol>`;
  const spans = [];
  if (w.irq) spans.push(go(w.wakerCpu, "irq", w.irq.index, "the IRQ handler"));
  if (w.softirq) spans.push(go(w.wakerCpu, "softirq", w.softirq.index, "the softirq"));
  if (spans.length) html += `<p class="tl-dim">Go to ${spans.join(", ")}.</p>`;
  if (w.chainText != null) {
    html += `<p class="tl-chain">IRQ → task chain: <b data-chain="${w.chain}">${w.chainText}</b> <span class="tl-dim">(IRQ handler exit at ${w.irqExitText})</span><br><span class="tl-dim">irq_handler_exit → switch-in, as analyze's "IRQ -> task chains" measures it</span></p>`;
  } else if (w.softirqChainText != null) {
    html += `<p class="tl-chain">softirq → task chain: <b data-chain="${w.softirqChain}">${w.softirqChainText}</b><br><span class="tl-dim">softirq_exit → switch-in, as analyze's "softirq -> task chains" measures it</span></p>`;
  }
  return html;
}

/** The run time per task per CPU in an area. */
export function tlAreaHtml(model, meta, stats, t0, t1) {
  const span = t1 - t0;
  const head = stats.cpus.map((c) => `<th>CPU ${c}</th>`).join("");
  const rows = stats.rows.slice(0, 40).map((r) =>
    `<tr><td><i class="tl-sw" style="background:${model.colours[r.task]}"></i>${tlEsc(r.label)}</td>` +
    [...r.perCpu].map((v) => `<td>${v ? tlDur(v) : ""}</td>`).join("") +
    `<td><b>${tlDur(r.total)}</b></td><td>${((100 * r.total) / (span * stats.cpus.length)).toFixed(1)}%</td></tr>`).join("");
  const more = stats.rows.length > 40 ? `<p class="tl-dim">and ${stats.rows.length - 40} more tasks</p>` : "";
  return `<div class="tl-area-head"><b>Area</b> ${tlAbs(meta, t0)} s – ${tlAbs(meta, t1)} s (<b>${tlDur(span)}</b>) on CPU ${stats.cpus.join(", ")}
    <button type="button" data-act="area-zoom">zoom to it (F)</button> <button type="button" data-act="area-clear">clear</button></div>
    <table class="tl-table"><thead><tr><th>task: run time in the area</th>${head}<th>total</th><th>of CPU time</th></tr></thead><tbody>${rows ||
      `<tr><td colspan="${stats.cpus.length + 3}" class="tl-dim">no task ran in the area</td></tr>`}</tbody></table>${more}`;
}

/** What a report with `left_out` does not hold, and how to see it. */
export function tlLeftOutText(meta) {
  const T = meta.timeline;
  const l = T.left_out;
  const after = tlAbs(meta, l.after);
  const end = tlAbs(meta, T.end);
  const file = meta.title || "TRACE";
  return `<b>Not all of the trace is in this timeline.</b> After ${after} s (to ${end} s) it left out ` +
    `${l.slices} task slices, ${l.irqs} IRQ spans, ${l.softirqs} softirq spans and ${l.wakes} wake-ups: ` +
    `the file keeps at most ${l.max_slices} slices and spans (<code>--max-slices</code>). ` +
    `There the timeline draws the overview (busy time and worst wake-up per ${tlDur(T.overview_ns)}); the tables cover the whole trace. ` +
    `To see the rest: a narrower window (<code>jitterlab view ${tlEsc(file)} --from ${after} --to ${end}</code>), ` +
    `fewer CPUs (<code>--cpu LIST</code>), or a higher <code>--max-slices</code>.`;
}

/** `100 us`, `2ms`, `500` (us) as ns; null if not a duration. */
export function tlParseDur(text) {
  const m = /^\s*([\d.]+)\s*(ns|us|µs|ms|s)?\s*$/i.exec(String(text));
  if (!m) return null;
  const v = Number(m[1]);
  if (!Number.isFinite(v)) return null;
  const unit = (m[2] || "us").toLowerCase();
  return v * { ns: 1, us: 1e3, "µs": 1e3, ms: 1e6, s: 1e9 }[unit];
}

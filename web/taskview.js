// taskview.js: the task view, Tracealyzer's actor instance graph. Pick a process (all
// its threads) or a thread on the left; each of its instances (run slices) is a dot at
// its switch-in time, its height the wake-up latency that switched it in or its
// execution time. A click on a dot opens that instance in the timeline.
import { tlModel } from "./tlmodel.js";
import { tlDur, tlAbs, tlEsc, tlTick } from "./tlformat.js";
import { tlStep } from "./tldraw.js";

const TV_PAD = { l: 64, r: 12, t: 12, b: 26 };

/** Per task: instances, run time, the longest instance and the worst wake-up. */
function tvTaskStats(model) {
  const inst = model.instances();
  const n = model.tasks.length;
  // wakes: the instances switched in by a wake-up the trace measured; maxLat counts
  // only those (null without any: no measurement, not a latency of 0).
  const st = model.tasks.map(() => ({ count: 0, run: 0, maxDur: 0, maxLat: null, wakes: 0 }));
  for (let k = 0; k < n; k++) {
    const r = st[k];
    for (let p = inst.offset[k]; p < inst.offset[k + 1]; p++) {
      const L = model.lanes[inst.lane[p]];
      const i = inst.slice[p];
      const d = L.slices.end[i] - L.slices.start[i];
      r.count++;
      r.run += d;
      if (d > r.maxDur) r.maxDur = d;
      if (L.wakeOf[i] >= 0) {
        r.wakes++;
        const lat = L.wakeLat[i];
        if (r.maxLat === null || lat > r.maxLat) r.maxLat = lat;
      }
    }
  }
  return st;
}

/** Processes (by tgid; a task without one is its own), busiest first. */
function tvProcesses(model, stats) {
  const groups = new Map();
  model.tasks.forEach((t, k) => {
    const key = t.tgid != null && t.tgid > 0 ? t.tgid : -1 - k;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { tgid: t.tgid ?? null, tasks: [], run: 0, count: 0 }));
    g.tasks.push(k);
    g.run += stats[k].run;
    g.count += stats[k].count;
  });
  for (const g of groups.values()) {
    g.tasks.sort((a, b) => stats[b].run - stats[a].run);
    const lead = g.tasks.find((k) => model.tasks[k].tid === g.tgid) ?? g.tasks[0];
    g.name = model.tasks[lead].comm;
  }
  return [...groups.values()].filter((g) => g.count > 0).sort((a, b) => b.run - a.run);
}

export function mountTaskView(el, ctx) {
  const model = tlModel(ctx);
  const T = model.T;
  const stats = tvTaskStats(model);
  const procs = tvProcesses(model, stats);
  el.classList.add("tv");
  el.innerHTML = `
    <div class="tv-bar">
      <b class="tv-title"></b>
      <label>y: <select class="tv-y"><option value="lat">wake-up latency</option><option value="dur">execution time</option></select></label>
      <label><input type="checkbox" class="tv-log" checked> log scale</label>
      <button type="button" class="tv-reset" title="The whole trace (double-click the plot)">whole trace</button>
      <span class="tv-count tl-dim"></span>
      <span class="tl-dim" style="margin-left:auto">wheel: zoom time · drag: pan · click a dot: open it in the timeline</span>
    </div>
    <div class="tv-main">
      <div class="tv-list"></div>
      <div class="tv-plot"><canvas></canvas><div class="tl-tip" hidden></div></div>
    </div>`;
  const list = el.querySelector(".tv-list");
  const plot = el.querySelector(".tv-plot");
  const canvas = plot.querySelector("canvas");
  const tip = plot.querySelector(".tl-tip");
  const g = canvas.getContext("2d");
  const st = { tasks: [], label: "", mode: "lat", log: true, t0: 0, t1: Math.max(T.end, 1000), w: 600, h: 420, pts: null };

  list.innerHTML = procs.map((p, pi) => {
    const head = `${tlEsc(p.name)}${p.tgid != null ? ` <span class="tl-dim">pid ${p.tgid}</span>` : ""} <span class="tl-dim">· ${p.tasks.length} thread${p.tasks.length > 1 ? "s" : ""} · ${tlDur(p.run)}</span>`;
    const rows = p.tasks.filter((k) => stats[k].count).map((k) =>
      `<button type="button" class="tv-task" data-task="${k}"><i class="tl-sw" style="background:${model.colours[k]}"></i>${tlEsc(model.taskLabel(k))} <span class="tl-dim">${stats[k].count} inst · ${stats[k].maxLat === null ? "no wake-up measured" : `worst ${tlDur(stats[k].maxLat)}`}</span></button>`).join("");
    return `<details class="tv-proc" data-proc="${pi}"${p.tasks.length > 1 ? "" : " open"}><summary>${head}</summary>${rows}</details>`;
  }).join("") || `<p class="tl-dim" style="padding:6px">No task slice in this trace.</p>`;

  /** Points of the selected tasks: time, value, lane index, slice index, task. */
  function gather() {
    const inst = model.instances();
    let n = 0;
    for (const k of st.tasks) n += inst.offset[k + 1] - inst.offset[k];
    const t = new Float64Array(n), v = new Float64Array(n), lane = new Uint16Array(n), slice = new Uint32Array(n), task = new Uint32Array(n);
    let m = 0, max = 0, min = Infinity;
    for (const k of st.tasks) {
      for (let p = inst.offset[k]; p < inst.offset[k + 1]; p++) {
        const L = model.lanes[inst.lane[p]];
        const i = inst.slice[p];
        const val = st.mode === "lat" ? (L.wakeOf[i] >= 0 ? L.wakes.lat[L.wakeOf[i]] : -1) : L.slices.end[i] - L.slices.start[i];
        if (val < 0) continue;
        t[m] = L.slices.start[i];
        v[m] = val;
        lane[m] = inst.lane[p];
        slice[m] = i;
        task[m] = k;
        if (val > max) max = val;
        if (val > 0 && val < min) min = val;
        m++;
      }
    }
    st.pts = { n: m, t, v, lane, slice, task, max: max || 1, min: Number.isFinite(min) ? min : 1 };
  }

  function yScale() {
    const p = st.pts;
    const H = st.h - TV_PAD.t - TV_PAD.b;
    if (st.log) {
      const lo = Math.log10(Math.max(1, Math.min(p.min, 1000))), hi = Math.log10(p.max * 1.3);
      return (v) => TV_PAD.t + H - ((Math.log10(Math.max(v, 1)) - lo) / (hi - lo || 1)) * H;
    }
    return (v) => TV_PAD.t + H - (v / (p.max * 1.08)) * H;
  }

  function draw() {
    const W = st.w, H = st.h;
    g.clearRect(0, 0, W, H);
    g.font = "11px system-ui, sans-serif";
    g.textBaseline = "middle";
    const pw = W - TV_PAD.l - TV_PAD.r;
    const X = (t) => TV_PAD.l + ((t - st.t0) / (st.t1 - st.t0)) * pw;
    const p = st.pts;
    if (!p) return;
    if (p.n === 0) {
      // Nothing to plot: say why, rather than axes around nothing.
      g.fillStyle = "#555";
      g.textAlign = "center";
      g.fillText(st.mode === "lat"
        ? `no wake-up latency measured for ${st.label}: no sched_waking in the trace switched it in`
        : `no instance of ${st.label} in the trace`, W / 2, H / 2);
      g.fillText(st.mode === "lat" ? "(y: execution time shows its instances)" : "", W / 2, H / 2 + 16);
      g.textAlign = "left";
      const jl = window.jitterlab || (window.jitterlab = {});
      jl.taskviewPainted = performance.now();
      return;
    }
    const Y = yScale();
    // Axes.
    g.strokeStyle = "#999";
    g.fillStyle = "#333";
    g.beginPath();
    g.moveTo(TV_PAD.l, TV_PAD.t);
    g.lineTo(TV_PAD.l, H - TV_PAD.b);
    g.lineTo(W - TV_PAD.r, H - TV_PAD.b);
    const step = tlStep((st.t1 - st.t0) / pw, 120);
    for (let t = Math.ceil(st.t0 / step) * step; t <= st.t1; t += step) {
      const x = Math.round(X(t)) + 0.5;
      g.moveTo(x, H - TV_PAD.b);
      g.lineTo(x, H - TV_PAD.b + 5);
      const label = tlTick(t, step);
      // A tick's label only where it fits whole.
      if (x + 2 + g.measureText(label).width <= W) g.fillText(label, x + 2, H - TV_PAD.b + 14);
    }
    const ticks = [];
    if (st.log) {
      for (let e = 0; e < 12; e++) ticks.push(10 ** e);
    } else {
      const s = tlStep(p.max / 6, 1);
      for (let v = 0; v <= p.max * 1.08; v += s) ticks.push(v);
    }
    g.textAlign = "right";
    for (const v of ticks) {
      const y = Y(v);
      if (y < TV_PAD.t - 1 || y > H - TV_PAD.b + 1) continue;
      g.moveTo(TV_PAD.l - 5, Math.round(y) + 0.5);
      g.lineTo(TV_PAD.l, Math.round(y) + 0.5);
      g.fillText(tlDur(v), TV_PAD.l - 7, y);
    }
    g.textAlign = "left";
    g.stroke();
    g.save();
    g.translate(12, TV_PAD.t + (H - TV_PAD.t - TV_PAD.b) / 2);
    g.rotate(-Math.PI / 2);
    g.textAlign = "center";
    g.fillText(st.mode === "lat" ? "wake-up latency" : "execution time", 0, 0);
    g.restore();
    // Dots, by task colour; many dots go through one pixel buffer per colour.
    g.save();
    g.beginPath();
    g.rect(TV_PAD.l + 1, 0, pw, H - TV_PAD.b);
    g.clip();
    const byTask = new Map();
    for (let i = 0; i < p.n; i++) {
      if (p.t[i] < st.t0 || p.t[i] > st.t1) continue;
      let a = byTask.get(p.task[i]);
      if (!a) byTask.set(p.task[i], (a = []));
      a.push(i);
    }
    const seen = new Uint8Array(Math.ceil(W) * Math.ceil(H));
    for (const [k, idx] of byTask) {
      g.fillStyle = model.colours[k];
      for (const i of idx) {
        const x = X(p.t[i]) | 0, y = Y(p.v[i]) | 0;
        const cell = y * Math.ceil(W) + x;
        if (cell >= 0 && cell < seen.length) {
          if (seen[cell]) continue;
          seen[cell] = 1;
        }
        g.fillRect(x - 1, y - 1, 3, 3);
      }
    }
    g.restore();
    const jl = window.jitterlab || (window.jitterlab = {});
    jl.taskviewPainted = performance.now();
  }

  function resize() {
    const w = Math.max(300, plot.clientWidth - 2);
    const dpr = window.devicePixelRatio || 1;
    st.w = w;
    canvas.style.width = `${w}px`;
    canvas.style.height = `${st.h}px`;
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(st.h * dpr);
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    draw();
  }

  function selectTasks(tasks, label) {
    st.tasks = tasks;
    st.label = label;
    el.querySelector(".tv-title").textContent = label;
    for (const b of list.querySelectorAll(".tv-task")) b.classList.toggle("on", tasks.length === 1 && Number(b.dataset.task) === tasks[0]);
    for (const d of list.querySelectorAll(".tv-proc")) {
      const p = procs[Number(d.dataset.proc)];
      d.classList.toggle("on", tasks.length > 1 && p.tasks.length === tasks.length && p.tasks.every((k) => tasks.includes(k)));
    }
    gather();
    el.querySelector(".tv-count").textContent = `${st.pts.n} instances${st.mode === "lat" ? " with a wake-up" : ""}`;
    draw();
  }

  function nearest(x, y) {
    const p = st.pts;
    if (!p) return -1;
    const pw = st.w - TV_PAD.l - TV_PAD.r;
    const Y = yScale();
    let best = -1, bd = 49;
    for (let i = 0; i < p.n; i++) {
      const dx = TV_PAD.l + ((p.t[i] - st.t0) / (st.t1 - st.t0)) * pw - x;
      if (dx > 7 || dx < -7) continue;
      const dy = Y(p.v[i]) - y;
      const d = dx * dx + dy * dy;
      if (d < bd) {
        bd = d;
        best = i;
      }
    }
    return best;
  }

  function open(i) {
    const p = st.pts;
    const L = model.lanes[p.lane[i]];
    const a = L.slices.start[p.slice[i]];
    const b = L.slices.end[p.slice[i]];
    const w = L.wakeOf[p.slice[i]] >= 0 ? L.wakes.lat[L.wakeOf[p.slice[i]]] : 0;
    const pad = Math.max(b - a, w, 2000) * 1.5;
    ctx.nav?.openTimeline({ t0: a - w - pad, t1: b + pad, cpu: L.cpu, slice: p.slice[i] });
  }

  list.addEventListener("click", (e) => {
    const b = e.target.closest(".tv-task");
    if (b) {
      const k = Number(b.dataset.task);
      selectTasks([k], model.taskLabel(k));
      return;
    }
    const sum = e.target.closest("summary");
    if (sum) {
      const p = procs[Number(sum.parentElement.dataset.proc)];
      selectTasks(p.tasks, `${p.name}${p.tgid != null ? ` (pid ${p.tgid})` : ""}: ${p.tasks.length} thread${p.tasks.length > 1 ? "s" : ""}`);
    }
  });
  el.querySelector(".tv-y").addEventListener("change", (e) => {
    st.mode = e.target.value;
    selectTasks(st.tasks, st.label);
  });
  el.querySelector(".tv-log").addEventListener("change", (e) => {
    st.log = e.target.checked;
    draw();
  });
  el.querySelector(".tv-reset").addEventListener("click", () => {
    st.t0 = 0;
    st.t1 = Math.max(T.end, 1000);
    draw();
  });
  canvas.addEventListener("dblclick", () => {
    st.t0 = 0;
    st.t1 = Math.max(T.end, 1000);
    draw();
  });
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    const pw = st.w - TV_PAD.l - TV_PAD.r;
    const f = Math.min(1, Math.max(0, (e.clientX - r.left - TV_PAD.l) / pw));
    const span = st.t1 - st.t0;
    const at = st.t0 + f * span;
    const ns = Math.max(1000, span * Math.exp(Math.max(-3, Math.min(3, e.deltaY * 0.002))));
    st.t0 = at - f * ns;
    st.t1 = st.t0 + ns;
    draw();
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("mousedown", (e) => {
    drag = { x: e.clientX, t0: st.t0, t1: st.t1, moved: false };
    e.preventDefault();
  });
  window.addEventListener("mousemove", (e) => {
    const r = canvas.getBoundingClientRect();
    if (drag) {
      if (Math.abs(e.clientX - drag.x) > 3) drag.moved = true;
      if (drag.moved) {
        const dt = -((e.clientX - drag.x) / (st.w - TV_PAD.l - TV_PAD.r)) * (drag.t1 - drag.t0);
        st.t0 = drag.t0 + dt;
        st.t1 = drag.t1 + dt;
        draw();
      }
      return;
    }
    if (e.target !== canvas) {
      tip.hidden = true;
      return;
    }
    const i = nearest(e.clientX - r.left, e.clientY - r.top);
    if (i < 0) {
      tip.hidden = true;
      return;
    }
    const p = st.pts;
    const L = model.lanes[p.lane[i]];
    const j = p.slice[i];
    const w = L.wakeOf[j];
    tip.innerHTML = `<b>${tlEsc(model.taskLabel(p.task[i]))}</b> on CPU ${L.cpu}<br>at ${tlAbs(ctx.meta, L.slices.start[j])} s<br>` +
      `ran ${tlDur(L.slices.end[j] - L.slices.start[j])}${w >= 0 ? `, wake-up latency ${tlDur(L.wakes.lat[w])}` : ""}`;
    tip.hidden = false;
    tip.style.left = `${Math.min(e.clientX - r.left + 12, st.w - 250)}px`;
    tip.style.top = `${e.clientY - r.top + 12}px`;
  });
  window.addEventListener("mouseup", (e) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    if (d.moved || e.target !== canvas) return;
    const r = canvas.getBoundingClientRect();
    const i = nearest(e.clientX - r.left, e.clientY - r.top);
    if (i >= 0) open(i);
  });
  new ResizeObserver(() => resize()).observe(plot);

  // The task with the worst wake-up latency first; in a trace without a measured
  // wake-up, the busiest task by its execution times.
  let first = 0;
  stats.forEach((r, k) => {
    const f = stats[first];
    if ((r.maxLat ?? -1) > (f.maxLat ?? -1) || (f.maxLat === null && r.maxLat === null && r.count > f.count)) first = k;
  });
  if (stats.every((r) => r.maxLat === null)) {
    st.mode = "dur";
    el.querySelector(".tv-y").value = "dur";
  }
  if (model.tasks.length) selectTasks([first], model.taskLabel(first));
  resize();

  return {
    el,
    /** Shows tasks: task indices, or { tid } / { tgid }. */
    select(what) {
      let tasks = Array.isArray(what) ? what : [];
      if (what && what.tid != null) tasks = model.tasks.flatMap((t, k) => (t.tid === what.tid ? [k] : []));
      if (what && what.tgid != null) tasks = model.tasks.flatMap((t, k) => (t.tgid === what.tgid ? [k] : []));
      selectTasks(tasks, tasks.length === 1 ? model.taskLabel(tasks[0]) : `${tasks.length} tasks`);
      return st.pts.n;
    },
    setMode(mode) {
      st.mode = mode === "dur" ? "dur" : "lat";
      el.querySelector(".tv-y").value = st.mode;
      selectTasks(st.tasks, st.label);
    },
    /** The selected points' count, and where point i is drawn (for tests). */
    get points() {
      return st.pts ? st.pts.n : 0;
    },
    pointAt(i) {
      const p = st.pts;
      const pw = st.w - TV_PAD.l - TV_PAD.r;
      return { x: TV_PAD.l + ((p.t[i] - st.t0) / (st.t1 - st.t0)) * pw, y: yScale()(p.v[i]), cpu: model.lanes[p.lane[i]].cpu, slice: p.slice[i], value: p.v[i] };
    },
    open,
    shown: () => resize(),
    state: st,
  };
}

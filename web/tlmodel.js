// tlmodel.js: what the timeline and the task view derive from the decoded lanes, once at
// load: each slice's wake-up, the range-max pyramids, task colours; and the queries they
// answer: search, a wake-up's cause chain, run time per task in an area, a task's
// instances. Nothing here draws.
import { ArgMaxPyramid, tlLowerBound, tlUpperBound } from "./pyramid.js";

const tlModels = new WeakMap();

/** The model of `ctx` (built on first use, shared by the timeline and the task view). */
export function tlModel(ctx) {
  let m = tlModels.get(ctx.lanes);
  if (!m) {
    m = new TimelineModel(ctx.meta, ctx.lanes);
    tlModels.set(ctx.lanes, m);
  }
  return m;
}

/** FNV-1a of a string, 32 bits. */
function tlHash(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A task's process key: its tgid, else its comm. */
function tlProcessKey(task) {
  return task.tgid != null && task.tgid > 0 ? `tgid ${task.tgid}` : task.comm;
}

/** A trace's processes, busiest first: { run, tasks } (task indices, busiest first). */
function tlProcesses(tasks, run) {
  const procs = new Map();
  tasks.forEach((t, k) => {
    const key = tlProcessKey(t);
    const p = procs.get(key) ?? { run: 0, tasks: [] };
    p.run += run[k];
    p.tasks.push(k);
    procs.set(key, p);
  });
  const out = [...procs.values()].sort((a, b) => b.run - a.run);
  for (const p of out) p.tasks.sort((a, b) => run[b] - run[a]);
  return out;
}

/**
 * The tasks' colours: a hue per process, the processes ranked by run time and their hues
 * a golden angle (137.5°) apart, so that the busiest processes never share a hue (a hash
 * put two iperf3 processes 4° apart); threads of a process in steps of lightness.
 * `rankOf(p, i)` gives process `p` (the i-th busiest) another rank (tlShareColours).
 */
function tlColours(tasks, run, rankOf = (p, i) => i) {
  const out = new Array(tasks.length);
  const rgb = new Uint8Array(tasks.length * 3);
  tlProcesses(tasks, run).forEach((p, i) => {
    const hue = (rankOf(p, i) * 137.508) % 360;
    p.tasks.forEach((k, j) => {
      const light = 38 + (j % 4) * 8;
      out[k] = `hsl(${hue.toFixed(1)} 62% ${light}%)`;
      rgb.set(tlHslRgb(hue, 0.62, light / 100), k * 3);
    });
  });
  return { css: out, rgb };
}

/**
 * One set of colours for the timelines of a compare page: a process has the same colour
 * in each when it has the same name (its busiest thread's), processes of one name paired
 * busiest first (as the tables pair them), ranked by their run time in all the traces.
 */
export function tlShareColours(models) {
  const keyed = models.map((m) => {
    const seen = new Map();
    return tlProcesses(m.T.tasks, m.run).map((p) => {
      const name = m.T.tasks[p.tasks[0]].comm;
      const n = seen.get(name) ?? 0;
      seen.set(name, n + 1);
      return { key: `${name}\u0000${n}`, run: p.run };
    });
  });
  const joint = new Map();
  for (const list of keyed) for (const p of list) joint.set(p.key, (joint.get(p.key) ?? 0) + p.run);
  const rank = new Map([...joint.entries()].sort((a, b) => b[1] - a[1]).map(([key], i) => [key, i]));
  models.forEach((m, j) => {
    const c = tlColours(m.T.tasks, m.run, (p, i) => rank.get(keyed[j][i].key));
    m.colours = c.css;
    m.rgb = c.rgb;
  });
}

/** HSL (hue in degrees, saturation and lightness in 0..1) as [r, g, b] in 0..255. */
function tlHslRgb(h, s, l) {
  const a = s * Math.min(l, 1 - l);
  const f = (n) => {
    const k = (n + h / 30) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}

/** Durations of spans as f32 (for the pyramids). */
function tlDurations(s) {
  const start = s.start, end = s.end, n = start.length;
  const d = new Float32Array(n);
  let max = 0;
  for (let i = 0; i < n; i++) {
    const v = end[i] - start[i];
    d[i] = v;
    if (v > max) max = v;
  }
  return { d, max };
}

/** A search query's parts: `key` (tid, pid, tgid, irq, comm or none), the value in
 * lower case, and as a number when it is one. */
function tlQuery(q) {
  const m = /^(tid|pid|tgid|irq|comm)\s*[:=]\s*(.+)$/i.exec(q);
  const key = m ? m[1].toLowerCase() : "";
  const val = (m ? m[2] : q).trim();
  return { key, low: val.toLowerCase(), num: /^\d+$/.test(val) ? Number(val) : null };
}

export class TimelineModel {
  constructor(meta, lanes) {
    const T = meta.timeline;
    this.meta = meta;
    this.T = T;
    this.lanes = lanes;
    this.tasks = T.tasks;
    const run = new Float64Array(T.tasks.length);
    this.end = T.end;
    this.byCpu = new Map();
    for (const L of lanes) {
      this.byCpu.set(L.cpu, L);
      const s = L.slices;
      const n = s.start.length;
      const sd = tlDurations(s);
      L.sliceDur = sd.d;
      L.sliceMaxDur = sd.max;
      for (let i = 0; i < n; i++) run[s.task[i]] += sd.d[i];
      // The running total of slice time: busy time over any stretch in two lookups.
      // cum[k] is the time of the first k slices.
      const cum = new Float64Array(n + 1);
      for (let i = 0; i < n; i++) cum[i + 1] = cum[i] + sd.d[i];
      L.busyCum = cum;
      const w = L.wakes;
      const wakeOf = new Int32Array(n).fill(-1);
      const wakeLat = new Float32Array(n);
      const ws = w.slice, wl = w.lat, nw = ws.length;
      for (let k = 0; k < nw; k++) {
        const i = ws[k];
        if (i < n) {
          wakeOf[i] = k;
          wakeLat[i] = wl[k];
        }
      }
      L.wakeOf = wakeOf;
      L.wakeLat = wakeLat;
      L.durPyr = new ArgMaxPyramid(L.sliceDur);
      L.latPyr = new ArgMaxPyramid(L.wakeLat);
      for (const kind of ["irqs", "softirqs"]) {
        const sp = L[kind];
        const dd = tlDurations(sp);
        sp.dur = dd.d;
        sp.maxDur = dd.max;
        sp.pyr = new ArgMaxPyramid(dd.d);
      }
      L.match = null;
      L.irqMatch = null;
      L.softMatch = null;
    }
    const colours = tlColours(T.tasks, run);
    this.colours = colours.css;
    // The same colours as bytes, for the columns drawn as an image (tldraw.js).
    this.rgb = colours.rgb;
    this.run = run;
    this.query = "";
    this.matchCount = 0;
    this.tracks = new Map();
    // The detail columns (wake-up causes, flags, IRQ numbers) come after the first paint.
    this.complete = !lanes.complete;
    this.ready = Promise.resolve(lanes.complete).then(() => {
      this.complete = true;
      // The thread rows' tracks read the wakers' kinds: made again with them.
      this.tracks.clear();
      return this;
    });
    performance.mark("jl:model");
  }

  lane(cpu) {
    return this.byCpu.get(cpu);
  }

  taskLabel(k) {
    const t = this.tasks[k];
    return t ? `${t.comm}-${t.tid}` : `task ${k}`;
  }

  irqLabel(k) {
    const q = this.T.irqs[k];
    return q ? `${q.irq} ${q.name}` : `irq #${k}`;
  }

  softirqLabel(vec) {
    return this.T.softirqs[vec] ?? `vec ${vec}`;
  }

  /**
   * Marks what `query` finds: a comm (substring, any case), `tid:N`, `pid:N` (tgid), a
   * bare number (a tid or a tgid), `irq:N` or an IRQ's name (substring), a softirq's
   * name. Returns the counts and the time it took.
   */
  search(query) {
    const t0 = performance.now();
    const q = String(query ?? "").trim();
    this.query = q;
    const tm = this.taskFlags(q);
    const im = new Uint8Array(this.T.irqs.length);
    const sm = new Uint8Array(256);
    if (q) {
      const { key, low, num } = tlQuery(q);
      if ((key === "irq" || key === "") && this.complete) {
        this.T.irqs.forEach((r, k) => {
          im[k] = (num != null ? r.irq === num : r.name.toLowerCase().includes(low)) ? 1 : 0;
        });
        if (num == null) {
          this.T.softirqs.forEach((name, v) => {
            sm[v] = name.toLowerCase() === low ? 1 : 0;
          });
        }
      }
    }
    this.taskMatch = tm;
    const anyT = tm.includes(1), anyI = im.includes(1), anyS = sm.includes(1);
    let total = 0;
    const perCpu = [];
    for (const L of this.lanes) {
      L.match = anyT ? tlScanFlags(L.slices.task, tm) : null;
      L.irqMatch = anyI ? tlScanFlags(L.irqs.irq, im) : null;
      L.softMatch = anyS ? tlScanFlags(L.softirqs.vec, sm) : null;
      const c = (L.match?.length ?? 0) + (L.irqMatch?.length ?? 0) + (L.softMatch?.length ?? 0);
      perCpu.push({ cpu: L.cpu, slices: L.match?.length ?? 0, irqs: L.irqMatch?.length ?? 0, softirqs: L.softMatch?.length ?? 0 });
      total += c;
    }
    this.matchCount = total;
    const tasksFound = [];
    tm.forEach((v, k) => v && tasksFound.push(this.taskLabel(k)));
    const irqsFound = [];
    im.forEach((v, k) => v && irqsFound.push(this.irqLabel(k)));
    return { query: q, count: total, cpus: perCpu, tasks: tasksFound, irqs: irqsFound, ms: performance.now() - t0 };
  }

  /**
   * The next (dir 1) or previous (dir -1) match after time `t` (and after slice `after`
   * on `cpu` at that time): { cpu, kind, index, start } or null.
   */
  nextMatch(t, dir, cur) {
    let best = null;
    for (const L of this.lanes) {
      for (const [kind, M, sp] of [["slice", L.match, L.slices], ["irq", L.irqMatch, L.irqs], ["softirq", L.softMatch, L.softirqs]]) {
        if (!M || !M.length) continue;
        const st = sp.start;
        let j;
        if (dir > 0) {
          j = tlFirstMatch(M, st, t, true);
          while (j < M.length && cur && cur.cpu === L.cpu && cur.kind === kind && st[M[j]] === t && M[j] <= cur.index) j++;
          if (j >= M.length) continue;
        } else {
          j = tlFirstMatch(M, st, t, false) - 1;
          while (j >= 0 && cur && cur.cpu === L.cpu && cur.kind === kind && st[M[j]] === t && M[j] >= cur.index) j--;
          if (j < 0) continue;
        }
        const s = st[M[j]];
        if (!best || (dir > 0 ? s < best.start : s > best.start)) best = { cpu: L.cpu, kind, index: M[j], start: s };
      }
    }
    return best;
  }

  /** The slice of `cpu` running at `t`, or -1. */
  sliceAt(cpu, t) {
    const L = this.lane(cpu);
    if (!L) return -1;
    const i = tlUpperBound(L.slices.start, t) - 1;
    return i >= 0 && L.slices.end[i] >= t ? i : -1;
  }

  /** The innermost span of `sp` (irqs or softirqs) containing `t`, or -1. */
  spanAt(sp, t) {
    let best = -1;
    const hi = tlUpperBound(sp.start, t);
    for (let i = hi - 1; i >= 0 && i >= hi - 16; i--) {
      if (sp.start[i] <= t && sp.end[i] >= t && (best < 0 || sp.start[i] > sp.start[best])) best = i;
    }
    return best;
  }

  /**
   * The wake-up that switched in slice `i` of `cpu`, with its cause chain as the page
   * draws it (docs/html.md): the hardirq span on waker_cpu that ended at switch-in minus
   * irq_exit, the softirq span there containing the sched_waking, the sched_waking, the
   * switch-in. Each hop has its latency; `chain` is analyze's IRQ -> task chain latency.
   */
  wakeOf(cpu, i) {
    const L = this.lane(cpu);
    if (!L || i < 0 || i >= L.wakeOf.length || L.wakeOf[i] < 0 || !this.complete) return null;
    const k = L.wakeOf[i];
    const w = L.wakes;
    const switchIn = L.slices.start[i];
    const lat = w.lat[k];
    const flags = w.flags[k];
    const waking = switchIn - lat;
    const wakerCpu = w.wakerCpu[k];
    const kind = ["task", "hardirq", "softirq"][w.waker[k]] ?? "task";
    const id = w.wakerId[k];
    const WL = this.lane(wakerCpu);
    const out = {
      index: k, lat, switchIn, waking, wakerCpu, kind, flags,
      inferred: !!(flags & 1), newTask: !!(flags & 2), hrtimer: !!(flags & 4),
      wakeup: flags & 16 ? switchIn - w.wakeup[k] : null,
      irqExitLat: flags & 8 ? w.irqExit[k] : null,
      waker: "", irq: null, softirq: null, wakerSlice: -1, hops: [],
    };
    if (kind === "task") {
      const t = this.tasks.findIndex((x) => x.tid === id);
      out.waker = t >= 0 ? this.taskLabel(t) : `tid ${id}`;
      if (WL) out.wakerSlice = this.sliceAt(wakerCpu, waking);
    } else if (kind === "hardirq") {
      out.waker = id ? `hardirq ${this.irqLabel(id - 1)}` : "hardirq (unknown IRQ, e.g. the local timer)";
    } else {
      const vec = w.vec[k];
      out.waker = `softirq ${vec === 255 ? "?" : this.softirqLabel(vec)}` + (id ? ` raised by IRQ ${this.irqLabel(id - 1)}` : "");
    }
    if (WL && kind !== "task") {
      // The hardirq span: the one that ended at switch-in minus irq_exit.
      if (out.irqExitLat != null) {
        const exit = switchIn - out.irqExitLat;
        const sp = WL.irqs;
        const hi = tlUpperBound(sp.start, exit);
        let best = -1;
        for (let j = hi - 1; j >= 0 && j >= hi - 64; j--) {
          if (sp.end[j] === exit) {
            best = j;
            break;
          }
          if (best < 0 || Math.abs(sp.end[j] - exit) < Math.abs(sp.end[best] - exit)) best = j;
        }
        if (best >= 0) out.irq = { index: best, start: sp.start[best], end: sp.end[best], exact: sp.end[best] === exit };
        out.irqExit = exit;
      } else if (kind === "hardirq") {
        const j = this.spanAt(WL.irqs, waking);
        if (j >= 0) out.irq = { index: j, start: WL.irqs.start[j], end: WL.irqs.end[j], exact: true };
      }
      if (kind === "softirq") {
        const j = this.spanAt(WL.softirqs, waking);
        if (j >= 0) out.softirq = { index: j, start: WL.softirqs.start[j], end: WL.softirqs.end[j] };
      }
    }
    const hops = out.hops;
    const exit = out.irqExit ?? (out.irq ? out.irq.end : null);
    if (kind === "softirq") {
      if (exit != null && out.softirq) {
        hops.push({ from: "IRQ handler exit", to: "softirq entry", t0: exit, t1: out.softirq.start, lane0: "irq", lane1: "softirq" });
        hops.push({ from: "softirq entry", to: "sched_waking", t0: out.softirq.start, t1: waking, lane0: "softirq", lane1: "softirq" });
      } else if (exit != null) {
        hops.push({ from: "IRQ handler exit", to: "sched_waking", t0: exit, t1: waking, lane0: "irq", lane1: "softirq" });
      } else if (out.softirq) {
        hops.push({ from: "softirq entry", to: "sched_waking", t0: out.softirq.start, t1: waking, lane0: "softirq", lane1: "softirq" });
      }
      hops.push({ from: "sched_waking", to: "switch-in", t0: waking, t1: switchIn, lane0: "softirq", lane1: "task", cross: true });
      // What analyze's "softirq -> task chains" measure when no traced IRQ raised it.
      if (out.softirq && out.softirq.end <= switchIn) {
        hops.push({ from: "softirq exit", to: "switch-in", t0: out.softirq.end, t1: switchIn, lane0: "softirq", lane1: "task", cross: true });
        if (exit == null) out.softirqChain = switchIn - out.softirq.end;
      }
    } else if (kind === "hardirq") {
      if (out.irq) hops.push({ from: "IRQ handler entry", to: "sched_waking", t0: out.irq.start, t1: waking, lane0: "irq", lane1: "irq" });
      hops.push({ from: "sched_waking", to: "switch-in", t0: waking, t1: switchIn, lane0: "irq", lane1: "task", cross: true });
      if (exit != null) hops.push({ from: "IRQ handler exit", to: "switch-in", t0: exit, t1: switchIn, lane0: "irq", lane1: "task", cross: true });
    } else {
      hops.push({ from: "sched_waking", to: "switch-in", t0: waking, t1: switchIn, lane0: "task", lane1: "task", cross: true });
    }
    for (const h of hops) h.lat = h.t1 - h.t0;
    out.chain = out.irqExitLat;
    return out;
  }

  /** Run time per task per CPU in [t0, t1] on `cpus` (all when null), most first. */
  areaStats(t0, t1, cpus) {
    const rows = new Map();
    const lanes = this.lanes.filter((L) => !cpus || cpus.includes(L.cpu));
    lanes.forEach((L, li) => {
      const s = L.slices;
      let i = Math.max(0, tlLowerBound(s.start, t0) - 1);
      const hi = tlLowerBound(s.start, t1);
      const acc = new Float64Array(this.tasks.length);
      for (; i < hi; i++) {
        const a = s.start[i] > t0 ? s.start[i] : t0;
        const b = s.end[i] < t1 ? s.end[i] : t1;
        if (b > a) acc[s.task[i]] += b - a;
      }
      acc.forEach((v, k) => {
        if (!v) return;
        let r = rows.get(k);
        if (!r) rows.set(k, (r = { task: k, label: this.taskLabel(k), perCpu: new Float64Array(lanes.length), total: 0 }));
        r.perCpu[li] = v;
        r.total += v;
      });
    });
    return { cpus: lanes.map((L) => L.cpu), rows: [...rows.values()].sort((a, b) => b.total - a.total), span: t1 - t0 };
  }

  /**
   * Every task's instances (slices), grouped by task: `order` holds (lane index << 0) in
   * `lane` and the slice index in `slice`, task k's at [offset[k], offset[k + 1]).
   */
  /** Which tasks `query` finds (the search's rules for tasks), a flag per task. */
  taskFlags(query) {
    const tasks = this.tasks;
    const tm = new Uint8Array(tasks.length);
    const q = String(query ?? "").trim();
    if (!q) return tm;
    const { key, low, num } = tlQuery(q);
    tasks.forEach((t, k) => {
      if (key === "tid") tm[k] = t.tid === num ? 1 : 0;
      else if (key === "pid" || key === "tgid") tm[k] = t.tgid === num ? 1 : 0;
      else if (key === "comm") tm[k] = t.comm.toLowerCase().includes(low) ? 1 : 0;
      else if (key === "") tm[k] = num != null ? (t.tid === num || t.tgid === num ? 1 : 0) : t.comm.toLowerCase().includes(low) ? 1 : 0;
    });
    return tm;
  }

  /** The task indices `query` finds. */
  tasksMatching(query) {
    const out = [];
    this.taskFlags(query).forEach((v, k) => v && out.push(k));
    return out;
  }

  /** The task indices the last search found. */
  matchedTasks() {
    const out = [];
    if (this.taskMatch) this.taskMatch.forEach((v, k) => v && out.push(k));
    return out;
  }

  /**
   * Task `k`'s instances in time order, for its thread row: start, end, the CPU, the
   * lane and slice index, the wake-up latency that switched it in (-1: none measured),
   * the waking's time and the waker's kind (0 a task, 1 a hardirq, 2 a softirq).
   */
  track(k) {
    let t = this.tracks.get(k);
    if (t) return t;
    const inst = this.instances();
    const a = inst.offset[k], n = inst.offset[k + 1] - a;
    const order = Array.from({ length: n }, (_, j) => a + j);
    const startOf = (p) => this.lanes[inst.lane[p]].slices.start[inst.slice[p]];
    order.sort((x, y) => startOf(x) - startOf(y));
    t = {
      n, start: new Float64Array(n), end: new Float64Array(n), cpu: new Uint16Array(n), lane: new Uint16Array(n),
      slice: new Uint32Array(n), lat: new Float64Array(n), waking: new Float64Array(n), waker: new Uint8Array(n),
    };
    order.forEach((p, j) => {
      const L = this.lanes[inst.lane[p]], i = inst.slice[p];
      t.start[j] = L.slices.start[i];
      t.end[j] = L.slices.end[i];
      t.cpu[j] = L.cpu;
      t.lane[j] = inst.lane[p];
      t.slice[j] = i;
      const w = L.wakeOf[i];
      t.lat[j] = w >= 0 ? L.wakes.lat[w] : -1;
      t.waking[j] = w >= 0 ? L.slices.start[i] - L.wakes.lat[w] : 0;
      t.waker[j] = w >= 0 && this.complete ? L.wakes.waker[w] : 0;
    });
    t.latPyr = new ArgMaxPyramid(Float32Array.from(t.lat));
    this.tracks.set(k, t);
    return t;
  }

  instances() {
    if (this._inst) return this._inst;
    const nt = this.tasks.length;
    const offset = new Uint32Array(nt + 1);
    for (const L of this.lanes) for (const k of L.slices.task) offset[k + 1]++;
    for (let k = 0; k < nt; k++) offset[k + 1] += offset[k];
    const total = offset[nt];
    const lane = new Uint16Array(total);
    const slice = new Uint32Array(total);
    const fill = offset.slice(0, nt);
    this.lanes.forEach((L, li) => {
      const task = L.slices.task;
      for (let i = 0; i < task.length; i++) {
        const p = fill[task[i]]++;
        lane[p] = li;
        slice[p] = i;
      }
    });
    this._inst = { offset, lane, slice };
    return this._inst;
  }
}

/** Indices of `col` whose value `flag` marks. */
function tlScanFlags(col, flag) {
  const n = col.length;
  let c = 0;
  for (let i = 0; i < n; i++) c += flag[col[i]];
  const out = new Uint32Array(c);
  if (!c) return out;
  let k = 0;
  for (let i = 0; i < n; i++) if (flag[col[i]]) out[k++] = i;
  return out;
}

/** In match list `M` of spans starting at `st`: the first starting at or after (`ge`) or after `t`. */
function tlFirstMatch(M, st, t, ge) {
  let lo = 0, hi = M.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ge ? st[M[mid]] < t : st[M[mid]] <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

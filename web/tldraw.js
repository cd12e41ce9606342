// tldraw.js: draws the timeline on a canvas from the model and the view, and says what is
// under a point. Each pixel column shows the longest interval it covers (a range-max
// query on the lane's pyramid) and the worst wake-up switching in within it, so nothing
// worst is hidden at any zoom; runs of columns showing the same interval are one rect.
import { tlLowerBound, tlUpperBound } from "./pyramid.js";
import { tlDur, tlTick } from "./tlformat.js";

/** The layout, in CSS pixels. */
export const TL = {
  axisH: 26,
  markH: 14,
  gutter: 96,
  pad: 3,
  irqH: 9,
  softH: 9,
  taskH: 24,
  loadH: 10,
  latH: 18,
  gap: 9,
};
TL.headH = TL.axisH + TL.markH;

/**
 * A timeline's row heights: its slices' and its wake-up strip's, which it fits to the
 * window (each timeline its own: a compare page has two), and the whole row's.
 */
export function tlRows(taskH = TL.taskH, latH = TL.latH) {
  return { taskH, latH, rowH: TL.pad + TL.irqH + 1 + TL.softH + 1 + taskH + 1 + TL.loadH + 1 + latH + TL.gap };
}

/** The top of row `row` (CPU rows, then thread rows) on the canvas of state `s`. */
export function tlRowTop(s, row) {
  return TL.headH + row * s.rows.rowH - s.scrollTop;
}

/** The sub-lanes of a row of heights `rows` whose top is `y`: [top, height] each. */
export function tlRowLayout(y, rows) {
  const irq = y + TL.pad;
  const soft = irq + TL.irqH + 1;
  const task = soft + TL.softH + 1;
  const load = task + rows.taskH + 1;
  const lat = load + TL.loadH + 1;
  return { top: y, irq: [irq, TL.irqH], softirq: [soft, TL.softH], task: [task, rows.taskH], load: [load, TL.loadH], lat: [lat, rows.latH], bottom: lat + rows.latH };
}

/** Wake-up latencies on the strip's log scale: 1 us at the bottom, 10 ms at the top. */
const TL_LAT_LO = Math.log10(1e3);
const TL_LAT_HI = Math.log10(1e7);
export function tlLatHeight(lat, h) {
  if (!(lat > 0)) return 0;
  const f = (Math.log10(Math.max(lat, 100)) - TL_LAT_LO) / (TL_LAT_HI - TL_LAT_LO);
  return Math.max(2, Math.min(h, Math.round(f * h)));
}

const TL_IRQ_COLOUR = "#b8323a";
const TL_SOFT_COLOUR = "#d9822b";

/** Reusable per-column buffers. */
class TlCols {
  constructor(w) {
    this.w = w;
    this.rep = new Int32Array(w);
    this.cnt = new Uint32Array(w);
    this.lat = new Int32Array(w);
    this.hit = new Uint8Array(w);
    this.first = new Int32Array(w);
    this.busy = new Float32Array(w);
  }
}
let tlColsBuf = null;
function tlCols(w) {
  if (!tlColsBuf || tlColsBuf.w < w) tlColsBuf = new TlCols(w);
  return tlColsBuf;
}

/** The first index >= `from` whose start is >= `t`, galloping from `from`. */
function tlGallop(start, t, from) {
  const n = start.length;
  if (from >= n || start[from] >= t) return from;
  let step = 1;
  let lo = from;
  while (lo + step < n && start[lo + step] < t) {
    lo += step;
    step *= 2;
  }
  return tlLowerBound(start, t, lo + 1, Math.min(n, lo + step + 1));
}

/** Whether sorted index list `M` holds `i`. */
function tlHas(M, i) {
  const k = tlLowerBound(M, i);
  return k < M.length && M[k] === i;
}

/**
 * tlScan for a lane drawn in one colour with no search matches (hardirqs, softirqs): only
 * whether each column shows something matters (`c.rep[px] >= 0`, with `c.cnt`), which is
 * what tlScan says, but the range-max query of a column is made only when a later empty
 * column needs to know whether the longest interval of an earlier one reaches into it
 * (columns further back than `maxDur` cannot). Zoomed out, that is rarely.
 */
export function tlScanShown(sp, dur, pyr, maxDur, t0, npp, w, c) {
  const start = sp.start, end = sp.end;
  let i = tlLowerBound(start, t0);
  let coverEnd = -Infinity;
  for (let k = i - 1; k >= 0 && k >= i - 8; k--) if (end[k] > coverEnd) coverEnd = end[k];
  const first = c.first;
  let folded = 0; // columns before this one have their longest interval's end in coverEnd
  for (let px = 0; px < w; px++) {
    const ta = t0 + px * npp;
    const tb = ta + npp;
    const j = tlGallop(start, tb, i);
    first[px] = i;
    c.cnt[px] = j - i;
    if (j > i) {
      c.rep[px] = i;
      if (end[j - 1] > coverEnd) coverEnd = end[j - 1];
    } else {
      if (coverEnd <= ta) {
        // Fold in the columns whose longest interval may still reach here.
        let q = px - 1;
        while (q >= folded && t0 + (q + 2) * npp + maxDur > ta) q--;
        for (q++; q < px; q++) {
          const a = first[q], n = c.cnt[q];
          if (n > 1) {
            const idx = pyr.argmax(a, a + n);
            if (end[idx] > coverEnd) coverEnd = end[idx];
          }
        }
        folded = px;
      }
      c.rep[px] = coverEnd > ta ? 0 : -1;
    }
    i = j;
  }
}

/**
 * Fills `c.rep[px]` with the interval each of `w` columns shows (-1 none), `c.cnt` with
 * how many start in it, `c.lat` (with `latPyr`) the slice of the worst wake-up switching
 * in in it, `c.hit` whether a match (`M`) is in it; with `cum` (the lane's running total
 * of interval durations, `cum[k]` the sum of the first k), `c.busy` the fraction of each
 * column the intervals cover.
 */
export function tlScan(sp, dur, pyr, latPyr, M, t0, npp, w, c, cum) {
  const start = sp.start, end = sp.end;
  let i = tlLowerBound(start, t0);
  // Time covered before `t`, by the intervals starting before index `j` (start[j-1] < t).
  const covered = (j, t) => (j > 0 ? cum[j - 1] + Math.min(Math.max(t - start[j - 1], 0), end[j - 1] - start[j - 1]) : 0);
  let before = cum ? covered(i, t0) : 0;
  let cover = -1;
  let coverEnd = -Infinity;
  for (let k = i - 1; k >= 0 && k >= i - 8; k--) {
    if (end[k] > coverEnd) {
      cover = k;
      coverEnd = end[k];
    }
  }
  let mi = M ? tlLowerBound(M, i) : 0;
  for (let px = 0; px < w; px++) {
    const ta = t0 + px * npp;
    const tb = ta + npp;
    const j = tlGallop(start, tb, i);
    let idx = -1;
    if (j > i) idx = j - i === 1 ? i : pyr.argmax(i, j);
    if (cover >= 0 && coverEnd > ta && (idx < 0 || dur[cover] > dur[idx])) idx = cover;
    c.rep[px] = idx;
    c.cnt[px] = j - i;
    if (cum) {
      const upto = covered(j, tb);
      c.busy[px] = Math.min(1, Math.max(0, (upto - before) / npp));
      before = upto;
    }
    if (latPyr) c.lat[px] = j > i ? (j - i === 1 ? i : latPyr.argmax(i, j)) : -1;
    if (M) {
      while (mi < M.length && M[mi] < i) mi++;
      c.hit[px] = (mi < M.length && M[mi] < j) || (idx >= 0 && idx < i && tlHas(M, idx)) ? 1 : 0;
    }
    if (j > i) {
      if (end[j - 1] > coverEnd) {
        cover = j - 1;
        coverEnd = end[j - 1];
      }
      if (idx >= i && end[idx] > coverEnd) {
        cover = idx;
        coverEnd = end[idx];
      }
    }
    i = j;
  }
}

let tlHatch = null;
function tlHatchPattern(ctx) {
  if (tlHatch) return tlHatch;
  const c = document.createElement("canvas");
  c.width = c.height = 8;
  const g = c.getContext("2d");
  g.strokeStyle = "rgba(90,90,90,0.55)";
  g.lineWidth = 1.2;
  g.beginPath();
  g.moveTo(0, 8);
  g.lineTo(8, 0);
  g.moveTo(-2, 2);
  g.lineTo(2, -2);
  g.moveTo(6, 10);
  g.lineTo(10, 6);
  g.stroke();
  tlHatch = ctx.createPattern(c, "repeat");
  return tlHatch;
}

/** A tick step of the 1-2-5 series giving about `px` pixels between ticks. */
export function tlStep(npp, px = 110) {
  const raw = npp * px;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/**
 * Draws the whole timeline. `s` is the timeline's state: model, view {t0, t1}, width
 * and height (CSS px), scrollTop, selection, cursors, area, threshold (ns). Returns the
 * tasks in view (task index -> pixel columns).
 */
export function tlDraw(ctx, s) {
  const { model, view } = s;
  const W = s.width, H = s.height;
  const plotW = Math.max(1, Math.floor(W - TL.gutter));
  const npp = (view.t1 - view.t0) / plotW;
  const X = (t) => TL.gutter + (t - view.t0) / npp;
  ctx.clearRect(0, 0, W, H);
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  const legend = new Map();
  const c = tlCols(plotW);
  const T = model.T;
  const leftOut = T.left_out;

  // Lanes (clipped below the header).
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, TL.headH, W, H - TL.headH);
  ctx.clip();
  const drawLanes = (g) => {
    model.lanes.forEach((L, row) => {
      const y = tlRowTop(s, row);
      if (y + s.rows.rowH < TL.headH || y > H) return;
      const R = tlRowLayout(y, s.rows);
      tlDrawRow(g, s, L, R, c, plotW, npp, X, legend);
    });
    (s.pins ?? []).forEach((k, j) => {
      const y = tlRowTop(s, model.lanes.length + j);
      if (y + s.rows.rowH < TL.headH || y > H) return;
      tlDrawThreadRow(g, s, k, tlRowLayout(y, s.rows), plotW, npp, X);
    });
    if (leftOut) tlDrawLeftOut(g, s, plotW, npp, X);
  };
  const kept = s.kept;
  if (kept && view.t0 === kept.t0 && view.t1 === kept.t1) {
    // The whole-trace view (fit, and the first paint): its lanes are kept as an image
    // and copied while nothing they show has changed.
    const key = tlKeptKey(ctx, s);
    if (!kept.key || !tlSameKey(kept.key, key)) {
      if (!kept.canvas) kept.canvas = document.createElement("canvas");
      const dpr = key[0];
      kept.canvas.width = Math.round(W * dpr);
      kept.canvas.height = Math.round(H * dpr);
      const g = kept.canvas.getContext("2d");
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.font = ctx.font;
      g.textBaseline = ctx.textBaseline;
      drawLanes(g);
      kept.key = key;
      kept.legend = legend;
    }
    ctx.drawImage(kept.canvas, 0, 0, W, H);
    tlDrawChain(ctx, s, X);
    ctx.restore();
    return tlDrawHeader(ctx, s, plotW, npp, X, H, kept.legend);
  }
  drawLanes(ctx);
  tlDrawChain(ctx, s, X);
  ctx.restore();
  return tlDrawHeader(ctx, s, plotW, npp, X, H, legend);
}

/** Header: axis, markers, then the cursors and the area across everything. */
function tlDrawHeader(ctx, s, plotW, npp, X, H, legend) {
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, s.width, TL.headH);
  tlDrawAxis(ctx, s, plotW, npp, X);
  tlDrawMarkers(ctx, s, X, H);
  tlDrawCursors(ctx, s, X, H);
  return legend;
}

/**
 * What the kept whole-trace lanes depend on besides the view: pixel ratio, size, scroll,
 * threshold, the selection and each lane's search matches (compared by identity).
 */
function tlKeptKey(ctx, s) {
  const sel = s.sel;
  const key = [ctx.getTransform().a, s.width, s.height, s.scrollTop, s.threshold, sel ? sel.cpu : null, sel ? sel.kind : null, sel ? sel.index : null, s.rows.taskH, s.rows.latH, s.model.complete, (s.pins ?? []).join(",")];
  for (const L of s.model.lanes) key.push(L.match, L.irqMatch, L.softMatch);
  return key;
}

function tlSameKey(a, b) {
  return a.length === b.length && a.every((v, k) => v === b[k]);
}

function tlDrawRow(ctx, s, L, R, c, plotW, npp, X, legend) {
  const { model, view } = s;
  const T = model.T;
  const x0 = TL.gutter;
  // Gutter labels.
  ctx.fillStyle = "#222";
  ctx.font = "bold 12px system-ui, sans-serif";
  ctx.fillText(`CPU ${L.cpu}`, 6, R.task[0] + R.task[1] / 2);
  ctx.font = "10px system-ui, sans-serif";
  ctx.fillStyle = "#777";
  ctx.fillText("hardirq", 6, R.irq[0] + R.irq[1] / 2);
  ctx.fillText("softirq", 6, R.softirq[0] + R.softirq[1] / 2);
  ctx.fillText("wake-up", 6, R.lat[0] + R.lat[1] / 2);
  ctx.font = "9px system-ui, sans-serif";
  ctx.fillText("load", 6, R.load[0] + R.load[1] / 2);
  ctx.font = "11px system-ui, sans-serif";
  tlRowBackground(ctx, R, x0, plotW, "#f4f5f7");
  // Idle between the CPU's first and last event.
  if (L.first != null) {
    const a = Math.max(X(L.first), x0), b = Math.min(X(L.last), x0 + plotW);
    if (b > a) {
      ctx.fillStyle = "#c9ccd1";
      ctx.fillRect(a, R.task[0] + R.task[1] / 2 - 0.5, b - a, 1);
    }
  }
  const limit = T.left_out ? T.left_out.after : Infinity;
  const plotEnd = Math.min(plotW, Math.ceil(X(limit) - x0));
  const w = Math.max(0, plotEnd);
  // Hardirq and softirq spans.
  for (const [kind, lane, colour, M] of [["irqs", R.irq, TL_IRQ_COLOUR, L.irqMatch], ["softirqs", R.softirq, TL_SOFT_COLOUR, L.softMatch]]) {
    const sp = L[kind];
    if (!sp.start.length || !w) continue;
    if (M) tlScan(sp, sp.dur, sp.pyr, null, M, view.t0, npp, w, c);
    else tlScanShown(sp, sp.dur, sp.pyr, sp.maxDur, view.t0, npp, w, c);
    ctx.fillStyle = colour;
    tlRuns(c, w, (a, b) => ctx.fillRect(x0 + a, lane[0], b - a, lane[1]));
    if (M) tlHits(ctx, c, w, x0, lane[0] - 1, 2);
  }
  // Task slices.
  const sl = L.slices;
  if (sl.start.length && w) {
    tlScan(sl, L.sliceDur, L.durPyr, L.latPyr, L.match, view.t0, npp, w, c, L.busyCum);
    // A column's shade is how busy the CPU was in it: its longest slice's colour at the
    // opacity of the busy fraction (in steps of 1/32; a faint floor keeps a lone short
    // slice visible), so thousands of 119 ns slices on an idle CPU read as idle, not as
    // a solid block.
    const level = (px) => {
      const b = c.busy[px];
      return b >= 0.985 ? 32 : Math.max(2, Math.round(b * 32));
    };
    const byColour = new Map();
    const labels = [];
    let px = 0;
    while (px < w) {
      const idx = c.rep[px];
      const lv = idx >= 0 ? level(px) : 0;
      let e = px + 1;
      while (e < w && c.rep[e] === idx && (idx < 0 || level(e) === lv)) e++;
      if (idx >= 0) {
        const task = sl.task[idx];
        legend.set(task, (legend.get(task) || 0) + (e - px));
        const key = task * 64 + lv;
        let runs = byColour.get(key);
        if (!runs) byColour.set(key, (runs = []));
        const wide = e - px >= 4 && c.cnt[px] <= 1;
        runs.push(px, wide ? e - px - 1 : e - px);
        if (e - px >= 46 && lv === 32) labels.push(px, e - px, idx);
      }
      px = e;
    }
    const load = c.busy.slice(0, w);
    // The columns as a one-pixel-tall image stretched over the lane: a path of a rect
    // per run cost Chromium's raster its height times its edges, so a lane of 240 px
    // took a frame of 50 ms where this takes 17 (BENCHMARKS "view").
    const im = tlColumnImage(w);
    const px4 = im.data.data;
    px4.fill(0);
    for (const [key, runs] of byColour) {
      const task = Math.floor(key / 64);
      const alpha = Math.round(((key % 64) / 32) * 255);
      const r = model.rgb[task * 3], gg = model.rgb[task * 3 + 1], b = model.rgb[task * 3 + 2];
      for (let k = 0; k < runs.length; k += 2) {
        for (let p = runs[k], e = runs[k] + runs[k + 1]; p < e; p++) {
          const o = p * 4;
          px4[o] = r;
          px4[o + 1] = gg;
          px4[o + 2] = b;
          px4[o + 3] = alpha;
        }
      }
    }
    im.ctx.putImageData(im.data, 0, 0, 0, 0, w, 1);
    const smooth = ctx.imageSmoothingEnabled;
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(im.canvas, 0, 0, w, 1, x0, R.task[0], w, R.task[1]);
    ctx.imageSmoothingEnabled = smooth;
    // The load track: the busy fraction per column as a skyline.
    ctx.fillStyle = "#6b7685";
    tlSkyline(ctx, x0, R.load[0] + R.load[1], w, (p) => (load[p] > 0 ? Math.max(1, Math.round(load[p] * R.load[1])) : 0));
    s.loads = s.loads || new Map();
    s.loads.set(L.cpu, load);
    ctx.fillStyle = "#fff";
    for (let k = 0; k < labels.length; k += 3) {
      const text = model.taskLabel(sl.task[labels[k + 2]]);
      const room = labels[k + 1] - 6;
      ctx.fillText(tlFit(ctx, text, room), x0 + labels[k] + 3, R.task[0] + R.task[1] / 2);
    }
    if (L.match) tlHits(ctx, c, w, x0, R.task[0] - 2, 3);
    // The worst wake-up per column, log scale; red above the threshold.
    tlLatStrip(ctx, s, x0, R.lat, w, (p) => (c.lat[p] >= 0 ? L.wakeLat[c.lat[p]] : 0));
  }
  // Unknown stretches: hatched over the row.
  const hatch = tlHatchPattern(ctx);
  for (const b of T.blinds) {
    if (b.cpu !== L.cpu || b.end < view.t0 || b.start > view.t1) continue;
    const a = Math.max(X(b.start), x0), e = Math.min(X(b.end), x0 + plotW);
    ctx.fillStyle = hatch;
    ctx.fillRect(a, R.irq[0], Math.max(1, e - a), R.bottom - R.irq[0]);
  }
  // Lost events: a red mark at the top of the row.
  ctx.fillStyle = "#c00";
  for (const l of T.lost) {
    if (l.cpu !== L.cpu || l.ts < view.t0 || l.ts > view.t1) continue;
    const x = X(l.ts);
    ctx.beginPath();
    ctx.moveTo(x - 4, R.top);
    ctx.lineTo(x + 4, R.top);
    ctx.lineTo(x, R.top + 6);
    ctx.fill();
  }
  // The selection.
  const sel = s.sel;
  if (sel && sel.cpu === L.cpu) {
    const sp = sel.kind === "slice" ? sl : sel.kind === "irq" ? L.irqs : L.softirqs;
    const lane = sel.kind === "slice" ? R.task : sel.kind === "irq" ? R.irq : R.softirq;
    if (sel.index < sp.start.length) {
      const a = X(sp.start[sel.index]), e = X(sp.end[sel.index]);
      ctx.strokeStyle = "#000";
      ctx.lineWidth = 2;
      ctx.strokeRect(a - 1, lane[0] - 1, Math.max(2, e - a) + 2, lane[1] + 2);
      ctx.lineWidth = 1;
    }
  }
}

/** The colour of a CPU in a thread row. */
export const TL_CPU_COLOURS = ["#1f6fd1", "#d1541f", "#2a9d3a", "#9b3dc4", "#b8930a", "#0f9a9a", "#c4356f", "#5d6d7e"];
/** The same as bytes. */
const TL_CPU_RGB = TL_CPU_COLOURS.map((h) => [1, 3, 5].map((k) => parseInt(h.slice(k, k + 2), 16)));
export function tlCpuColour(cpu) {
  return TL_CPU_COLOURS[cpu % TL_CPU_COLOURS.length];
}
const TL_WAKER_COLOURS = ["#6b7685", TL_IRQ_COLOUR, TL_SOFT_COLOUR];

/** A row's backgrounds: its top lanes' (IRQs, or a thread row's header) in `top`, the
 * load track's and the wake-up strip's. */
function tlRowBackground(ctx, R, x0, plotW, top) {
  ctx.fillStyle = top;
  ctx.fillRect(x0, R.irq[0], plotW, R.irq[1] + R.softirq[1] + 1);
  ctx.fillStyle = "#fafafa";
  ctx.fillRect(x0, R.lat[0], plotW, R.lat[1]);
  ctx.fillRect(x0, R.load[0], plotW, R.load[1]);
}

/**
 * A pinned thread's row: where it ran (its instances coloured by CPU), the wake-up
 * latency that switched each in (its strip as a CPU row's), and, zoomed in enough to
 * tell them apart, an arrow from each waking to its switch-in coloured by the waker
 * (a task grey, a hardirq red, a softirq orange).
 */
function tlDrawThreadRow(ctx, s, k, R, plotW, npp, X) {
  const { model, view } = s;
  const x0 = TL.gutter;
  const t = model.track(k);
  ctx.fillStyle = "#222";
  ctx.font = "bold 11px system-ui, sans-serif";
  ctx.fillText(tlFit(ctx, model.taskLabel(k), TL.gutter - 10), 6, R.task[0] + R.task[1] / 2);
  ctx.font = "10px system-ui, sans-serif";
  ctx.fillStyle = "#777";
  ctx.fillText("thread", 6, R.irq[0] + R.irq[1] / 2 + 4);
  ctx.fillText("wake-up", 6, R.lat[0] + R.lat[1] / 2);
  ctx.font = "11px system-ui, sans-serif";
  tlRowBackground(ctx, R, x0, plotW, "#f7f4fb");
  if (!t.n) return;
  // The instances in view. Zoomed out (more instances than pixel columns), a column
  // at a time: the instance starting in it, or the one reaching into it, in its CPU's
  // colour, and the worst wake-up starting in it (a range-max query) in the strip; so a
  // row costs the plot's width, not the thread's instances.
  let j = Math.max(0, tlLowerBound(t.start, view.t0) - 1);
  const hi = tlLowerBound(t.start, view.t1);
  const first = j;
  // The worst wake-up latency that switched it in, per pixel column (0: none).
  const cols = tlLatColumns(plotW);
  if (hi - first > plotW) {
    // The columns as an image stretched over the lane, as a CPU row's.
    const im = tlColumnImage(plotW);
    const px4 = im.data.data;
    px4.fill(0);
    let i = first;
    for (let px = 0; px < plotW; px++) {
      const ta = view.t0 + px * npp, tb = ta + npp;
      const i0 = i;
      // Galloping: a busy thread's columns cost their logarithm, not their instances.
      i = Math.min(hi, tlGallop(t.start, tb, i));
      // Starting in the column: [i0, i); else the one before, if it reaches in.
      const shown = i > i0 ? i0 : i0 > 0 && t.end[i0 - 1] > ta ? i0 - 1 : -1;
      if (shown >= 0) {
        const c = TL_CPU_RGB[t.cpu[shown] % TL_CPU_RGB.length];
        px4.set(c, px * 4);
        px4[px * 4 + 3] = 255;
      }
      if (i > i0) cols[px] = t.lat[i - i0 === 1 ? i0 : t.latPyr.argmax(i0, i)];
    }
    im.ctx.putImageData(im.data, 0, 0, 0, 0, plotW, 1);
    const smooth = ctx.imageSmoothingEnabled;
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(im.canvas, 0, 0, plotW, 1, x0, R.task[0], plotW, R.task[1]);
    ctx.imageSmoothingEnabled = smooth;
  } else {
    for (; j < hi; j++) {
      if (t.end[j] < view.t0) continue;
      const a = Math.max(x0, X(t.start[j])), b = Math.min(x0 + plotW, X(t.end[j]));
      ctx.fillStyle = tlCpuColour(t.cpu[j]);
      ctx.fillRect(a, R.task[0], Math.max(1, b - a), R.task[1]);
    }
    for (j = first; j < hi; j++) {
      if (t.lat[j] < 0 || t.start[j] < view.t0) continue;
      const px = Math.floor(X(t.start[j]) - x0);
      if (px >= 0 && px < plotW && t.lat[j] > cols[px]) cols[px] = t.lat[j];
    }
  }
  tlLatStrip(ctx, s, x0, R.lat, plotW, (p) => cols[p]);
  // Waker arrows, when few enough to be told apart.
  let n = 0;
  if (hi - first <= 4 * plotW) for (j = first; j < hi && n <= 200; j++) if (t.lat[j] >= 0) n++;
  if (n > 0 && n <= 200) {
    const y = R.load[0] + R.load[1] / 2;
    ctx.lineWidth = 1.5;
    for (j = first; j < hi; j++) {
      if (t.lat[j] < 0) continue;
      const a = X(t.waking[j]), b = X(t.start[j]);
      if (b < x0 || a > x0 + plotW) continue;
      ctx.strokeStyle = ctx.fillStyle = TL_WAKER_COLOURS[t.waker[j]] ?? TL_WAKER_COLOURS[0];
      ctx.beginPath();
      ctx.moveTo(Math.max(x0, a), y);
      ctx.lineTo(b, y);
      ctx.stroke();
      if (b - 4 >= x0) {
        ctx.beginPath();
        ctx.moveTo(b, y);
        ctx.lineTo(b - 4, y - 3);
        ctx.lineTo(b - 4, y + 3);
        ctx.fill();
      }
    }
    ctx.lineWidth = 1;
  }
  // The selection, when it is one of this thread's instances.
  const sel = s.sel;
  if (sel && sel.kind === "slice") {
    const L = model.lane(sel.cpu);
    if (L && L.slices.task[sel.index] === k) {
      const a = X(L.slices.start[sel.index]), e = X(L.slices.end[sel.index]);
      ctx.strokeStyle = "#000";
      ctx.lineWidth = 2;
      ctx.strokeRect(a - 1, R.task[0] - 1, Math.max(2, e - a) + 2, R.task[1] + 2);
      ctx.lineWidth = 1;
    }
  }
}

/**
 * A wake-up strip of `w` pixel columns at `x0` in the lane `lane` ([top, height]): the
 * latency `lat(p)` of each column (0: none) on the log scale, the columns at or under the
 * threshold as one blue skyline, those over it red and wider, over them: two fills, not
 * a rect per column (a CPU row's strip, and a thread row's).
 */
function tlLatStrip(ctx, s, x0, lane, w, lat) {
  const lh = lane[1], base = lane[0] + lh;
  ctx.fillStyle = "#4a78b5";
  const red = [];
  tlSkyline(ctx, x0, base, w, (p) => {
    const v = lat(p);
    if (!(v > 0)) return 0;
    const h = tlLatHeight(v, lh);
    if (v <= s.threshold) return h;
    red.push(p, h);
    return 0;
  });
  if (red.length) {
    ctx.fillStyle = "#e0201b";
    ctx.beginPath();
    for (let k = 0; k < red.length; k += 2) ctx.rect(x0 + red[k] - 1, base - red[k + 1], 3, red[k + 1]);
    ctx.fill();
  }
}

/** A reusable array of `w` per-column latencies, zeroed. */
let tlLatCols = new Float64Array(0);
function tlLatColumns(w) {
  if (tlLatCols.length < w) tlLatCols = new Float64Array(w);
  const out = tlLatCols.subarray(0, w);
  out.fill(0);
  return out;
}

/** A reusable one-pixel-tall canvas and its pixels, at least `w` wide. */
let tlColImg = null;
function tlColumnImage(w) {
  if (!tlColImg || tlColImg.w < w) {
    const canvas = document.createElement("canvas");
    canvas.width = w;
    canvas.height = 1;
    const ctx = canvas.getContext("2d");
    tlColImg = { w, canvas, ctx, data: ctx.createImageData(w, 1) };
  }
  return tlColImg;
}

/** Fills the skyline of `w` columns of height `h(p)` over the line `base`: one path,
 * a vertex pair where the height changes, not a rect per column. */
function tlSkyline(ctx, x0, base, w, h) {
  ctx.beginPath();
  ctx.moveTo(x0, base);
  let prev = 0;
  for (let p = 0; p < w; p++) {
    const v = h(p);
    if (v !== prev) {
      ctx.lineTo(x0 + p, base - prev);
      ctx.lineTo(x0 + p, base - v);
      prev = v;
    }
  }
  ctx.lineTo(x0 + w, base - prev);
  ctx.lineTo(x0 + w, base);
  ctx.closePath();
  ctx.fill();
}

/** Calls f(a, b) for each run [a, b) of columns showing something. */
function tlRuns(c, w, f) {
  let px = 0;
  while (px < w) {
    if (c.rep[px] < 0) {
      px++;
      continue;
    }
    let e = px + 1;
    while (e < w && c.rep[e] >= 0) e++;
    f(px, e);
    px = e;
  }
}

/** Search hits: a yellow bar over the columns holding a match. */
function tlHits(ctx, c, w, x0, y, h) {
  ctx.fillStyle = "#f5c400";
  let px = 0;
  while (px < w) {
    if (!c.hit[px]) {
      px++;
      continue;
    }
    let e = px + 1;
    while (e < w && c.hit[e]) e++;
    ctx.fillRect(x0 + px - 1, y, e - px + 2, h);
    px = e;
  }
}

function tlFit(ctx, text, room) {
  if (ctx.measureText(text).width <= room) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (ctx.measureText(text.slice(0, mid) + "…").width <= room) lo = mid;
    else hi = mid - 1;
  }
  return lo ? text.slice(0, lo) + "…" : "";
}

/** Past left_out.after: the overview columns (busy time, longest slice, worst wake-up). */
function tlDrawLeftOut(ctx, s, plotW, npp, X) {
  const { model, view } = s;
  const T = model.T;
  const after = T.left_out.after;
  if (after > view.t1) return;
  const x0 = TL.gutter;
  const a = Math.max(x0, X(after));
  const ov = T.overview_ns;
  model.lanes.forEach((L, row) => {
    const y = tlRowTop(s, row);
    const R = tlRowLayout(y, s.rows);
    ctx.fillStyle = "rgba(255, 244, 214, 0.9)";
    ctx.fillRect(a, R.irq[0], x0 + plotW - a, R.bottom - R.irq[0]);
    const o = L.overview;
    for (let px = Math.floor(a - x0); px < plotW; px++) {
      const ta = Math.max(after, view.t0 + px * npp), tb = view.t0 + (px + 1) * npp;
      if (tb <= ta) continue;
      const b0 = Math.floor(ta / ov), b1 = Math.min(o.busy.length - 1, Math.floor((tb - 1) / ov));
      let busy = 0, lat = 0, span = 0;
      for (let b = b0; b <= b1; b++) {
        busy += o.busy[b];
        span += ov;
        if (o.maxLat[b] > lat) lat = o.maxLat[b];
      }
      if (span > 0 && busy > 0) {
        const h = Math.max(1, Math.round((busy / span) * R.task[1]));
        ctx.fillStyle = "#8a8f98";
        ctx.fillRect(x0 + px, R.task[0] + R.task[1] - h, 1, h);
      }
      if (lat > 0) {
        const h = tlLatHeight(lat, R.lat[1]);
        ctx.fillStyle = lat > s.threshold ? "#e0201b" : "#4a78b5";
        ctx.fillRect(x0 + px, R.lat[0] + R.lat[1] - h, 1, h);
      }
    }
  });
  ctx.fillStyle = "#7a5a00";
  ctx.fillText("left out: overview only", a + 4, TL.headH + 6);
}

/** The time axis with unit ticks. */
function tlDrawAxis(ctx, s, plotW, npp, X) {
  const { view } = s;
  const step = tlStep(npp);
  ctx.strokeStyle = "#999";
  ctx.fillStyle = "#333";
  ctx.font = "11px system-ui, sans-serif";
  ctx.beginPath();
  ctx.moveTo(TL.gutter, TL.axisH - 0.5);
  ctx.lineTo(TL.gutter + plotW, TL.axisH - 0.5);
  let t = Math.ceil(view.t0 / step) * step;
  for (; t <= view.t1; t += step) {
    const x = Math.round(X(t)) + 0.5;
    ctx.moveTo(x, TL.axisH - 6);
    ctx.lineTo(x, TL.axisH);
    const label = tlTick(t, step);
    if (x + 3 + ctx.measureText(label).width < s.width) ctx.fillText(label, x + 3, TL.axisH - 12);
  }
  ctx.stroke();
  ctx.fillStyle = "#555";
  ctx.fillText(`${tlDur(view.t1 - view.t0)} shown`, 6, TL.axisH - 12);
  // Grid lines through the lanes.
  ctx.strokeStyle = "rgba(0,0,0,0.06)";
  ctx.beginPath();
  for (t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
    const x = Math.round(X(t)) + 0.5;
    ctx.moveTo(x, TL.headH);
    ctx.lineTo(x, s.height);
  }
  ctx.stroke();
  // The area being selected on the axis.
  if (s.area) {
    const a = X(s.area.t0), b = X(s.area.t1);
    ctx.fillStyle = "rgba(40, 110, 220, 0.25)";
    ctx.fillRect(a, 0, b - a, TL.axisH);
  }
}

/** trace_marker writes; `jitterlab latency --break` ones red, with a line through the lanes. */
function tlDrawMarkers(ctx, s, X, H) {
  const { model, view } = s;
  const ms = model.T.markers;
  if (!ms.length) return;
  const y = TL.axisH + 1;
  let lastX = -10;
  for (let k = tlLowerBound(tlMarkerTimes(model), view.t0); k < ms.length; k++) {
    const m = ms[k];
    if (m.ts > view.t1) break;
    const x = X(m.ts);
    if (m.break) {
      ctx.strokeStyle = "rgba(220, 0, 0, 0.7)";
      ctx.setLineDash([4, 3]);
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, TL.headH);
      ctx.lineTo(Math.round(x) + 0.5, H);
      ctx.stroke();
      ctx.setLineDash([]);
    } else if (x - lastX < 2) {
      continue;
    }
    lastX = x;
    ctx.fillStyle = m.break ? "#d00" : "#2a6";
    ctx.beginPath();
    ctx.moveTo(x - 5, y);
    ctx.lineTo(x + 5, y);
    ctx.lineTo(x, y + TL.markH - 3);
    ctx.fill();
  }
}

function tlMarkerTimes(model) {
  if (!model._markerTs) model._markerTs = Float64Array.from(model.T.markers, (m) => m.ts);
  return model._markerTs;
}

/** Cursors A and B, and the time between them. */
function tlDrawCursors(ctx, s, X, H) {
  const cur = s.cursors;
  const draw = (t, colour, name) => {
    if (t == null) return null;
    const x = Math.round(X(t)) + 0.5;
    if (x < TL.gutter || x > s.width) return x;
    ctx.strokeStyle = colour;
    ctx.beginPath();
    ctx.moveTo(x, 0);
    ctx.lineTo(x, H);
    ctx.stroke();
    ctx.fillStyle = colour;
    ctx.fillRect(x - 7, 0, 14, 13);
    ctx.fillStyle = "#fff";
    ctx.fillText(name, x - 3.5, 6.5);
    return x;
  };
  const xa = draw(cur.a, "#1f5fd6", "A");
  const xb = draw(cur.b, "#e07000", "B");
  if (xa != null && xb != null) {
    const text = `B−A ${tlDur(cur.b - cur.a)}`;
    const mid = (Math.max(TL.gutter, Math.min(xa, xb)) + Math.min(s.width, Math.max(xa, xb))) / 2;
    const w = ctx.measureText(text).width + 8;
    ctx.fillStyle = "rgba(255,255,255,0.92)";
    ctx.fillRect(mid - w / 2, TL.axisH + 1, w, TL.markH - 1);
    ctx.fillStyle = "#000";
    ctx.fillText(text, mid - w / 2 + 4, TL.axisH + TL.markH / 2 + 1);
  }
  if (s.area && s.area.t1 > s.area.t0) {
    const a = X(s.area.t0), b = X(s.area.t1);
    ctx.fillStyle = "rgba(40, 110, 220, 0.10)";
    ctx.fillRect(a, TL.headH, b - a, H - TL.headH);
    ctx.strokeStyle = "rgba(40, 110, 220, 0.8)";
    ctx.strokeRect(a + 0.5, TL.headH + 0.5, b - a - 1, H - TL.headH - 1);
  }
}

/** The y of a sub-lane's middle on a CPU's row. */
export function tlLaneY(s, cpu, lane) {
  const row = s.model.lanes.findIndex((L) => L.cpu === cpu);
  if (row < 0) return null;
  const R = tlRowLayout(tlRowTop(s, row), s.rows);
  const l = R[lane] || R.task;
  return l[0] + l[1] / 2;
}

/** The selected slice's wake-up: its cause chain as arrows across the lanes, each hop labelled. */
function tlDrawChain(ctx, s, X) {
  const w = s.wake;
  if (!w) return;
  ctx.save();
  // Inside the plot only: a hop whose start is off-screen is cut at the plot's left edge,
  // never drawn over the CPU names.
  ctx.beginPath();
  ctx.rect(TL.gutter, TL.headH, s.width - TL.gutter, s.height - TL.headH);
  ctx.clip();
  tlDrawChainIn(ctx, s, X, w);
  ctx.restore();
}

function tlDrawChainIn(ctx, s, X, w) {
  const cpu = s.sel.cpu;
  const wc = w.wakerCpu;
  ctx.lineWidth = 1.5;
  // The spans of the chain, outlined.
  const outline = (lane, a, b) => {
    const y = tlLaneY(s, wc, lane);
    if (y == null) return;
    const h = lane === "task" ? s.rows.taskH : TL.irqH;
    ctx.strokeStyle = "#111";
    ctx.strokeRect(X(a) - 1, y - h / 2 - 1, Math.max(2, X(b) - X(a)) + 2, h + 2);
  };
  if (w.irq) outline("irq", w.irq.start, w.irq.end);
  if (w.softirq) outline("softirq", w.softirq.start, w.softirq.end);
  const placed = [];
  for (const h of w.hops) {
    const y0 = tlLaneY(s, wc, h.lane0);
    const y1 = tlLaneY(s, h.lane1 === "task" ? cpu : wc, h.lane1);
    if (y0 == null || y1 == null) continue;
    const x0 = X(h.t0), x1 = X(h.t1);
    ctx.strokeStyle = "#6a1b9a";
    ctx.fillStyle = "#6a1b9a";
    tlArrow(ctx, x0, y0, x1, y1);
    // The label in the middle of the hop's visible part, whole inside the plot; none
    // for a hop that is off-screen.
    const a = Math.max(Math.min(x0, x1), TL.gutter), b = Math.min(Math.max(x0, x1), s.width);
    if (a > b) continue;
    const text = tlDur(h.lat);
    const tw = ctx.measureText(text).width + 6;
    // In the wake-up strip of the row the hop ends on, where no slice label is drawn;
    // labels of one strip side by side, never over each other.
    const end = tlLaneY(s, h.lane1 === "task" ? cpu : wc, "lat");
    let lx = Math.max(TL.gutter + 1, Math.min((a + b) / 2 - tw / 2, s.width - tw - 1));
    const ly = end - 6.5;
    for (const p of placed) if (p[1] === ly && lx < p[0] + p[2] + 2 && p[0] < lx + tw + 2) lx = p[0] + p[2] + 2;
    placed.push([lx, ly, tw, text]);
    ctx.fillStyle = "rgba(255,255,255,0.9)";
    ctx.fillRect(lx, ly, tw, 13);
    ctx.fillStyle = "#4a0072";
    ctx.fillText(text, lx + 3, ly + 7);
  }
  ctx.lineWidth = 1;
  // Where each hop's label is, for the tests: [x, y, width, text].
  s.chainLabels = placed;
}

function tlArrow(ctx, x0, y0, x1, y1) {
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  if (Math.abs(y1 - y0) > 2) ctx.bezierCurveTo(x0 + (x1 - x0) * 0.3, y0, x1 - (x1 - x0) * 0.3, y1, x1, y1);
  else ctx.lineTo(x1, y1);
  ctx.stroke();
  const ang = Math.abs(y1 - y0) > 2 ? Math.atan2(y1 - y0, (x1 - x0) * 0.3 || 0.001) : Math.atan2(y1 - y0, x1 - x0 || 0.001);
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x1 - 7 * Math.cos(ang - 0.4), y1 - 7 * Math.sin(ang - 0.4));
  ctx.lineTo(x1 - 7 * Math.cos(ang + 0.4), y1 - 7 * Math.sin(ang + 0.4));
  ctx.fill();
  ctx.beginPath();
  ctx.arc(x0, y0, 2.5, 0, 2 * Math.PI);
  ctx.fill();
}

/**
 * What is under (x, y): { cpu, lane, t, index, count, edges } where lane is "irq",
 * "softirq", "task", "lat", "axis" or "marker"; index the interval the column shows.
 */
export function tlPick(s, x, y) {
  const { model, view } = s;
  const plotW = Math.max(1, Math.floor(s.width - TL.gutter));
  const npp = (view.t1 - view.t0) / plotW;
  const px = Math.floor(x - TL.gutter);
  const t = view.t0 + (x - TL.gutter) * npp;
  if (y < TL.axisH) return { lane: "axis", t };
  if (y < TL.headH) {
    const ms = model.T.markers;
    let best = null;
    ms.forEach((m, k) => {
      const d = Math.abs((m.ts - t) / npp);
      if (d < 6 && (!best || d < best.d)) best = { d, k };
    });
    return { lane: "marker", t, marker: best ? best.k : -1 };
  }
  const row = Math.floor((y - TL.headH + s.scrollTop) / s.rows.rowH);
  const pins = s.pins ?? [];
  if (row >= model.lanes.length && row < model.lanes.length + pins.length && px >= 0) {
    // A thread row: the instance under the point (within 3 pixels).
    const k = pins[row - model.lanes.length];
    const R = tlRowLayout(tlRowTop(s, row), s.rows);
    const tr = model.track(k);
    const out = { thread: k, lane: y >= R.task[0] - 1 && y < R.task[0] + R.task[1] + 1 ? "task" : "none", t, index: -1, count: 0 };
    if (out.lane === "none" || !tr.n) return out;
    const tol = 3 * npp;
    let j = Math.max(0, tlLowerBound(tr.start, t) - 1);
    let best = -1;
    for (let q = Math.max(0, j - 2); q < Math.min(tr.n, j + 3); q++) {
      if (tr.start[q] - tol <= t && t <= tr.end[q] + tol && (best < 0 || Math.abs((tr.start[q] + tr.end[q]) / 2 - t) < Math.abs((tr.start[best] + tr.end[best]) / 2 - t))) best = q;
    }
    if (best >= 0) {
      out.cpu = tr.cpu[best];
      out.index = tr.slice[best];
      out.count = 1;
    }
    return out;
  }
  const L = model.lanes[row];
  if (!L || px < 0) return { lane: "none", t };
  const R = tlRowLayout(tlRowTop(s, row), s.rows);
  let lane = "none";
  for (const k of ["irq", "softirq", "task", "load", "lat"]) if (y >= R[k][0] - 1 && y < R[k][0] + R[k][1] + 1) lane = k;
  const out = { cpu: L.cpu, lane, t, index: -1, count: 0 };
  if (lane === "none") return out;
  if (lane === "load") {
    // The busy fraction of the column under the point.
    const c = new TlCols(1);
    if (L.slices.start.length) tlScan(L.slices, L.sliceDur, L.durPyr, null, null, view.t0 + px * npp, npp, 1, c, L.busyCum);
    out.busy = L.slices.start.length ? c.busy[0] : 0;
    out.t0 = view.t0 + px * npp;
    out.t1 = out.t0 + npp;
    return out;
  }
  const sp = lane === "irq" ? L.irqs : lane === "softirq" ? L.softirqs : L.slices;
  if (!sp.start.length) return out;
  // The column under the point, and one either side for a thin interval.
  const c = new TlCols(3);
  const dur = lane === "irq" || lane === "softirq" ? sp.dur : L.sliceDur;
  const pyr = lane === "irq" || lane === "softirq" ? sp.pyr : L.durPyr;
  const t0 = view.t0 + (px - 1) * npp;
  tlScan(sp, dur, pyr, lane === "task" || lane === "lat" ? L.latPyr : null, null, t0, npp, 3, c);
  if (lane === "lat") {
    let best = -1;
    for (const k of [1, 0, 2]) {
      const i = c.lat[k];
      if (i >= 0 && (best < 0 || L.wakeLat[i] > L.wakeLat[best])) best = i;
    }
    out.index = best;
    out.count = c.cnt[1];
    return out;
  }
  out.index = c.rep[1] >= 0 ? c.rep[1] : c.rep[0] >= 0 ? c.rep[0] : c.rep[2];
  out.count = c.cnt[1];
  return out;
}

/** Snaps `t` to the nearest edge of the interval under the point within `px` pixels. */
export function tlSnap(s, pick, px = 6) {
  const { model, view } = s;
  const npp = (view.t1 - view.t0) / Math.max(1, s.width - TL.gutter);
  const L = model.lane(pick.cpu);
  let best = pick.t;
  let bd = px * npp;
  const consider = (e) => {
    const d = Math.abs(e - pick.t);
    if (d < bd) {
      bd = d;
      best = e;
    }
  };
  if (L) {
    for (const [sp, lanes] of [[L.slices, ["task", "lat"]], [L.irqs, ["irq"]], [L.softirqs, ["softirq"]]]) {
      if (!lanes.includes(pick.lane)) continue;
      const hi = tlUpperBound(sp.start, pick.t + bd);
      for (let i = hi - 1; i >= 0 && i >= hi - 32; i--) {
        consider(sp.start[i]);
        consider(sp.end[i]);
      }
    }
  }
  // The selection's chain: the times on this sub-lane (the hops' ends drawn there).
  if (s.wake) {
    const lane = pick.lane === "lat" ? "task" : pick.lane;
    for (const h of s.wake.hops) {
      if (h.lane0 === lane && pick.cpu === s.wake.wakerCpu) consider(h.t0);
      if (h.lane1 === lane && pick.cpu === (lane === "task" ? s.sel.cpu : s.wake.wakerCpu)) consider(h.t1);
    }
  }
  return best;
}

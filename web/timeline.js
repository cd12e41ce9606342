// timeline.js: the timeline tab. One row per CPU (hardirq, softirq, tasks, worst wake-up),
// zoom at the cursor (wheel, W/S), pan (drag, A/D), fit (F), cursors A/B (click,
// shift+click), an area (shift+drag, or drag on the axis) with run time per task, search
// (comm, tid, pid, IRQ) with next/previous (N, shift+N), the details of a slice with its
// wake-up's cause chain, and the view in the URL fragment (#t=S0,S1&sel=CPU:SLICE).
// mountTimeline(el, ctx, opts) returns the object also put on window.jitterlab.timeline
// (or the name `opts.name` gives). A compare page mounts two (web/compare.js): `opts`
// then gives each its share of the window's height, its fragment keys' prefix, a time
// axis as long as the longer trace's, and what it does when its view moves.
import { tlModel } from "./tlmodel.js";
import { TL, tlCpuColour, tlDraw, tlPick, tlSnap, tlRowLayout, tlRows, tlRowTop } from "./tldraw.js";
import { tlDur, tlAbs, tlRelSecs, tlEsc } from "./tlformat.js";
import { download } from "./tables.js";
import { tlDetailsHtml, tlSliceInfo, tlSpanInfo, tlAreaHtml, tlLeftOutText, tlParseDur } from "./tlpanels.js";

const TL_MIN_SPAN = 100;

export function mountTimeline(el, ctx, opts = {}) {
  const model = tlModel(ctx);
  const T = model.T;
  const fullEnd = Math.max(opts.end ?? T.end, 1000);
  // The URL fragment's keys of this timeline (`t`, or `b.t` for a compare page's B).
  const K = (k) => `${opts.prefix ?? ""}${k}`;
  el.classList.add("tl");
  el.innerHTML = `
    <div class="tl-bar">
      <button type="button" data-act="fit" title="Fit the whole trace, or the area (F)">Fit</button>
      <button type="button" data-act="in" title="Zoom in (W)">+</button>
      <button type="button" data-act="out" title="Zoom out (S)">−</button>
      <span class="tl-sep"></span>
      <input class="tl-search" type="search" placeholder="search comm, tid, pid:N, irq:N or IRQ name" size="44" spellcheck="false">
      <button type="button" data-act="prev" title="Previous match (shift+N)">◀</button>
      <button type="button" data-act="next" title="Next match (N)">▶</button>
      <button type="button" data-act="pin" title="A thread row for each task the search found (P)">pin</button>
      <span class="tl-found"></span>
      <span class="tl-sep"></span>
      <label title="Wake-ups above this latency are drawn red">wake-up threshold <input class="tl-thr" value="100 us" size="7"></label>
      <span class="tl-sep"></span>
      <span class="tl-cursor-text"></span>
      <span class="tl-counts tl-dim"></span>
      <span class="tl-sep"></span>
      <input class="tl-note" placeholder="note" size="12" spellcheck="false" title="the next bookmark's note">
      <button type="button" data-act="mark" title="Bookmark this view with the note (B): kept in the URL">bookmark</button>
      <button type="button" data-act="png" title="The timeline as shown, as a PNG file">PNG</button>
      <button type="button" class="tl-help" data-act="help" title="keys and mouse (?)">keys ?</button>
    </div>
    <div class="tl-bookmarks" hidden></div>
    <div class="tl-pins"><span class="tl-dim">rows:</span> <button type="button" data-act="rows-less" title="Lower rows">▾</button><button type="button" data-act="rows-more" title="Taller rows">▴</button> <span class="tl-pinned"></span></div>
    <div class="tl-leftout" hidden></div>
    <div class="tl-keys" role="dialog" aria-label="keys and mouse" hidden>
      <h3>Keys and mouse <span class="tl-dim">(? or Esc closes)</span></h3>
      <dl>
        <dt>wheel, W / S</dt><dd>zoom in / out at the pointer</dd>
        <dt>drag, A / D</dt><dd>pan left / right</dd>
        <dt>F</dt><dd>fit the whole trace, or the selected area</dd>
        <dt>click</dt><dd>select a slice, IRQ or softirq (its details and cause chain on the right) and put cursor A there</dd>
        <dt>shift + click</dt><dd>put cursor B there: B−A is shown on the axis</dd>
        <dt>shift + drag, drag on the axis</dt><dd>select an area: run time per task per CPU in it</dd>
        <dt>/</dt><dd>search: a comm, tid:N, pid:N, a number, irq:N, an IRQ or softirq name</dd>
        <dt>N / shift + N, Enter</dt><dd>next / previous search match</dd>
        <dt>Esc</dt><dd>clear the selection, the area and the cursors</dd>
        <dt>hover</dt><dd>what is under the pointer; on a load track, the CPU's busy fraction</dd>
        <dt>P</dt><dd>pin a thread row for each task the search found (or the selected slice's task): where it ran, coloured by CPU, its wake-ups and their wakers</dd>
        <dt>B</dt><dd>bookmark this view with the note beside the button; bookmarks are kept in the URL (share it to share them)</dd>
        <dt>?</dt><dd>this help</dd>
      </dl>
    </div>
    <div class="tl-main">
      <div class="tl-scroll" tabindex="0"><canvas class="tl-canvas"></canvas><div class="tl-spacer"></div></div>
      <aside class="tl-details"><p class="tl-dim">Click a slice for its details and its wake-up's cause chain.</p></aside>
    </div>
    <div class="tl-legend"></div>
    <div class="tl-area" hidden></div>
    <div class="tl-tip" hidden></div>`;
  const $ = (q) => el.querySelector(q);
  const scroll = $(".tl-scroll");
  const canvas = $(".tl-canvas");
  const spacer = $(".tl-spacer");
  const tip = $(".tl-tip");
  const details = $(".tl-details");
  const legendEl = $(".tl-legend");
  const areaEl = $(".tl-area");
  const found = $(".tl-found");
  const searchBox = $(".tl-search");
  const cursorText = $(".tl-cursor-text");
  const g = canvas.getContext("2d");

  const s = {
    model,
    view: { t0: 0, t1: fullEnd },
    width: 800,
    height: 300,
    scrollTop: 0,
    sel: null,
    wake: null,
    cursors: { a: null, b: null },
    area: null,
    threshold: 100e3,
    // Pinned thread rows (task indices), under the CPU rows; the rows' height beyond
    // what fills the window (the ▴/▾ buttons).
    pins: [],
    rowDelta: 0,
    // The rows' heights (fitRows).
    rows: tlRows(),
    // The whole-trace view's lanes, kept as an image (tlDraw).
    kept: { t0: 0, t1: fullEnd, key: null, canvas: null, legend: null },
  };
  let selection = null;
  let lastMatch = null;
  let frame = 0;
  let legendKey = "";
  let legendTimer = 0;
  let lastLegend = new Map();
  let hashTimer = 0;
  let mouseX = null;

  const counts = () => {
    const cpus = model.lanes.map((L) => ({ cpu: L.cpu, slices: L.slices.start.length, wakes: L.wakes.slice.length }));
    return { cpus, slices: cpus.reduce((a, c) => a + c.slices, 0), wakeups: cpus.reduce((a, c) => a + c.wakes, 0) };
  };
  {
    const c = counts();
    $(".tl-counts").textContent = `${c.slices.toLocaleString("en-US")} slices · ${c.wakeups.toLocaleString("en-US")} wake-ups`;
    $(".tl-counts").title = c.cpus.map((x) => `CPU ${x.cpu}: ${x.slices} slices, ${x.wakes} wake-ups`).join("\n");
  }
  if (T.left_out) {
    const lo = $(".tl-leftout");
    lo.hidden = false;
    lo.innerHTML = tlLeftOutText(ctx.meta);
  }

  function contentHeight() {
    return TL.headH + (model.lanes.length + s.pins.length) * s.rows.rowH;
  }

  /** Rows as tall as fill the window's height (2 CPUs are not 190 of 1000 pixels), at
   * least 24 pixels of slices each, plus what the user asked for. */
  function fitRows(avail) {
    const rows = model.lanes.length + s.pins.length;
    const fixed = s.rows.rowH - s.rows.taskH - s.rows.latH;
    // What a row may grow by: two thirds to the slices, a third to the wake-up strip.
    const extra = Math.max(0, Math.floor((avail - TL.headH) / Math.max(1, rows)) - fixed - 24 - 18) + s.rowDelta;
    s.rows = tlRows(Math.max(12, Math.min(400, 24 + Math.round((extra * 2) / 3))), Math.max(12, Math.min(120, 18 + Math.round(extra / 3))));
  }

  function resize() {
    const avail = Math.max(160, Math.round(window.innerHeight * (opts.share ?? 0.72)));
    fitRows(avail);
    const total = contentHeight();
    const h = Math.max(160, Math.min(total, avail));
    scroll.style.height = `${h}px`;
    const w = Math.max(200, scroll.clientWidth);
    const dpr = window.devicePixelRatio || 1;
    s.width = w;
    s.height = h;
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    spacer.style.height = `${Math.max(0, total - h)}px`;
    draw();
  }

  function draw() {
    if (frame) {
      cancelAnimationFrame(frame);
      frame = 0;
    }
    lastLegend = tlDraw(g, s);
    lastDraw = performance.now();
    const jl = window.jitterlab || (window.jitterlab = {});
    if (!painted) {
      painted = true;
      if (opts.painted) opts.painted();
      else if (jl.painted == null) {
        jl.painted = lastDraw;
        performance.mark("jl:painted");
      }
      scheduleWarm();
    }
    jl.frames = (jl.frames || 0) + 1;
    if (opts.onView && (s.view.t0 !== synced.t0 || s.view.t1 !== synced.t1)) {
      synced = { t0: s.view.t0, t1: s.view.t1 };
      opts.onView(synced.t0, synced.t1);
    }
    scheduleLegend();
    scheduleHash();
  }

  // After the first paint, in idle time: the whole-trace draw a few more times into a
  // detached canvas, so that V8 has optimised the scan and draw code before the first
  // zoom (the first full-view draw on cold code takes twice as long as later ones).
  // Steps wait while the timeline is being drawn for real.
  let lastDraw = 0;
  let painted = false;
  // The view last told to opts.onView, or set by the other timeline (follow).
  let synced = { t0: NaN, t1: NaN };
  function scheduleWarm() {
    let left = 6;
    let warm = null;
    const idle = window.requestIdleCallback || ((f) => setTimeout(f, 50));
    const step = () => {
      if (performance.now() - lastDraw < 30) return setTimeout(() => idle(step), 30);
      if (!warm) {
        warm = document.createElement("canvas");
        warm.width = Math.max(1, Math.round(s.width));
        warm.height = Math.max(1, Math.round(s.height));
      }
      tlDraw(warm.getContext("2d"), { ...s, view: { t0: 0, t1: fullEnd }, sel: null, wake: null, area: null, kept: null });
      if (--left > 0) idle(step);
      else warm.width = warm.height = 0;
    };
    idle(step);
  }

  function redraw() {
    if (!frame) frame = requestAnimationFrame(() => {
      frame = 0;
      draw();
    });
  }

  // The legend and the URL wait until the view has been still for a moment: DOM and
  // history updates during a zoom would cost frames.
  function scheduleLegend() {
    clearTimeout(legendTimer);
    legendTimer = setTimeout(() => {
      legendTimer = 0;
      const top = [...lastLegend.entries()].sort((a, b) => b[1] - a[1]).slice(0, 16);
      const key = top.map((e) => e[0]).join(",");
      if (key === legendKey) return;
      legendKey = key;
      legendEl.innerHTML = top.length
        ? `<span class="tl-dim">tasks in view:</span> ` + top.map(([k]) =>
            `<button type="button" class="tl-key" data-task="${k}"><i style="background:${model.colours[k]}"></i>${tlEsc(model.taskLabel(k))}</button>`).join("")
        : `<span class="tl-dim">no task slice in view</span>`;
    }, 200);
  }

  // ---- The view.
  function clampView(t0, t1) {
    let span = Math.max(TL_MIN_SPAN, t1 - t0);
    const maxSpan = fullEnd * 1.1;
    if (span > maxSpan) span = maxSpan;
    const mid = (t0 + t1) / 2;
    let a = mid - span / 2;
    const lo = -fullEnd * 0.05, hi = fullEnd * 1.05;
    if (a < lo) a = lo;
    if (a + span > hi) a = hi - span;
    return { t0: a, t1: a + span };
  }

  function goTo(t0, t1) {
    const v = clampView(Number(t0), Number(t1));
    s.view.t0 = v.t0;
    s.view.t1 = v.t1;
    redraw();
    return api.view;
  }

  function zoomAt(x, factor) {
    const plotW = s.width - TL.gutter;
    const f = Math.min(1, Math.max(0, (x - TL.gutter) / plotW));
    const span = s.view.t1 - s.view.t0;
    const at = s.view.t0 + f * span;
    const ns = Math.max(TL_MIN_SPAN, span * factor);
    goTo(at - f * ns, at - f * ns + ns);
  }

  function pan(frac) {
    const span = s.view.t1 - s.view.t0;
    goTo(s.view.t0 + frac * span, s.view.t1 + frac * span);
  }

  function fit() {
    if (s.area && s.area.t1 > s.area.t0) goTo(s.area.t0, s.area.t1);
    else goTo(0, fullEnd);
  }

  // ---- Selection.
  function select(what) {
    if (!what) {
      s.sel = null;
      s.wake = null;
      selection = null;
      details.innerHTML = `<p class="tl-dim">Click a slice for its details and its wake-up's cause chain.</p>`;
      redraw();
      return null;
    }
    const cpu = Number(what.cpu);
    const kind = what.kind || "slice";
    const index = Number(what.slice ?? what.index);
    const L = model.lane(cpu);
    const sp = L && (kind === "slice" ? L.slices : kind === "irq" ? L.irqs : L.softirqs);
    if (!sp || !(index >= 0 && index < sp.start.length)) return null;
    s.sel = { cpu, kind, index };
    if (!model.complete) {
      details.innerHTML = `<p class="tl-dim">Loading the details…</p>`;
      model.ready.then(() => s.sel && s.sel.cpu === cpu && s.sel.index === index && s.sel.kind === kind && select({ cpu, kind, index }));
      selection = null;
      redraw();
      return null;
    }
    s.wake = kind === "slice" ? model.wakeOf(cpu, index) : null;
    selection = kind === "slice" ? tlSliceInfo(model, cpu, index, s.wake) : tlSpanInfo(model, cpu, kind, index);
    details.innerHTML = tlDetailsHtml(model, selection);
    if (kind === "slice") details.insertAdjacentHTML("beforeend", `<p><button type="button" data-pin-task="${L.slices.task[index]}" title="A row for this thread under the CPUs (P)">pin its thread row</button></p>`);
    redraw();
    return selection;
  }

  /**
   * Centres the view on interval `index` of `kind` on `cpu` (with its wake-up's chain),
   * zooming out if it is wider than the view, and in (with `zoom`) if it is far smaller.
   */
  function reveal(cpu, kind, index, zoom = false) {
    const L = model.lane(cpu);
    const sp = kind === "slice" ? L.slices : kind === "irq" ? L.irqs : L.softirqs;
    let a = sp.start[index];
    const b = sp.end[index];
    if (kind === "slice" && s.sel && s.sel.cpu === cpu && s.sel.index === index && s.wake) {
      for (const h of s.wake.hops) a = Math.min(a, h.t0);
      if (s.wake.irq) a = Math.min(a, s.wake.irq.start);
    }
    let span = s.view.t1 - s.view.t0;
    if (b - a > span * 0.8 || (zoom && span > 30 * Math.max(b - a, 1000))) span = Math.max(b - a, 1000) / 0.6;
    const mid = (a + b) / 2;
    goTo(mid - span / 2, mid + span / 2);
    // Scroll the CPU's row into sight.
    const row = model.lanes.indexOf(L);
    const top = row * s.rows.rowH;
    if (top < scroll.scrollTop || top + s.rows.rowH > scroll.scrollTop + s.height - TL.headH) scroll.scrollTop = Math.max(0, top - s.rows.rowH);
  }

  // ---- Search.
  function search(query) {
    const r = model.search(query);
    lastMatch = null;
    if (searchBox.value !== r.query) searchBox.value = r.query;
    found.textContent = r.query ? `${r.count} found${r.count ? "" : " (comm, tid, pid:N, irq:N, IRQ name)"} · ${r.ms.toFixed(1)} ms` : "";
    redraw();
    return r;
  }

  function step(dir) {
    if (!model.query) return null;
    const cur = lastMatch || (s.sel ? { ...s.sel } : null);
    let t;
    if (cur) {
      const L = model.lane(cur.cpu);
      t = (cur.kind === "slice" ? L.slices : cur.kind === "irq" ? L.irqs : L.softirqs).start[cur.index];
    } else {
      t = dir > 0 ? s.view.t0 : s.view.t1;
    }
    const m = model.nextMatch(t, dir, cur);
    if (!m) {
      found.textContent = `${model.matchCount} found · no ${dir > 0 ? "next" : "previous"} match`;
      return null;
    }
    lastMatch = m;
    reveal(m.cpu, m.kind, m.index);
    select({ cpu: m.cpu, kind: m.kind, index: m.index });
    return m;
  }

  // ---- Cursors.
  function setCursor(which, t) {
    s.cursors[which] = t;
    const { a, b } = s.cursors;
    const parts = [];
    if (a != null) parts.push(`A ${tlAbs(ctx.meta, a)} s`);
    if (b != null) parts.push(`B ${tlAbs(ctx.meta, b)} s`);
    if (a != null && b != null) parts.push(`<b>B−A ${tlDur(b - a)}</b>`);
    cursorText.innerHTML = parts.join(" · ");
    redraw();
  }

  // ---- Area.
  function setArea(t0, t1, cpus) {
    if (t1 < t0) [t0, t1] = [t1, t0];
    if (!(t1 > t0)) {
      s.area = null;
      areaEl.hidden = true;
      redraw();
      return null;
    }
    s.area = { t0, t1, cpus };
    const stats = model.areaStats(t0, t1, cpus);
    areaEl.hidden = false;
    areaEl.innerHTML = tlAreaHtml(model, ctx.meta, stats, t0, t1);
    redraw();
    return stats;
  }

  // ---- Thread rows.
  const pinnedEl = el.querySelector(".tl-pinned");
  /** Pins thread rows: task indices, { tid }, or a search query (what the search box
   * takes); returns the pinned tasks. At most 16 rows. */
  function pin(what) {
    let tasks = [];
    if (Array.isArray(what)) tasks = what;
    else if (what && what.tid != null) tasks = model.tasksMatching(`tid:${Number(what.tid)}`);
    else if (typeof what === "string") tasks = model.tasksMatching(what);
    for (const k of tasks) if (k >= 0 && k < model.tasks.length && !s.pins.includes(k) && s.pins.length < 16) s.pins.push(k);
    drawPins();
    return s.pins.slice();
  }
  function unpin(k) {
    s.pins = s.pins.filter((x) => x !== k);
    drawPins();
  }
  function pinFound() {
    const found = model.query ? model.matchedTasks() : [];
    if (found.length) pin(found);
    else if (s.sel && s.sel.kind === "slice") pin([model.lane(s.sel.cpu).slices.task[s.sel.index]]);
  }
  function drawPins() {
    pinnedEl.innerHTML = s.pins.map((k) =>
      `<span class="tl-bm"><button type="button" data-pin-go="${k}" title="scroll to its row">${tlEsc(model.taskLabel(k))}</button><button type="button" class="tl-bm-del" data-unpin="${k}" title="unpin">×</button></span>`).join(" ") +
      (s.pins.length ? ` <span class="tl-dim">colour = CPU:</span> ` + model.lanes.map((L) => `<i class="tl-sw" style="background:${tlCpuColour(L.cpu)}"></i>${L.cpu}`).join(" ") : "");
    resize();
    scheduleHash();
  }
  el.querySelector(".tl-pins").addEventListener("click", (e) => {
    const act = e.target.closest("button")?.dataset.act;
    if (act === "rows-less" || act === "rows-more") {
      s.rowDelta = Math.max(-36, Math.min(240, s.rowDelta + (act === "rows-more" ? 24 : -24)));
      resize();
      return;
    }
    const un = e.target.closest("[data-unpin]");
    const go = e.target.closest("[data-pin-go]");
    if (un) unpin(Number(un.dataset.unpin));
    else if (go) {
      const row = model.lanes.length + s.pins.indexOf(Number(go.dataset.pinGo));
      scroll.scrollTop = Math.max(0, row * s.rows.rowH - s.rows.rowH);
    }
  });

  // ---- Bookmarks: views with a note, in the URL fragment (`bm=S0,S1,NOTE;...`).
  let bookmarks = [];
  const marksEl = el.querySelector(".tl-bookmarks");
  const noteBox = el.querySelector(".tl-note");
  function addBookmark() {
    const note = noteBox.value.trim() || `view ${bookmarks.length + 1}`;
    bookmarks.push({ t0: Math.round(s.view.t0), t1: Math.round(s.view.t1), note });
    noteBox.value = "";
    drawBookmarks();
    scheduleHash();
  }
  function drawBookmarks() {
    marksEl.hidden = bookmarks.length === 0;
    marksEl.innerHTML = `<span class="tl-dim">bookmarks:</span> ` + bookmarks.map((m, i) =>
      `<span class="tl-bm"><button type="button" data-bm="${i}" title="${tlDur(m.t1 - m.t0)} from ${tlAbs(ctx.meta, m.t0)} s">${tlEsc(m.note)}</button><button type="button" class="tl-bm-del" data-bm-del="${i}" title="remove">×</button></span>`).join(" ");
  }
  marksEl.addEventListener("click", (e) => {
    const go = e.target.closest("[data-bm]");
    const del = e.target.closest("[data-bm-del]");
    if (go) {
      const m = bookmarks[Number(go.dataset.bm)];
      if (m) goTo(m.t0, m.t1);
    } else if (del) {
      bookmarks.splice(Number(del.dataset.bmDel), 1);
      drawBookmarks();
      scheduleHash();
    }
  });

  // ---- The URL fragment.
  function fragment() {
    const p = new URLSearchParams(location.hash.replace(/^#/, ""));
    p.set(K("t"), `${tlRelSecs(s.view.t0)},${tlRelSecs(s.view.t1)}`);
    if (s.sel) p.set(K("sel"), s.sel.kind === "slice" ? `${s.sel.cpu}:${s.sel.index}` : `${s.sel.cpu}:${s.sel.kind}:${s.sel.index}`);
    else p.delete(K("sel"));
    for (const k of ["a", "b"]) {
      if (s.cursors[k] != null) p.set(K(k), tlRelSecs(s.cursors[k]));
      else p.delete(K(k));
    }
    if (s.pins.length) p.set(K("pin"), [...new Set(s.pins.map((k) => model.tasks[k].tid))].join(","));
    else p.delete(K("pin"));
    if (bookmarks.length) p.set(K("bm"), bookmarks.map((m) => `${tlRelSecs(m.t0)},${tlRelSecs(m.t1)},${encodeURIComponent(m.note)}`).join(";"));
    else p.delete(K("bm"));
    return p.toString().replace(/%2C/g, ",").replace(/%3A/g, ":");
  }

  function scheduleHash() {
    if (!api.active()) return;
    clearTimeout(hashTimer);
    hashTimer = setTimeout(() => {
      hashTimer = 0;
      const f = fragment();
      if (location.hash.replace(/^#/, "") !== f) {
        try {
          history.replaceState(history.state, "", `#${f}`);
        } catch {
          // A page that may not change its URL still works.
        }
      }
    }, 250);
  }

  function restore(hash) {
    const p = new URLSearchParams(String(hash ?? location.hash).replace(/^#/, ""));
    const pins = p.get(K("pin"));
    if (pins != null) {
      s.pins = [];
      pin(pins.split(",").filter((tid) => /^\d+$/.test(tid)).flatMap((tid) => model.tasksMatching(`tid:${tid}`)));
    }
    bookmarks = [];
    for (const part of (p.get(K("bm")) ?? "").split(";")) {
      const [a, b, ...note] = part.split(",");
      const t0 = Number(a) * 1e9, t1 = Number(b) * 1e9;
      if (part && Number.isFinite(t0) && Number.isFinite(t1) && t1 > t0) {
        let text = note.join(",");
        try {
          text = decodeURIComponent(text);
        } catch {
          // A hand-edited note that is not valid percent-encoding: kept as written.
        }
        bookmarks.push({ t0: Math.round(t0), t1: Math.round(t1), note: text });
      }
    }
    drawBookmarks();
    const t = p.get(K("t"));
    let done = false;
    if (t) {
      const [a, b] = t.split(",").map(Number);
      if (Number.isFinite(a) && Number.isFinite(b) && b > a) {
        goTo(a * 1e9, b * 1e9);
        done = true;
      }
    }
    const sel = p.get(K("sel"));
    if (sel) {
      const parts = sel.split(":");
      if (parts.length === 2) select({ cpu: Number(parts[0]), kind: "slice", index: Number(parts[1]) });
      else if (parts.length === 3) select({ cpu: Number(parts[0]), kind: parts[1], index: Number(parts[2]) });
    }
    for (const k of ["a", "b"]) {
      const v = p.get(K(k));
      // Whole nanoseconds, as every time of the trace: a shared link puts the cursors
      // back exactly where they were.
      if (v != null && Number.isFinite(Number(v))) setCursor(k, Math.round(Number(v) * 1e9));
    }
    return done;
  }

  // ---- Mouse.
  let drag = null;
  canvas.addEventListener("mousedown", (e) => {
    if (e.button !== 0) return;
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    const pick = tlPick(s, x, y);
    drag = { x, y, t: pick.t, view: { ...s.view }, area: e.shiftKey || pick.lane === "axis", moved: false, shift: e.shiftKey, pick };
    e.preventDefault();
    scroll.focus({ preventScroll: true });
  });
  window.addEventListener("mousemove", (e) => {
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    if (!drag) {
      if (e.target === canvas) {
        mouseX = x;
        hover(x, y, e);
      }
      return;
    }
    if (Math.abs(x - drag.x) + Math.abs(y - drag.y) > 3) drag.moved = true;
    if (!drag.moved) return;
    const npp = (drag.view.t1 - drag.view.t0) / (s.width - TL.gutter);
    if (drag.area) {
      const t = drag.view.t0 + (x - TL.gutter) * npp;
      s.area = { t0: Math.min(drag.t, t), t1: Math.max(drag.t, t), cpus: null };
      redraw();
    } else {
      const dt = -(x - drag.x) * npp;
      s.view.t0 = drag.view.t0 + dt;
      s.view.t1 = drag.view.t1 + dt;
      tip.hidden = true;
      redraw();
    }
  });
  window.addEventListener("mouseup", (e) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    if (d.moved && d.area) {
      const npp = (d.view.t1 - d.view.t0) / (s.width - TL.gutter);
      const t = d.view.t0 + (x - TL.gutter) * npp;
      let cpus = null;
      if (d.pick.lane !== "axis") {
        const rows = [d.y, y].map((yy) => Math.floor((yy - TL.headH + s.scrollTop) / s.rows.rowH));
        const lo = Math.max(0, Math.min(...rows)), hi = Math.min(model.lanes.length - 1, Math.max(...rows));
        cpus = model.lanes.slice(lo, hi + 1).map((L) => L.cpu);
      }
      setArea(d.t, t, cpus);
      return;
    }
    if (d.moved) return;
    click(d.pick, d.shift);
  });
  canvas.addEventListener("dblclick", (e) => {
    const r = canvas.getBoundingClientRect();
    const pick = tlPick(s, e.clientX - r.left, e.clientY - r.top);
    if (pick.index >= 0) {
      const kind = pick.lane === "irq" ? "irq" : pick.lane === "softirq" ? "softirq" : "slice";
      const L = model.lane(pick.cpu);
      const sp = kind === "slice" ? L.slices : L[`${kind}s`];
      const a = sp.start[pick.index], b = sp.end[pick.index];
      const pad = Math.max(b - a, 1000) * 0.5;
      goTo(a - pad, b + pad);
    }
  });
  scroll.addEventListener("wheel", (e) => {
    if (e.altKey) return;
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      pan((e.deltaX / (s.width - TL.gutter)) * (e.deltaMode === 1 ? 20 : 1));
      return;
    }
    const dy = e.deltaMode === 1 ? e.deltaY * 20 : e.deltaY;
    zoomAt(e.clientX - r.left, Math.exp(Math.max(-3, Math.min(3, dy * 0.002))));
  }, { passive: false });
  scroll.addEventListener("scroll", () => {
    s.scrollTop = scroll.scrollTop;
    redraw();
  });
  canvas.addEventListener("mouseleave", () => {
    tip.hidden = true;
    mouseX = null;
  });

  function click(pick, shift) {
    if (pick.lane === "marker" && pick.marker >= 0) {
      setCursor(shift ? "b" : "a", T.markers[pick.marker].ts);
      return;
    }
    const t = pick.cpu != null && pick.lane !== "none" ? tlSnap(s, pick) : pick.t;
    if (shift) {
      setCursor("b", t);
      return;
    }
    if (pick.index >= 0 && pick.lane !== "none") {
      const kind = pick.lane === "irq" ? "irq" : pick.lane === "softirq" ? "softirq" : "slice";
      select({ cpu: pick.cpu, kind, index: pick.index });
      lastMatch = null;
    }
    setCursor("a", t);
    // The cursor snaps to the new selection's chain too.
    if (s.wake) setCursor("a", tlSnap(s, pick));
  }

  function hover(x, y, e) {
    const pick = tlPick(s, x, y);
    let html = "";
    const L = pick.cpu != null ? model.lane(pick.cpu) : null;
    if (pick.lane === "load" && L) {
      html = `CPU ${L.cpu} busy <b>${(pick.busy * 100).toFixed(1)}%</b> of ${tlDur(pick.t1 - pick.t0)} at ${tlAbs(ctx.meta, pick.t0)} s`;
    } else if (pick.lane === "marker" && pick.marker >= 0) {
      const m = T.markers[pick.marker];
      html = `<b>${m.break ? "latency --break" : "trace_marker"}</b> CPU ${m.cpu}, tid ${m.tid}<br>${tlEsc(m.text)}<br>${tlAbs(ctx.meta, m.ts)} s`;
    } else if (L && pick.index >= 0 && (model.complete || pick.lane === "task" || pick.lane === "lat")) {
      const more = pick.count > 1 ? `<br><span class="tl-dim">${pick.count} start in this pixel; the longest is shown</span>` : "";
      if (pick.lane === "task") {
        const sl = L.slices;
        const i = pick.index;
        html = `<b>${tlEsc(model.taskLabel(sl.task[i]))}</b> on CPU ${L.cpu}<br>${tlDur(sl.end[i] - sl.start[i])} from ${tlAbs(ctx.meta, sl.start[i])} s` +
          (L.wakeOf[i] >= 0 ? `<br>wake-up latency ${tlDur(L.wakes.lat[L.wakeOf[i]])}` : "") + more;
      } else if (pick.lane === "lat") {
        const i = pick.index;
        html = `worst wake-up here: <b>${tlDur(L.wakeLat[i])}</b><br>${tlEsc(model.taskLabel(L.slices.task[i]))}, switched in at ${tlAbs(ctx.meta, L.slices.start[i])} s` +
          (pick.count > 1 ? `<br><span class="tl-dim">of ${pick.count} slices starting here</span>` : "");
      } else {
        const sp = pick.lane === "irq" ? L.irqs : L.softirqs;
        const i = pick.index;
        const name = pick.lane === "irq" ? `IRQ ${model.irqLabel(sp.irq[i])}` : `softirq ${model.softirqLabel(sp.vec[i])}`;
        html = `<b>${tlEsc(name)}</b> on CPU ${L.cpu}<br>${tlDur(sp.end[i] - sp.start[i])} from ${tlAbs(ctx.meta, sp.start[i])} s${more}`;
      }
    } else if (L && pick.lane === "task" && L.first != null && pick.t >= L.first && pick.t <= L.last) {
      html = `CPU ${L.cpu} idle`;
      if (T.left_out && pick.t >= T.left_out.after) html = `CPU ${L.cpu}: left out of the timeline (overview only)`;
    }
    for (const b of T.blinds) {
      if (L && b.cpu === L.cpu && pick.t >= b.start && pick.t <= b.end) html += `${html ? "<br>" : ""}<b>unknown</b>: lost events, ${tlDur(b.end - b.start)}`;
    }
    if (!html) {
      tip.hidden = true;
      return;
    }
    tip.innerHTML = `${html}<br><span class="tl-dim">${tlAbs(ctx.meta, pick.t)} s</span>`;
    tip.hidden = false;
    const r = el.getBoundingClientRect();
    const cx = e.clientX - r.left, cy = e.clientY - r.top;
    tip.style.left = `${Math.min(cx + 14, r.width - 320)}px`;
    tip.style.top = `${cy + 16}px`;
  }

  // ---- Keys and buttons.
  function onKey(e) {
    if (!api.active() || (opts.keyed && !opts.keyed()) || e.ctrlKey || e.metaKey || e.altKey) return;
    const tag = (e.target && e.target.tagName) || "";
    // Typing in a text box is not a key for the timeline; a ticked box keeps no keys.
    const typing = (tag === "INPUT" && !["checkbox", "radio", "button"].includes(e.target.type)) || tag === "TEXTAREA" || tag === "SELECT";
    if (typing) {
      if (e.target === noteBox && e.key === "Enter") {
        e.preventDefault();
        addBookmark();
      }
      if (e.target === searchBox && e.key === "Enter") {
        e.preventDefault();
        if (searchBox.value.trim() !== model.query) search(searchBox.value);
        step(e.shiftKey ? -1 : 1);
      }
      return;
    }
    const x = mouseX ?? TL.gutter + (s.width - TL.gutter) / 2;
    const keys = el.querySelector(".tl-keys");
    if (e.key === "?") {
      keys.hidden = !keys.hidden;
      e.preventDefault();
      return;
    }
    if (e.key === "Escape" && !keys.hidden) {
      keys.hidden = true;
      e.preventDefault();
      return;
    }
    switch (e.key) {
      case "w": case "W": zoomAt(x, 0.8); break;
      case "s": case "S": zoomAt(x, 1.25); break;
      case "a": case "A": pan(-0.15); break;
      case "d": case "D": pan(0.15); break;
      case "f": case "F": fit(); break;
      case "n": step(1); break;
      case "N": step(-1); break;
      case "Escape": select(null); setArea(0, 0); s.cursors = { a: null, b: null }; setCursor("a", null); break;
      case "/": searchBox.focus(); break;
      case "b": case "B": addBookmark(); break;
      case "p": case "P": pinFound(); break;
      default: return;
    }
    e.preventDefault();
  }
  document.addEventListener("keydown", onKey);
  el.querySelector(".tl-bar").addEventListener("click", (e) => {
    const act = e.target.closest("button")?.dataset.act;
    if (act === "pin") pinFound();
    else if (act === "mark") addBookmark();
    else if (act === "png") canvas.toBlob((b) => b && download("timeline.png", b), "image/png");
    else if (act === "help") {
      const keys = el.querySelector(".tl-keys");
      keys.hidden = !keys.hidden;
    } else if (act === "fit") fit();
    else if (act === "in") zoomAt(TL.gutter + (s.width - TL.gutter) / 2, 0.5);
    else if (act === "out") zoomAt(TL.gutter + (s.width - TL.gutter) / 2, 2);
    else if (act === "next" || act === "prev") {
      if (searchBox.value.trim() !== model.query) search(searchBox.value);
      step(act === "next" ? 1 : -1);
    }
  });
  searchBox.addEventListener("change", () => search(searchBox.value));
  $(".tl-thr").addEventListener("change", (e) => {
    const v = tlParseDur(e.target.value);
    if (v != null) {
      s.threshold = v;
      e.target.value = tlDur(v);
      redraw();
    }
  });
  legendEl.addEventListener("click", (e) => {
    const k = e.target.closest("[data-task]")?.dataset.task;
    if (k != null) search(`tid:${model.tasks[Number(k)].tid}`);
  });
  details.addEventListener("click", (e) => {
    const pb = e.target.closest("[data-pin-task]");
    if (pb) pin([Number(pb.dataset.pinTask)]);
    const b = e.target.closest("[data-go]");
    if (!b) return;
    const [cpu, kind, index] = b.dataset.go.split(":");
    reveal(Number(cpu), kind, Number(index));
    select({ cpu: Number(cpu), kind, index: Number(index) });
  });
  areaEl.addEventListener("click", (e) => {
    if (e.target.closest("[data-act=area-zoom]") && s.area) goTo(s.area.t0, s.area.t1);
    if (e.target.closest("[data-act=area-clear]")) setArea(0, 0);
  });
  window.addEventListener("hashchange", () => restore());
  if (!model.complete) model.ready.then(() => {
    if (model.query) search(model.query);
  });
  new ResizeObserver(() => resize()).observe(el);

  const api = {
    el,
    get view() {
      return { t0: s.view.t0, t1: s.view.t1 };
    },
    get selection() {
      return selection;
    },
    /** Resolves when every column is decoded (selection details and IRQ search need them). */
    ready: model.ready,
    get cursors() {
      return { ...s.cursors, delta: s.cursors.a != null && s.cursors.b != null ? s.cursors.b - s.cursors.a : null };
    },
    get area() {
      return s.area ? { ...s.area } : null;
    },
    /** Slices and wake-ups per CPU and in all, as the page holds them. */
    counts,
    goTo,
    /** Shows [t0, t1] as the other timeline of a compare page does, without telling it back. */
    follow(t0, t1) {
      if (t0 === s.view.t0 && t1 === s.view.t1) return;
      synced = { t0, t1 };
      s.view.t0 = t0;
      s.view.t1 = t1;
      redraw();
    },
    /** The bookmarks: { t0, t1, note } (ns from origin_ns). */
    get bookmarks() {
      return bookmarks.map((m) => ({ ...m }));
    },
    addBookmark,
    pin,
    unpin,
    get pins() {
      return s.pins.slice();
    },
    select(what) {
      const r = select(what);
      if (r && what.reveal !== false) reveal(s.sel.cpu, s.sel.kind, s.sel.index, true);
      return r;
    },
    search,
    next: () => step(1),
    prev: () => step(-1),
    setCursor: (which, t) => setCursor(which, t),
    setArea,
    fit,
    zoomAt,
    pan,
    draw,
    /** Where things are drawn, in the canvas's CSS pixels (for tests). */
    geometry: {
      canvas: () => canvas,
      /** The width of the CPU names' column, left of the plot. */
      gutter: TL.gutter,
      xOf: (t) => TL.gutter + ((t - s.view.t0) * (s.width - TL.gutter)) / (s.view.t1 - s.view.t0),
      /** Sub-lane `lane` (irq, softirq, task, lat) of `cpu`'s row: { y, h }. */
      /** Sub-lane `lane` of the thread row of pinned task `k`: { y, h }. */
      threadLane(k, lane) {
        const j = s.pins.indexOf(k);
        if (j < 0) return null;
        const r = tlRowLayout(tlRowTop(s, model.lanes.length + j), s.rows)[lane];
        return r ? { y: r[0], h: r[1] } : null;
      },
      lane(cpu, lane) {
        const row = model.lanes.findIndex((L) => L.cpu === cpu);
        if (row < 0) return null;
        const r = tlRowLayout(tlRowTop(s, row), s.rows)[lane];
        return r ? { y: r[0], h: r[1] } : null;
      },
    },
    /** Whether the timeline is on screen (its tab shown). */
    active: () => el.offsetParent !== null || el.getClientRects().length > 0,
    /** Called by the shell when its tab is shown. */
    shown: () => resize(),
    state: s,
  };
  const jl = window.jitterlab || (window.jitterlab = {});
  jl[opts.name ?? "timeline"] = api;
  // `view --pin NAME`: the report's own pins, unless the URL names others.
  if (new URLSearchParams(location.hash.replace(/^#/, "")).get(K("pin")) == null) for (const q of T.pins ?? []) pin(q);
  if (!restore()) goTo(0, fullEnd);
  resize();
  return api;
}

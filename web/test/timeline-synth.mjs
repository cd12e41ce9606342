// timeline-synth.mjs: writes a synthetic report for the timeline's tests, following
// docs/html.md: a real report's page (its viewer and its report JSON) with a made-up
// timeline of N task slices on two CPUs, each switched in by a wake-up of 1-30 us but one
// of 500 us. The columns are encoded here from the documentation (byte planes, gaps,
// chunks of draw and detail blocks, raw deflate, a block's bytes as the UTF-16 units of the page
// with U+0000, CR, `<`, `=` and the surrogates escaped), which checks the page's decoder
// against the format's description as much as it feeds the tests.
import fs from "node:fs";
import zlib from "node:zlib";

/** A fixed-seed xorshift in [0, 1). */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}

/** A block under construction: bytes and the columns' references. */
class Block {
  constructor(index) {
    this.index = index;
    this.parts = [];
    this.size = 0;
    this.columns = {};
  }
  push(bytes) {
    this.parts.push(bytes);
    this.size += bytes.length;
  }
  u8(name, values) {
    this.columns[name] = { type: "u8", block: this.index, offset: this.size, count: values.length };
    this.push(Uint8Array.from(values));
  }
  /** A u32 (or, with `x`, a u32x without escapes) column in `planes` byte planes. */
  u32(name, values, planes, x = false, extra = {}) {
    const n = values.length;
    const out = new Uint8Array(n * planes);
    for (let p = 0; p < planes; p++) for (let i = 0; i < n; i++) out[p * n + i] = (values[i] >>> (8 * p)) & 255;
    this.columns[name] = { type: x ? "u32x" : "u32", block: this.index, offset: this.size, count: n, planes, ...(x ? { big: 0 } : {}), ...extra };
    this.push(out);
  }
  bytes() {
    return Buffer.concat(this.parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.length)));
  }
}

/**
 * A data block's text (docs/html.md): each two bytes a UTF-16 unit (the low byte first),
 * but U+0000, U+000D, `<`, `=` and the surrogates as `=` and the unit XOR 0x8000; an odd
 * last byte as `=` and 0x0100 plus the byte.
 */
export function blockText(bytes) {
  const n = bytes.length >> 1;
  const out = new Uint16Array(2 * n + 2);
  let j = 0;
  for (let i = 0; i < n; i++) {
    const u = bytes[2 * i] | (bytes[2 * i + 1] << 8);
    if (u === 0 || u === 13 || u === 0x3c || u === 0x3d || (u >= 0xd800 && u < 0xe000)) {
      out[j++] = 0x3d;
      out[j++] = u ^ 0x8000;
    } else out[j++] = u;
  }
  if (bytes.length & 1) {
    out[j++] = 0x3d;
    out[j++] = 0x100 | bytes[bytes.length - 1];
  }
  return Buffer.from(out.buffer, 0, 2 * j).toString("utf16le");
}

/** Reads a report: UTF-16LE after a byte-order mark (a page with data blocks), else UTF-8. */
export function readPage(file) {
  const b = fs.readFileSync(file);
  return b[0] === 0xff && b[1] === 0xfe ? b.toString("utf16le") : b.toString("utf8");
}

/** Writes a report's text as UTF-16LE, its byte-order mark first. */
export function writePage(file, text) {
  fs.writeFileSync(file, text.startsWith("\uFEFF") ? text : `\uFEFF${text}`, "utf16le");
}

/**
 * Writes `out`: the page of `template` (a report file) with a synthetic timeline.
 * Returns what the tests check: the outlier's CPU, slice and time, per-CPU counts, the
 * tasks, and the expected matches of a comm.
 */
export function writeSynthReport(template, out, { slices = 1_000_000, cpus = 2, seed = 7, leftOut = false, chunkRows = 1 << 16 } = {}) {
  const html = readPage(template);
  const m0 = html.indexOf('<script type="application/json" id="jl-meta">');
  const m1 = html.indexOf("</script>", m0);
  const meta = JSON.parse(html.slice(html.indexOf(">", m0) + 1, m1));
  const rand = rng(seed);
  const ntasks = 20;
  const tasks = Array.from({ length: ntasks }, (_, k) => ({ tid: 5000 + k, tgid: 5000 + 4 * Math.floor(k / 4), comm: `synth-${k}` }));
  const overviewNs = 1 << 24;
  const cpuMeta = [];
  const blocks = [];
  const info = { cpus: [], tasks, outlier: null, end: 0 };
  let end = 0;
  for (let c = 0; c < cpus; c++) {
    const n = Math.floor(slices / cpus) + (c < slices % cpus ? 1 : 0);
    const gap = new Uint32Array(n), dur = new Uint32Array(n), task = new Uint32Array(n), start = new Float64Array(n);
    const lat = new Uint32Array(Math.max(0, n - 1)), waker = new Uint32Array(Math.max(0, n - 1));
    let t = 1000 + c * 777;
    let cur = -1;
    const outlierAt = c === cpus - 1 ? Math.floor(n * 0.61) : -1;
    const overview = { busy: [], maxDur: [], maxLat: [], count: [] };
    for (let i = 0; i < n; i++) {
      const g = i === 0 ? t : rand() < 0.25 ? Math.floor(5000 * Math.pow(100, rand())) : 0;
      const d = Math.floor(2000 * Math.pow(150, rand()));
      let k;
      do k = (c * 10 + Math.floor(rand() * 10)) % ntasks; while (k === cur);
      const s = i === 0 ? g : t + g;
      gap[i] = g;
      dur[i] = d;
      task[i] = k;
      start[i] = s;
      if (i > 0) {
        lat[i - 1] = i === outlierAt ? 500_000 : Math.floor(1000 * Math.pow(30, rand()));
        waker[i - 1] = tasks[cur].tid;
      }
      const b = Math.floor((s + d - 1) / overviewNs);
      while (overview.busy.length <= b) for (const v of Object.values(overview)) v.push(0);
      overview.busy[b] += d;
      overview.count[b] += 1;
      overview.maxDur[b] = Math.max(overview.maxDur[b], d);
      if (i > 0) overview.maxLat[Math.floor(s / overviewNs)] = Math.max(overview.maxLat[Math.floor(s / overviewNs)] ?? 0, lat[i - 1]);
      t = s + d;
      cur = k;
    }
    end = Math.max(end, t);
    if (outlierAt >= 0) info.outlier = { cpu: c, slice: outlierAt, start: start[outlierAt], lat: 500_000 };
    // Chunks of `chunkRows` slices and as many wake-ups, as `view` spills them, each
    // its draw and detail blocks; the IRQs, softirqs and overview in the last.
    const nw = lat.length;
    const chunks = [];
    const chunk = () => {
      const k = { draw: new Block(blocks.length), detail: new Block(blocks.length + 1), slices: 0, wakes: 0, irqs: 0, softirqs: 0 };
      blocks.push(null, null);
      chunks.push(k);
      return k;
    };
    for (let a = 0; a < Math.max(n, 1); a += chunkRows) {
      const b = Math.min(n, a + chunkRows), wb = Math.min(nw, b);
      const { draw, detail } = chunk();
      const k = chunks[chunks.length - 1];
      k.slices = b - a;
      k.wakes = Math.max(0, wb - a);
      draw.u32("slices.start", gap.subarray(a, b), 3, true, { delta: "end" });
      draw.u32("slices.dur", dur.subarray(a, b), 3, true);
      draw.u32("slices.task", task.subarray(a, b), 1);
      detail.u8("slices.prio", new Uint8Array(b - a).fill(120));
      detail.u8("slices.flags", Uint8Array.from(task.subarray(a, b), (_, i) => (a + i === 0 ? 1 << 4 : 5)));
      const w = Math.max(0, wb - a);
      // Wake-up k switches in slice k + 1: every delta is 1.
      draw.u32("wakes.slice", new Uint32Array(w).fill(1), 1);
      draw.u32("wakes.lat", lat.subarray(a, a + w), 3, true);
      detail.u8("wakes.waker", new Uint8Array(w));
      detail.u32("wakes.waker_cpu", new Uint32Array(w).fill(c), 1);
      detail.u32("wakes.waker_id", waker.subarray(a, a + w), 2);
      detail.u8("wakes.vec", new Uint8Array(w).fill(255));
      detail.u32("wakes.irq_exit", new Uint32Array(w), 1, true);
      detail.u32("wakes.wakeup", new Uint32Array(w), 1, true);
      detail.u8("wakes.flags", new Uint8Array(w));
    }
    const { draw, detail } = chunk();
    for (const k of ["irqs", "softirqs"]) {
      draw.u32(`${k}.start`, new Uint32Array(0), 1, true);
      draw.u32(`${k}.dur`, new Uint32Array(0), 1, true);
    }
    detail.u32("irqs.irq", new Uint32Array(0), 1);
    detail.u8("irqs.depth", new Uint8Array(0));
    detail.u8("softirqs.vec", new Uint8Array(0));
    detail.u32("softirqs.raised_by", new Uint32Array(0), 1);
    detail.u32("softirqs.raise", new Uint32Array(0), 1, true);
    draw.u32("overview.busy", Uint32Array.from(overview.busy), 4, true);
    draw.u32("overview.max_dur", Uint32Array.from(overview.maxDur), 4, true);
    draw.u32("overview.max_lat", Uint32Array.from(overview.maxLat), 4, true);
    draw.u32("overview.count", Uint32Array.from(overview.count), 4, true);
    for (const k of chunks) {
      blocks[k.draw.index] = k.draw.bytes();
      blocks[k.detail.index] = k.detail.bytes();
    }
    cpuMeta.push({
      cpu: c, first: 0, last: t, slices: n, irqs: 0, softirqs: 0, wakes: nw,
      chunks: chunks.map((k) => ({
        block: k.draw.index, detail_block: k.detail.index, slices: k.slices, wakes: k.wakes, irqs: k.irqs, softirqs: k.softirqs,
        columns: { ...k.draw.columns, ...k.detail.columns },
      })),
    });
    info.cpus.push({ cpu: c, slices: n, wakes: nw });
  }
  info.end = end;
  meta.title = `synthetic ${slices} slices`;
  meta.timeline = {
    origin_ns: 1_000_000_000_000, end, overview_ns: overviewNs, cpus: cpuMeta, tasks, irqs: [],
    softirqs: ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"],
    states: ["S"], markers: [{ ts: Math.floor(end / 3), cpu: 0, tid: 5000, text: "jitterlab: latency 500 us > 100 us on cpu 1", break: true }],
    blinds: [], lost: [],
    left_out: leftOut ? { after: Math.floor(end * 0.8), slices: 12345, irqs: 0, softirqs: 0, wakes: 12000, max_slices: slices } : null,
  };
  const metaText = JSON.stringify(meta).replace(/</g, "\\u003c");
  const dataEls = blocks.map((b, k) => `<script type="application/octet-stream" id="jl-data-${k}" data-bytes="${b.length}">${blockText(zlib.deflateRawSync(b, { level: 6 }))}</script>\n`).join("");
  // The template's blocks go; its viewer stays.
  const d0 = html.indexOf('<script type="application/octet-stream"', m1);
  const d1 = html.indexOf('<script type="module">', m1);
  const head = html.slice(0, m0);
  const tail = html.slice(d1);
  const between = d0 >= 0 ? "\n" : html.slice(m1 + 9, d1);
  writePage(out, `${head}<script type="application/json" id="jl-meta">${metaText}</script>${between}${dataEls}${tail}`);
  return info;
}

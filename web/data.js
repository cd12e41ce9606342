// data.js: reads what the binary embedded (docs/html.md): the meta JSON, and each CPU's
// columns, inflated with the browser's own DecompressionStream into typed arrays.

/** The `jl-meta` element's JSON. */
export function readMeta(doc = document) {
  return JSON.parse(doc.getElementById("jl-meta").textContent);
}

function base64Bytes(text) {
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text.trim());
  const bin = atob(text.trim());
  const n = bin.length;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Block `k`, inflated. */
async function readBlock(doc, k) {
  const el = doc.getElementById(`jl-data-${k}`);
  if (!el) throw new Error(`the report has no data block ${k}`);
  const size = Number(el.dataset.bytes);
  const stream = new Blob([base64Bytes(el.textContent)])
    .stream()
    .pipeThrough(new DecompressionStream("deflate-raw"));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  if (bytes.length !== size) {
    throw new Error(`data block ${k}: inflated to ${bytes.length} bytes, expected ${size}`);
  }
  return bytes;
}

function column(cols, name) {
  const c = cols[name];
  if (!c) throw new Error(`the report has no column ${name}`);
  return c;
}

function u8(bytes, c) {
  return bytes.slice(c.offset, c.offset + c.count);
}

/** A byte-planar u32 column. */
function u32(bytes, c) {
  const n = c.count, o = c.offset, out = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    out[i] = bytes[o + i] | (bytes[o + n + i] << 8) | (bytes[o + 2 * n + i] << 16) | (bytes[o + 3 * n + i] << 24);
  }
  return out;
}

/** A u32x column as numbers: 0xFFFFFFFF takes the next escaped f64. */
function u32x(bytes, c) {
  const n = c.count, o = c.offset, out = new Float64Array(n);
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  let big = o + 4 * n;
  for (let i = 0; i < n; i++) {
    const v = (bytes[o + i] | (bytes[o + n + i] << 8) | (bytes[o + 2 * n + i] << 16) | (bytes[o + 3 * n + i] << 24)) >>> 0;
    if (v === 0xffffffff) {
      out[i] = view.getFloat64(big, true);
      big += 8;
    } else {
      out[i] = v;
    }
  }
  return out;
}

/** A delta-coded u32x column as running sums (times). */
function times(bytes, c) {
  const t = u32x(bytes, c);
  let acc = 0;
  for (let i = 0; i < t.length; i++) {
    acc += t[i];
    t[i] = acc;
  }
  return t;
}

function spans(bytes, cols, prefix) {
  const start = times(bytes, column(cols, `${prefix}.start`));
  const dur = u32x(bytes, column(cols, `${prefix}.dur`));
  const end = new Float64Array(start.length);
  for (let i = 0; i < start.length; i++) end[i] = start[i] + dur[i];
  return { start, end };
}

/** One CPU's lanes from its block. */
function decodeCpu(cpu, bytes) {
  const cols = cpu.columns;
  const slices = spans(bytes, cols, "slices");
  slices.task = u32(bytes, column(cols, "slices.task"));
  slices.prio = u8(bytes, column(cols, "slices.prio"));
  slices.flags = u8(bytes, column(cols, "slices.flags"));
  const wakes = {
    slice: u32(bytes, column(cols, "wakes.slice")),
    lat: u32x(bytes, column(cols, "wakes.lat")),
    waker: u8(bytes, column(cols, "wakes.waker")),
    wakerCpu: u32(bytes, column(cols, "wakes.waker_cpu")),
    wakerId: u32(bytes, column(cols, "wakes.waker_id")),
    vec: u8(bytes, column(cols, "wakes.vec")),
    irqExit: u32x(bytes, column(cols, "wakes.irq_exit")),
    wakeup: u32x(bytes, column(cols, "wakes.wakeup")),
    flags: u8(bytes, column(cols, "wakes.flags")),
  };
  let acc = 0;
  for (let i = 0; i < wakes.slice.length; i++) {
    acc += wakes.slice[i];
    wakes.slice[i] = acc;
  }
  const irqs = spans(bytes, cols, "irqs");
  irqs.irq = u32(bytes, column(cols, "irqs.irq"));
  irqs.depth = u8(bytes, column(cols, "irqs.depth"));
  const softirqs = spans(bytes, cols, "softirqs");
  softirqs.vec = u8(bytes, column(cols, "softirqs.vec"));
  softirqs.raisedBy = u32(bytes, column(cols, "softirqs.raised_by"));
  softirqs.raise = u32x(bytes, column(cols, "softirqs.raise"));
  const overview = {
    busy: u32x(bytes, column(cols, "overview.busy")),
    maxDur: u32x(bytes, column(cols, "overview.max_dur")),
    maxLat: u32x(bytes, column(cols, "overview.max_lat")),
    count: u32x(bytes, column(cols, "overview.count")),
  };
  return { cpu: cpu.cpu, first: cpu.first, last: cpu.last, slices, wakes, irqs, softirqs, overview };
}

/** Every CPU's lanes, the blocks inflated in parallel. */
export async function readTimeline(meta, doc = document) {
  const t = meta.timeline;
  if (!t) return null;
  const blocks = await Promise.all(t.cpus.map((c) => readBlock(doc, c.block)));
  return t.cpus.map((c, k) => decodeCpu(c, blocks[k]));
}

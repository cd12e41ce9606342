// harness.mjs: drives the HTML report in headless Chromium (Debian's /usr/bin/chromium,
// through playwright-core). A report page fails its test when it makes any network
// request, logs a console error, throws, or never says it is ready; screenshots are
// compared with golden PNGs under golden/ (UPDATE_GOLDEN=1 rewrites them).
//
// Reports come from JL_REPORTS, a directory of reports and their companions written by
// crates/jitterlab/tests/browser.rs (`reportPath("disk.html")`).

import { chromium } from "playwright-core";
import { PNG } from "pngjs";
import pixelmatch from "pixelmatch";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

/** The Chromium the tests drive: JITTERLAB_CHROMIUM, else Debian's. */
export const CHROMIUM = process.env.JITTERLAB_CHROMIUM || "/usr/bin/chromium";
/** Where golden screenshots live. */
export const GOLDEN_DIR = path.join(here, "golden");
/** Where a failed comparison leaves the actual and diff images (gitignored). */
export const OUT_DIR = path.join(here, "out");
/** This run's scratch files, removed when the process exits. */
const SCRATCH = fs.mkdtempSync(path.join(os.tmpdir(), "jl-test-"));
process.on("exit", () => fs.rmSync(SCRATCH, { recursive: true, force: true }));

/** A new directory for a test's scratch files, removed with the run's. */
export function scratchDir(prefix) {
  return fs.mkdtempSync(path.join(SCRATCH, prefix));
}

/** The viewport every page is opened at. */
export const VIEWPORT = { width: 1400, height: 900 };

/** Flags that make rendering the same from run to run. */
const ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--font-render-hinting=none",
  "--disable-lcd-text",
  "--disable-font-subpixel-positioning",
  "--force-color-profile=srgb",
  "--hide-scrollbars",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
];

/** Starts the browser. */
export async function launch() {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}

/** The path of a report or companion file in JL_REPORTS. */
export function reportPath(name) {
  const dir = process.env.JL_REPORTS;
  if (!dir) throw new Error("JL_REPORTS is not set: run the browser tests through `cargo test -p jitterlab --test browser` (JL_REPORTS_DIR=DIR keeps the reports in DIR)");
  const p = path.join(dir, name);
  if (!fs.existsSync(p)) throw new Error(`${p}: no such report in JL_REPORTS`);
  return p;
}

/** A companion file's text (e.g. `analyze --section irqs` output). */
export function readReportFile(name) {
  return fs.readFileSync(reportPath(name), "utf8");
}

/** A companion JSON file, parsed. */
export function readReportJson(name) {
  return JSON.parse(readReportFile(name));
}

/** Fails with `message` unless `cond`. */
export function assert(cond, message) {
  if (!cond) throw new Error(message || "assertion failed");
}

/** A table's cells by its header's labels: [{label: text}] per row matching `rowSel`. */
export async function rowsOf(r, tableSel, rowSel) {
  return r.eval(([t, rs]) => {
    const table = document.querySelector(t);
    const heads = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    return [...table.querySelectorAll(`tbody ${rs}`)].map((tr) => Object.fromEntries([...tr.children].map((td, i) => [heads[i], td.innerText.trim()])));
  }, [tableSel, rowSel]);
}

/** Fails unless `actual` equals `expected` (compared as JSON). */
export function assertEqual(actual, expected, what = "value") {
  const a = JSON.stringify(actual), e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: got ${a}, expected ${e}`);
}

/**
 * An open page of one report file. Every request the page makes is recorded (and
 * aborted); console errors and uncaught exceptions are collected; `check()` throws if
 * there was any of them, and `close()` checks before closing.
 */
export class Report {
  constructor(context, page, url) {
    this.context = context;
    this.page = page;
    this.url = url;
    /** Every request other than the report file itself, as URLs. */
    this.requests = [];
    /** console.error and console.warn messages... only errors fail. */
    this.consoleErrors = [];
    /** Uncaught exceptions and unhandled rejections. */
    this.pageErrors = [];
  }

  /** Throws if the page requested anything but its own file, logged an error or threw. */
  check() {
    const problems = [];
    if (this.requests.length) problems.push(`network requests: ${this.requests.join(", ")}`);
    if (this.consoleErrors.length) problems.push(`console errors: ${this.consoleErrors.join(" | ")}`);
    if (this.pageErrors.length) problems.push(`page errors: ${this.pageErrors.join(" | ")}`);
    if (problems.length) throw new Error(`${path.basename(fileURLToPath(this.url))}: ${problems.join("; ")}`);
  }

  /** Checks, then closes the page's context. */
  async close() {
    try {
      this.check();
    } finally {
      await this.context.close();
    }
  }

  /** Evaluates `fn(arg)` in the page. */
  eval(fn, arg) {
    return this.page.evaluate(fn, arg);
  }

  /** Clicks the first element matching `selector`. */
  async click(selector) {
    await this.page.locator(selector).first().click();
  }

  /** Presses a key (with the focus where it is). */
  async press(key) {
    await this.page.keyboard.press(key);
  }

  /** The text of the first element matching `selector` (trimmed). */
  async text(selector) {
    const t = await this.page.locator(selector).first().textContent({ timeout: 5000 });
    return (t ?? "").trim();
  }

  /** The texts of every element matching `selector` (trimmed). */
  async texts(selector) {
    return this.page.$$eval(selector, (els) => els.map((e) => e.textContent.trim()));
  }

  /** How many elements match `selector`. */
  count(selector) {
    return this.page.locator(selector).count();
  }

  /** The rows of a table as arrays of cell texts (`tbody tr`, `td`/`th`). */
  tableRows(selector) {
    return this.page.$$eval(`${selector} tbody tr`, (rows) =>
      rows.map((r) => [...r.cells].map((c) => c.textContent.trim())));
  }

  /**
   * Compares a screenshot of the page (or of `selector`) with golden/NAME.png, the
   * elements matching the `mask` selectors painted over: fails
   * when more than `tolerance` of the pixels differ (pixelmatch, per-pixel `threshold`).
   * With UPDATE_GOLDEN=1, or when the golden file does not exist yet (outside CI,
   * JITTERLAB_REQUIRE_LIVE=1 and UPDATE_GOLDEN=0), writes it instead.
   */
  async matchGolden(name, { selector, mask = [], tolerance = 0.005, threshold = 0.1 } = {}) {
    // No caret, no animations, and the page settled (fonts, two frames).
    await this.page.evaluate(async () => {
      await document.fonts.ready;
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    });
    const target = selector ? this.page.locator(selector).first() : this.page;
    const png = await target.screenshot({
      animations: "disabled",
      caret: "hide",
      mask: mask.map((m) => this.page.locator(m)),
      maskColor: "#888",
    });
    return compareGolden(name, png, { tolerance, threshold });
  }
}

/** The golden file of `name`. */
export function goldenPath(name, dir = GOLDEN_DIR) {
  return path.join(dir, `${name}.png`);
}

/**
 * Compares PNG bytes with golden/NAME.png (see Report.matchGolden). Returns
 * { diff, total, written }. Options: tolerance, threshold, dir (GOLDEN_DIR), update
 * (UPDATE_GOLDEN).
 */
export function compareGolden(name, png, { tolerance = 0.005, threshold = 0.1, dir = GOLDEN_DIR, update = process.env.UPDATE_GOLDEN } = {}) {
  const file = goldenPath(name, dir);
  // A missing golden is written, except where it must exist: in CI, or when asked.
  const strict = update === "0" || process.env.CI === "true" || process.env.JITTERLAB_REQUIRE_LIVE === "1";
  if (update === "1" || (!fs.existsSync(file) && !strict)) {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(file, png);
    return { diff: 0, total: 0, written: true };
  }
  if (!fs.existsSync(file)) throw new Error(`${file}: no golden screenshot (UPDATE_GOLDEN=1 writes it)`);
  const actual = PNG.sync.read(png);
  const golden = PNG.sync.read(fs.readFileSync(file));
  const keep = (img, suffix) => {
    fs.mkdirSync(OUT_DIR, { recursive: true });
    const out = path.join(OUT_DIR, `${name}.${suffix}.png`);
    fs.writeFileSync(out, PNG.sync.write(img));
    return out;
  };
  if (actual.width !== golden.width || actual.height !== golden.height) {
    const out = keep(actual, "actual");
    throw new Error(`screenshot ${name}: ${actual.width}x${actual.height}, golden ${golden.width}x${golden.height} (actual in ${out}; UPDATE_GOLDEN=1 rewrites the golden)`);
  }
  const { width, height } = actual;
  const diffImg = new PNG({ width, height });
  const diff = pixelmatch(actual.data, golden.data, diffImg.data, width, height, { threshold });
  const total = width * height;
  if (diff > tolerance * total) {
    const a = keep(actual, "actual");
    const d = keep(diffImg, "diff");
    throw new Error(`screenshot ${name}: ${diff} of ${total} pixels differ (${(100 * diff / total).toFixed(2)}%, tolerance ${(100 * tolerance).toFixed(2)}%): see ${a} and ${d}; UPDATE_GOLDEN=1 rewrites the golden`);
  }
  return { diff, total, written: false };
}

/**
 * Opens `file` (a path) in a fresh context of `browser` and waits for the page's ready
 * signal: window.jitterlab.ready, or window.jitterlab.error (an error the page shows;
 * `open` fails on it unless `allowError`). Options: viewport, colorScheme ("light"),
 * timeout (ms, 20000), hash (a URL fragment, without #), ready (false: do not wait),
 * init (a function or script run in the page before its own scripts).
 */
export async function open(browser, file, opts = {}) {
  const context = await browser.newContext({
    acceptDownloads: true,
    viewport: opts.viewport ?? VIEWPORT,
    deviceScaleFactor: 1,
    colorScheme: opts.colorScheme ?? "light",
    reducedMotion: "reduce",
    serviceWorkers: "block",
    offline: true,
  });
  const url = pathToFileURL(path.resolve(file)).href;
  if (opts.init) await context.addInitScript(opts.init);
  const page = await context.newPage();
  const report = new Report(context, page, url);
  page.on("request", (req) => {
    const u = req.url();
    // A blob: URL is the page's own memory (a CSV or PNG it made to save): it leaves
    // nothing.
    if (u.split("#")[0] !== url && !u.startsWith("blob:")) report.requests.push(u);
  });
  page.on("websocket", (ws) => report.requests.push(ws.url()));
  page.on("console", (msg) => {
    if (msg.type() === "error") report.consoleErrors.push(msg.text());
  });
  page.on("pageerror", (err) => report.pageErrors.push(err.message));
  // Anything that is not the report is refused, besides being recorded.
  await context.route((u) => u.href.split("#")[0] !== url, (route) => route.abort("blockedbyclient"));
  const full = opts.hash ? `${url}#${opts.hash}` : url;
  await page.goto(full, { waitUntil: "load" });
  if (opts.ready === false) return report;
  try {
    await page.waitForFunction(
      () => window.jitterlab && (window.jitterlab.ready === true || window.jitterlab.error),
      null,
      { timeout: opts.timeout ?? 20000, polling: 50 },
    );
  } catch (e) {
    await context.close();
    throw new Error(`${file}: no ready signal (window.jitterlab.ready) within ${opts.timeout ?? 20000} ms; page errors: ${report.pageErrors.join(" | ") || "none"}`);
  }
  const error = await page.evaluate(() => window.jitterlab.error ?? null);
  if (error && !opts.allowError) {
    await context.close();
    throw new Error(`${file}: the page shows an error: ${error}`);
  }
  return report;
}

/** Runs `fn(report)` on `file` opened in `browser`, then checks and closes the page. */
export async function withReport(browser, file, opts, fn) {
  if (typeof opts === "function") [opts, fn] = [{}, opts];
  const report = await open(browser, file, opts);
  try {
    await fn(report);
  } catch (e) {
    await report.context.close().catch(() => {});
    throw e;
  }
  await report.close();
}

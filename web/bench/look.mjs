// look.mjs: opens a report in headless Chromium, prints console errors and load figures,
// and saves a screenshot: node look.mjs REPORT.html OUT.png [width height] [fragment]
import { chromium } from "playwright-core";

const [file, png = "/tmp/look.png", w = "1600", h = "1000", frag = ""] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
const page = await browser.newPage({ viewport: { width: Number(w), height: Number(h) } });
const errors = [];
page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") errors.push(`${m.type()}: ${m.text()}`); });
page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
page.on("request", (r) => { if (!r.url().startsWith("file:")) errors.push(`request: ${r.url()}`); });
await page.goto(`file://${file}${frag}`);
await page.waitForFunction(() => window.jitterlab && (window.jitterlab.painted || window.jitterlab.ready), null, { timeout: 30000 }).catch(() => errors.push("never painted"));
const figures = await page.evaluate(() => ({ painted: window.jitterlab?.painted, decodeMs: window.jitterlab?.decodeMs, hash: location.hash }));
await page.waitForTimeout(400);
await page.screenshot({ path: png, fullPage: true });
console.log(JSON.stringify(figures), errors.length ? `\n${errors.join("\n")}` : "no console errors");
await browser.close();

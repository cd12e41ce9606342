// run.mjs: runs the browser tests. `node run.mjs FILE.test.mjs...` imports each file,
// whose `tests` export is an object of test functions (or an array of { name, fn }),
// runs them one after another, each given { browser } (one shared Chromium), prints
// one line per test and a closing "N passed, N failed", and exits 1 on any failure.
// JL_TEST_FILTER=TEXT runs only the tests whose name contains TEXT.

import path from "node:path";
import { pathToFileURL } from "node:url";
import { launch } from "./harness.mjs";

const files = process.argv.slice(2);
if (!files.length) {
  console.error("usage: node run.mjs FILE.test.mjs...");
  process.exit(2);
}
const filter = process.env.JL_TEST_FILTER;

function listOf(mod) {
  const t = mod.tests;
  if (Array.isArray(t)) return t;
  if (t && typeof t === "object") return Object.entries(t).map(([name, fn]) => ({ name, fn }));
  throw new Error("exports no `tests` (an object of functions, or an array of { name, fn })");
}

let passed = 0, failed = 0;
const browser = await launch();
try {
  for (const file of files) {
    const short = path.basename(file);
    let list;
    try {
      list = listOf(await import(pathToFileURL(path.resolve(file)).href));
    } catch (e) {
      failed++;
      console.log(`FAIL ${short}: cannot load: ${e.stack || e}`);
      continue;
    }
    for (const { name, fn } of list) {
      if (filter && !name.includes(filter)) continue;
      const t0 = performance.now();
      try {
        await fn({ browser });
        passed++;
        console.log(`ok   ${short}: ${name} (${Math.round(performance.now() - t0)} ms)`);
      } catch (e) {
        failed++;
        console.log(`FAIL ${short}: ${name} (${Math.round(performance.now() - t0)} ms)\n     ${String(e.stack || e).replace(/\n/g, "\n     ")}`);
      }
    }
  }
} finally {
  await browser.close();
}
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);

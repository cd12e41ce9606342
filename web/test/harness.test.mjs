// harness.test.mjs: the harness itself catches what it must (requests, errors, a page
// that never gets ready, a screenshot that changed), and a real report passes it.

import fs from "node:fs";
import path from "node:path";
import { PNG } from "pngjs";
import { assert, assertEqual, compareGolden, open, OUT_DIR, reportPath, scratchDir, withReport } from "./harness.mjs";

/** A scratch HTML file with `body`. */
function page(body) {
  const dir = scratchDir("harness-");
  const file = path.join(dir, "page.html");
  fs.writeFileSync(file, `<!doctype html><meta charset="utf-8"><body>${body}</body>`);
  return file;
}

async function expectFailure(promise, pattern) {
  try {
    await promise;
  } catch (e) {
    assert(pattern.test(e.message), `failed, but not with ${pattern}: ${e.message}`);
    return;
  }
  throw new Error(`did not fail (expected ${pattern})`);
}

/** A solid PNG of w x h with the pixels at `dots` in red. */
function png(w, h, dots = []) {
  const img = new PNG({ width: w, height: h });
  img.data.fill(255);
  for (const [x, y] of dots) {
    const i = 4 * (y * w + x);
    img.data[i + 1] = 0;
    img.data[i + 2] = 0;
  }
  return PNG.sync.write(img);
}

export const tests = {
  async "a report makes no network request and says it is ready"({ browser }) {
    for (const name of ["disk.html", "latency.html"]) {
      await withReport(browser, reportPath(name), async (r) => {
        assertEqual(await r.eval(() => window.jitterlab.ready), true, `${name}: window.jitterlab.ready`);
        assertEqual(r.requests, [], `${name}: requests`);
      });
    }
  },

  async "a request made by the page is recorded and fails the check"({ browser }) {
    const r = await open(browser, page(`<img src="http://127.0.0.1:9/x.png"><script>window.jitterlab = { ready: true };</script>`));
    assertEqual(r.requests, ["http://127.0.0.1:9/x.png"], "requests");
    await expectFailure(r.close(), /network requests: http:\/\/127\.0\.0\.1:9\/x\.png/);
  },

  async "an uncaught exception fails the check"({ browser }) {
    const r = await open(browser, page(`<script>window.jitterlab = { ready: true }; throw new Error("boom");</script>`));
    await expectFailure(r.close(), /page errors: .*boom/);
  },

  async "a console error fails the check"({ browser }) {
    const r = await open(browser, page(`<script>console.error("bad thing"); window.jitterlab = { ready: true };</script>`));
    await expectFailure(r.close(), /console errors: bad thing/);
  },

  async "a page that never gets ready fails"({ browser }) {
    await expectFailure(open(browser, page("<p>nothing</p>"), { timeout: 300 }), /no ready signal/);
  },

  async "a page in its error state fails unless the error is expected"({ browser }) {
    const file = page(`<script>window.jitterlab = { error: "it broke" };</script>`);
    await expectFailure(open(browser, file), /shows an error: it broke/);
    const r = await open(browser, file, { allowError: true });
    assertEqual(await r.eval(() => window.jitterlab.error), "it broke", "error");
    await r.close();
  },

  async "screenshots are compared with a tolerance"() {
    const dir = scratchDir("golden-");
    const opts = { dir, update: "0", tolerance: 0.005 };
    assert(compareGolden("g", png(20, 20), { ...opts, update: "1" }).written, "written");
    assertEqual(compareGolden("g", png(20, 20), opts).diff, 0, "same image");
    // 1 pixel of 400 is under 0.5 %; 10 are over.
    assertEqual(compareGolden("g", png(20, 20, [[3, 4]]), opts).diff, 1, "one pixel");
    const ten = Array.from({ length: 10 }, (_, i) => [i, 0]);
    let failed = false;
    try {
      compareGolden("g", png(20, 20, ten), opts);
    } catch (e) {
      failed = /10 of 400 pixels differ/.test(e.message);
    }
    assert(failed, "ten pixels differ: a failure naming them");
    let sized = false;
    try {
      compareGolden("g", png(21, 20), opts);
    } catch (e) {
      sized = /21x20, golden 20x20/.test(e.message);
    }
    assert(sized, "another size: a failure");
    assert(fs.existsSync(path.join(OUT_DIR, "g.diff.png")), "the diff image is kept");
  },
};

// bytes.test.mjs: the data blocks' text (docs/html.md, "The file"): the page is UTF-16LE
// and a block's bytes are its UTF-16 units, a few escaped. bytes.html is disk.html with
// two more blocks written by the binary's own encoder (crates/jitterlab/tests/browser.rs):
// every UTF-16 unit, `</script`-like text and an odd last byte, as they are (`raw`) and
// as a deflate stream (`stored`), decoded here by the page itself. (Names outside ASCII:
// timeline.test.mjs.)
import fs from "node:fs";
import { assert, assertEqual, reportPath, withReport } from "./harness.mjs";

/** The first index where `a` and `b` differ, or -1. */
function firstDifference(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

export const tests = {
  async "every byte and UTF-16 unit goes through a data block and back"({ browser }) {
    const want = fs.readFileSync(reportPath("bytes.bin"));
    assert(want.length % 2 === 1 && want.length > 2 * 65536, "the probe: every unit and an odd byte");
    await withReport(browser, reportPath("bytes.html"), async (r) => {
      const got = await r.eval(async () => {
        const raw = window.jitterlab.rawBlock("raw");
        const stored = await window.jitterlab.block("stored");
        return { charset: document.characterSet, raw: Array.from(raw), stored: Array.from(stored) };
      });
      assertEqual(got.charset, "UTF-16LE", "the page's charset");
      for (const k of ["raw", "stored"]) {
        const at = firstDifference(got[k], want);
        assert(at < 0, `${k}: ${got[k].length} bytes, expected ${want.length}; first difference at ${at}: ${got[k][at]} for ${want[at]}`);
      }
      // The page's own blocks still decode: the timeline is there.
      assert(await r.eval(() => window.jitterlab.lanes.length > 0), "the timeline's lanes");
    });
  },
};

// rebundle.mjs: re-inlines the viewer (web/MODULES, as crates/render/build.rs and
// export/html.rs do) into an existing report, so a change to web/ can be looked at
// without rebuilding the binary: node rebundle.mjs IN.html [OUT.html]
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const web = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The viewer's script and style sheet, as the binary inlines them. */
export function bundle() {
  const names = readFileSync(join(web, "MODULES"), "utf8").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  let js = "", css = "";
  for (const name of names) {
    const text = readFileSync(join(web, name), "utf8");
    if (name.endsWith(".css")) {
      css += `/* ---- web/${name} */\n${text}\n`;
      continue;
    }
    js += `// ---- web/${name}\n`;
    for (const line of text.split("\n")) {
      if (line.startsWith("import ")) continue;
      js += (line.startsWith("export ") ? line.slice(7) : line) + "\n";
    }
  }
  return { js: js.replaceAll("</script", "<\\/script"), css: css.replaceAll("</style", "<\\/style") };
}

/** A report's text and its encoding: UTF-16LE after a byte-order mark (a page with data blocks), else UTF-8. */
export function readReport(file) {
  const raw = readFileSync(file);
  const enc = raw[0] === 0xff && raw[1] === 0xfe ? "utf16le" : "utf8";
  return { html: raw.toString(enc), enc };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [input, output = input] = process.argv.slice(2);
  const { html, enc } = readReport(input);
  const { js, css } = bundle();
  const s0 = html.indexOf("<style>\n") + 8, s1 = html.indexOf("</style>", s0);
  const j0 = html.lastIndexOf('<script type="module">\n') + 23, j1 = html.lastIndexOf("</script>");
  if (s0 < 8 || j0 < 23) throw new Error(`${input}: not a jitterlab report`);
  writeFileSync(output, html.slice(0, s0) + css + html.slice(s1, j0) + js + html.slice(j1), enc);
}

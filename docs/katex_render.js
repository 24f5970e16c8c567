// Renders the book's formulas with KaTeX, all of them in one process: docs/render_math.py runs
//   node katex_render.js KATEX_JS < request.json > answer.json
// The request is {"macros": {...}, "formulas": [{"tex": "...", "display": true|false}, ...]};
// the answer is a list in the same order, {"html": "..."} for each formula KaTeX rendered and
// {"error": "..."} (KaTeX's message) for each it could not. Node's standard library and KaTeX only
// (Debian's libjs-katex: a UMD build that require() loads).
"use strict";
const fs = require("fs");

const katexPath = process.argv[2];
if (!katexPath) {
  process.stderr.write("usage: node katex_render.js /usr/share/javascript/katex/katex.min.js\n");
  process.exit(2);
}
const katex = require(katexPath);
const request = JSON.parse(fs.readFileSync(0, "utf8"));

const answer = request.formulas.map(({ tex, display }) => {
  // Strict mode's complaints (TeX that KaTeX accepts but LaTeX would not, such as a Unicode
  // letter in math mode) are errors too: the book's formulas stay plain LaTeX.
  try {
    return {
      html: katex.renderToString(tex, {
        displayMode: display,
        throwOnError: true,
        strict: "error",
        trust: false,
        // A fresh copy per formula: \gdef in one formula must not leak into the next.
        macros: Object.assign({}, request.macros),
      }),
    };
  } catch (e) {
    return { error: e instanceof katex.ParseError ? e.message : String(e) };
  }
});
process.stdout.write(JSON.stringify(answer));

MathJax.Hub.Config({
  // The book's own MathJax setting (Doxygen's MATHJAX_CODEFILE): no "Loading ..." or
  // "Typesetting ..." box in the corner of the page while MathJax works.
  messageStyle: "none"
});
// The SVG output leaves no text behind: a formula's symbols would be missing from find-in-page,
// copied text and screen readers. AssistiveMML adds each formula as hidden MathML beside its
// picture (its text is the formula's), so they see it. Loaded only once the TeX input is (a page
// with formulas): on a page without any, its hook finds no MathML code loaded, throws, and
// MathJax never finishes.
MathJax.Hub.Register.StartupHook("TeX Jax Ready", function () {
  return MathJax.Ajax.Require("[MathJax]/extensions/AssistiveMML.js");
});
// A numbered display formula is laid out as wide as the column was when MathJax typeset it (the
// number sits at the right edge): after the window narrows, e.g. from 1400 to 1000 px, it would
// stick out of the column and scroll sideways. So once a resize settles, MathJax lays every
// formula out again at the new width (under a second for the longest chapter).
(function () {
  var width = window.innerWidth, timer = null;
  window.addEventListener("resize", function () {
    if (window.innerWidth === width) return;
    width = window.innerWidth;
    clearTimeout(timer);
    timer = setTimeout(function () { MathJax.Hub.Queue(["Rerender", MathJax.Hub]); }, 200);
  });
})();
// An identifier from the code inside a formula, \mathtt{warp\_idx} (or \texttt{warp_idx}), looks
// like the same name in a code span of the prose: MathJax sets it as text (not as TeX's
// typewriter glyphs) and book.css gives it the code spans' font and colour (class MJX-monospace).
MathJax.Hub.Register.StartupHook("TeX Jax Ready", function () {
  var TEX = MathJax.InputJax.TeX, MML = MathJax.ElementJax.mml;
  TEX.Definitions.macros.mathtt = "BookCode";
  TEX.Parse.Augment({
    BookCode: function (name) {
      var text = this.GetArgument(name).replace(/\\([_#&%$])/g, "$1").replace(/\\,/g, " ");
      this.Push(MML.mtext(text).With({ mathvariant: MML.VARIANT.MONOSPACE }));
    }
  });
});
MathJax.Hub.Register.StartupHook("SVG Jax Ready", function () {
  var MML = MathJax.ElementJax.mml, SVG = MathJax.OutputJax.SVG;
  var toSVG = MML.mtext.prototype.toSVG;
  MML.mtext.Augment({
    toSVG: function () {  // only monospace text: \text{...} keeps TeX's own font
      if (this.Get("mathvariant") !== MML.VARIANT.MONOSPACE) return toSVG.apply(this, arguments);
      var inherit = SVG.config.mtextFontInherit;
      SVG.config.mtextFontInherit = true;
      try { return toSVG.apply(this, arguments); } finally { SVG.config.mtextFontInherit = inherit; }
    }
  });
});

MathJax.Hub.Config({
  // The book's own MathJax setting (Doxygen's MATHJAX_CODEFILE): no "Loading ..." or
  // "Typesetting ..." box in the corner of the page while MathJax works.
  messageStyle: "none"
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

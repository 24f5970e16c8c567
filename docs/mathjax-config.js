MathJax.Hub.Config({
  // The book's own MathJax setting (Doxygen's MATHJAX_CODEFILE): no "Loading ..." or
  // "Typesetting ..." box in the corner of the page while MathJax works.
  messageStyle: "none"
});

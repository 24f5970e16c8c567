/*
 * Figures open full size on click. Each picture of the book is drawn for the content column
 * (820 px at a 1400 px window) and shrinks with a narrower one, down to the width at which its
 * smallest text is 11 px (docs/tidy_html.py sets that min-width); a narrower column scrolls it
 * sideways inside this link (book.css). Clicking it opens the SVG on its own, where the browser
 * can zoom it. Doxygen shows a picture as an <object> with
 * pointer-events: none, so the link wrapped around it receives the click.
 */
document.addEventListener("DOMContentLoaded", function () {
  var shown = document.querySelectorAll(
    "div.contents div.image object[data$='.svg'], div.contents div.image img[src$='.svg']");
  for (var i = 0; i < shown.length; ++i) {
    var figure = shown[i];
    if (figure.parentElement && figure.parentElement.localName === "a") continue;
    var link = document.createElement("a");
    link.href = figure.getAttribute("data") || figure.getAttribute("src");
    link.className = "book-figure-link";
    link.title = "Open the figure full size";
    link.target = "_blank";
    figure.parentElement.insertBefore(link, figure);
    link.appendChild(figure);
  }
});

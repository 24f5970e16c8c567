/*
 * Figures open full size on click. Each picture of the book is drawn for the content column
 * (820 px at a 1400 px window) and shrinks with a narrower one, down to the width at which its
 * smallest text is 11 px (docs/tidy_html.py sets that min-width); a narrower column scrolls it
 * sideways inside its link (book.css). Doxygen shows a picture as an <object> with
 * pointer-events: none, so the link wrapped around it receives the click.
 *
 * A plain click opens the figure in a viewer over the page: as large as the window allows, with
 * its caption, a button that doubles it (the viewer then scrolls), and a link to the SVG alone.
 * Escape, the close button or a click beside the picture closes it and gives focus back to the
 * figure. The link itself still points at the SVG, so a middle click or "open in new tab" works,
 * and so does a browser without scripts.
 */
(function () {
  var viewer = null, picture = null, caption = null, zoom = null, alone = null, opener = null;
  var doubled = false, shown_width = 0;

  function fit() {
    var natural_width = picture.naturalWidth || 800, natural_height = picture.naturalHeight || 600;
    // The window less the viewer's side padding (8 px each), the frame's (12 px each) and its
    // scroll bar, and less the bar and the caption's room.
    var room_width = Math.min(viewer.clientWidth, document.documentElement.clientWidth) - 44;
    var room_height = window.innerHeight - 150;
    // As large as the window holds, but never smaller than half again the page's own size
    // (a tall figure then scrolls).
    var scale = Math.min(room_width / natural_width, room_height / natural_height);
    scale = Math.max(scale, Math.min(room_width, 1.5 * shown_width) / natural_width);
    if (doubled) scale *= 2;
    picture.style.width = Math.round(natural_width * scale) + "px";
    zoom.textContent = doubled ? "Fit the window" : "Twice as large";
    viewer.classList.toggle("book-viewer-doubled", doubled);
  }

  function close() {
    if (!viewer || viewer.hidden) return;
    viewer.hidden = true;
    document.body.classList.remove("book-viewer-open");
    if (opener) opener.focus();
  }

  function build() {
    viewer = document.createElement("div");
    viewer.className = "book-viewer";
    viewer.hidden = true;
    viewer.setAttribute("role", "dialog");
    viewer.setAttribute("aria-modal", "true");
    viewer.setAttribute("aria-label", "Figure, enlarged");
    var bar = document.createElement("div");
    bar.className = "book-viewer-bar";
    zoom = document.createElement("button");
    zoom.type = "button";
    zoom.addEventListener("click", function (e) { e.stopPropagation(); doubled = !doubled; fit(); });
    alone = document.createElement("a");
    alone.textContent = "Open the SVG alone";
    alone.target = "_blank";
    alone.addEventListener("click", function (e) { e.stopPropagation(); });
    var shut = document.createElement("button");
    shut.type = "button";
    shut.className = "book-viewer-close";
    shut.textContent = "Close (Esc)";
    shut.addEventListener("click", close);
    bar.appendChild(zoom);
    bar.appendChild(alone);
    bar.appendChild(shut);
    var frame = document.createElement("div");
    frame.className = "book-viewer-frame";
    picture = document.createElement("img");
    picture.alt = "";
    picture.addEventListener("load", fit);
    picture.addEventListener("click", function (e) { e.stopPropagation(); });
    frame.appendChild(picture);
    caption = document.createElement("div");
    caption.className = "book-viewer-caption";
    viewer.appendChild(bar);
    viewer.appendChild(frame);
    viewer.appendChild(caption);
    viewer.addEventListener("click", close);
    document.addEventListener("keydown", function (e) { if (e.key === "Escape") close(); });
    window.addEventListener("resize", function () { if (!viewer.hidden) fit(); });
    document.body.appendChild(viewer);
  }

  function open(link, e) {
    if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    if (!viewer) build();
    opener = link;
    shown_width = link.firstElementChild.getBoundingClientRect().width;
    doubled = false;
    var image = link.closest("div.image");
    var text = image && image.querySelector(".caption");
    caption.textContent = text ? text.textContent : "";
    picture.alt = caption.textContent;
    alone.href = link.href;
    viewer.hidden = false;
    document.body.classList.add("book-viewer-open");
    if (picture.getAttribute("src") === link.getAttribute("href") && picture.complete) fit();
    else picture.src = link.getAttribute("href");
    zoom.focus();
  }

  document.addEventListener("DOMContentLoaded", function () {
    var shown = document.querySelectorAll(
      "div.contents div.image object[data$='.svg'], div.contents div.image img[src$='.svg']");
    for (var i = 0; i < shown.length; ++i) {
      var figure = shown[i];
      if (figure.parentElement && figure.parentElement.localName === "a") continue;
      var link = document.createElement("a");
      link.href = figure.getAttribute("data") || figure.getAttribute("src");
      link.className = "book-figure-link";
      link.title = "Enlarge the figure";
      link.target = "_blank";
      link.addEventListener("click", open.bind(null, link));
      figure.parentElement.insertBefore(link, figure);
      link.appendChild(figure);
    }
  });
})();

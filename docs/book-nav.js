/*
 * Previous / next links at the foot of each page of the course book, so it reads from the
 * first page to the last. The order is the sidebar's (Doxygen's NAVTREE, built from the
 * layout): introduction, front matter, chapters, appendices. API reference pages get none.
 * Also the breadcrumb at the bottom of the window: Doxygen's names the parent page, which for
 * every page of the book is the introduction; this one names where the page sits in the
 * sidebar ("Chapters › Lab 03 — Flash-decoding").
 */
var BookNav = {
  /** The book's pages in reading order: [{file, title}], each file once. */
  order: function () {
    var pages = [];
    var seen = {};
    function walk(nodes) {
      for (var i = 0; i < nodes.length; ++i) {
        var title = nodes[i][0], url = nodes[i][1], children = nodes[i][2];
        if (url === "files.html") continue;  // the API reference is not read in order
        // A group that opens on its first child's page ("Appendices" on Appendix A) leaves the
        // page to the child, so the link is titled with the page's own name.
        var firstChildUrl = Array.isArray(children) && children.length > 0 ? children[0][1] : null;
        if (url === firstChildUrl) { walk(children); continue; }
        if (typeof url === "string" && /^[A-Za-z0-9_.-]+\.html$/.test(url) && !seen[url]) {
          seen[url] = true;
          pages.push({ file: url, title: title });
        }
        if (Array.isArray(children)) walk(children);
      }
    }
    if (typeof NAVTREE !== "undefined" && NAVTREE.length > 0 && Array.isArray(NAVTREE[0][2])) {
      walk(NAVTREE[0][2]);
    }
    return pages;
  },

  link: function (page, cls, label) {
    var a = document.createElement("a");
    a.className = cls;
    a.href = page.file;
    var small = document.createElement("span");
    small.className = "book-nav-label";
    small.textContent = label;
    var title = document.createElement("span");
    title.className = "book-nav-title";
    title.textContent = page.title;
    a.appendChild(small);
    a.appendChild(title);
    return a;
  },

  render: function () {
    // Inside the page's text, so the links follow it (div.contents is a flex row next to the
    // interactive contents).
    var contents = document.querySelector("div.contents > div.textblock") ||
                   document.querySelector("div.contents");
    if (!contents) return;
    var here = window.location.pathname.split("/").pop() || "index.html";
    var pages = BookNav.order();
    var at = -1;
    for (var i = 0; i < pages.length; ++i) {
      if (pages[i].file === here) { at = i; break; }
    }
    if (at < 0) return;
    var nav = document.createElement("nav");
    nav.className = "book-nav";
    nav.setAttribute("aria-label", "Previous and next page");
    if (at > 0) nav.appendChild(BookNav.link(pages[at - 1], "book-prev", "\u2190 Previous"));
    if (at + 1 < pages.length) nav.appendChild(BookNav.link(pages[at + 1], "book-next", "Next \u2192"));
    contents.appendChild(nav);
  },

  /** The sidebar's titles from its top to `file`: [{file, title}], or null. */
  path: function (file) {
    function walk(nodes, above) {
      for (var i = 0; i < nodes.length; ++i) {
        var here = above.concat([{ file: nodes[i][1], title: nodes[i][0] }]);
        if (nodes[i][1] === file) return here;
        if (Array.isArray(nodes[i][2])) {
          var found = walk(nodes[i][2], here);
          if (found) return found;
        }
      }
      return null;
    }
    if (typeof NAVTREE === "undefined" || NAVTREE.length === 0 || !Array.isArray(NAVTREE[0][2])) {
      return null;
    }
    return walk(NAVTREE[0][2], []);
  },

  breadcrumb: function () {
    var list = document.querySelector("#nav-path > ul");
    var here = window.location.pathname.split("/").pop() || "index.html";
    var path = BookNav.path(here);
    if (!list || !path) return;  // a page outside the sidebar keeps Doxygen's own
    var old = list.querySelectorAll("li.navelem");
    for (var i = 0; i < old.length; ++i) list.removeChild(old[i]);
    var footer = list.querySelector("li.footer");
    for (var j = 0; j < path.length; ++j) {
      var li = document.createElement("li");
      li.className = "navelem";
      var a = document.createElement("a");
      a.className = "el";
      a.href = path[j].file;
      a.textContent = path[j].title;
      if (j + 1 === path.length) a.setAttribute("aria-current", "page");
      li.appendChild(a);
      list.insertBefore(li, footer);
    }
  },

  /**
   * The sidebar is a table of contents, not the whole tree: "Chapters" is opened, so every
   * chapter's title shows, but only the chapter being read shows its pages (its lesson, bench,
   * notes and measurements): Doxygen opens the path to a later page, and this opens the chapter's
   * entry on its lesson page; a reader sees some 20 entries, not 40. "Conventions" and
   * "Appendices" are opened too, so Notation by lab and the Glossary, which every chapter's
   * glance points to, are always in the sidebar. The tree is
   * built after the page loads and Doxygen then opens the path to the page itself, so this waits
   * for that (the page's entry marked, or on the front page the tree's root shown) and tries
   * again until those entries are open, a few times at most, then gives up quietly; the page's
   * own entry is then scrolled into view.
   */
  openChapters: function (tries) {
    tries = tries || 0;
    function open(item) {  // whether it is open now; a closed one is clicked open
      var toggle = item.querySelector(":scope > a[href^='javascript']");
      var arrow = toggle && toggle.querySelector("span.arrow");
      if (!arrow) return true;  // a leaf
      if (arrow.textContent.indexOf("\u25ba") < 0) return true;
      toggle.click();
      return false;
    }
    var here = window.location.pathname.split("/").pop() || "index.html";
    var selected = document.querySelector("#nav-tree-contents div.item.selected");
    var chapters = null;
    var others = [];  // Conventions (Notation by lab under it) and the Appendices, opened too
    var items = document.querySelectorAll("#nav-tree-contents div.item");
    for (var i = 0; i < items.length; ++i) {
      var label = items[i].querySelector("span.label");
      var text = label ? label.textContent.trim() : "";
      if (text === "Chapters") chapters = items[i];
      else if (text === "Conventions" || text === "Appendices") others.push(items[i]);
    }
    var done = false;
    if (chapters && (selected || here === "index.html")) {
      done = open(chapters);
      var list = chapters.parentElement.querySelector(":scope > ul");
      var labs = list ? list.querySelectorAll(":scope > li > div.item") : [];
      if (labs.length === 0) done = false;  // "Chapters" not yet unfolded
      // On a chapter's own lesson page Doxygen marks its entry but leaves it closed: open it, so
      // its later pages show under it as they do from any of them.
      for (var j = 0; j < labs.length; ++j) {
        var link = labs[j].querySelector("span.label a");
        if (link && (link.getAttribute("href") || "").split("#")[0] === here) {
          done = open(labs[j]) && done;
        }
      }
      for (var k = 0; k < others.length; ++k) {
        done = open(others[k]) && done;
      }
    }
    if (done) {
      selected = BookNav.markIntroduction() || selected;
      // After the branches' slide-down: the page's own entry in view, mid-sidebar, and the
      // sidebar stopped at an entry's top edge, so no entry shows cut in half under the search
      // box.
      setTimeout(function () {
        if (!selected || !selected.scrollIntoView) return;
        selected.scrollIntoView({ block: "center" });
        var tree = document.getElementById("nav-tree");
        if (!tree || tree.scrollTop <= 0) return;
        var edge = tree.getBoundingClientRect().top;
        var rows = tree.querySelectorAll("div.item");
        for (var r = 0; r < rows.length; ++r) {
          var box = rows[r].getBoundingClientRect();
          if (box.bottom <= edge + 1) continue;
          if (box.top < edge) tree.scrollTop -= edge - box.top;
          break;
        }
      }, 400);
      return;
    }
    if (tries < 60) setTimeout(function () { BookNav.openChapters(tries + 1); }, 50);
  },

  /**
   * The Introduction is the front page, and so is the book's title at the top of the sidebar:
   * Doxygen marks the first entry with that page, the title. On the front page (without a
   * section in its address) this marks "Introduction" instead. Returns the entry marked, or null.
   */
  markIntroduction: function () {
    var here = window.location.pathname.split("/").pop() || "index.html";
    if (here !== "index.html" || window.location.hash.length > 1) return null;
    var items = document.querySelectorAll("#nav-tree-contents div.item");
    if (items.length < 2) return null;
    for (var i = 1; i < items.length; ++i) {
      var label = items[i].querySelector("span.label");
      var a = label && label.querySelector("a");
      if (!a || label.textContent.trim() !== "Introduction") continue;
      if (!/(^|\/)index\.html$/.test(a.getAttribute("href") || "")) continue;
      for (var j = 0; j < items.length; ++j) {
        if (j !== i && items[j].classList.contains("selected")) {
          items[j].classList.remove("selected");
          items[j].removeAttribute("id");
        }
      }
      items[i].classList.add("selected");
      items[i].id = "selected";
      return items[i];
    }
    return null;
  },

  /**
   * Short sidebar entries. A chapter's title ("Lab 07 — Tensor-core GQA decode") would put
   * "Lab 07" at the start of every entry, and a longer one wrap with the title running on under
   * the number. The sidebar shows the number apart, as a book's table of
   * contents does: "07" in a column of its own, the title beside it, its wrapped lines under its
   * first (a hanging indent); a chapter's bench and notes pages, listed under it, say only "At the
   * bench", "Notes" and "Measurements"; an interlude's further page, listed under its first,
   * only its own title ("The GPU at full speed" under "Interlude I: the GPU in brief"); an
   * appendix "C", a section of one "A.5". Page titles, the
   * breadcrumb and the links at a page's foot keep the whole title ("Lab 07 — ..."); so does the
   * entry's tooltip.
   * Doxygen builds the sidebar's entries as branches open, so new ones are relabelled as they come.
   */
  shortLabel: function (title, underInterlude) {
    var m = underInterlude ? /^Interlude [IVX]+: (.+)$/.exec(title) : null;
    if (m) return { num: "", text: m[1].charAt(0).toUpperCase() + m[1].slice(1) };
    m = /^Lab (\d\d) \u2014 (.+)$/.exec(title);
    if (m) return { num: m[1], text: m[2] };
    m = /^Lab \d\d: (.+)$/.exec(title);
    if (m) return { num: "", sub: true, text: m[1].charAt(0).toUpperCase() + m[1].slice(1) };
    m = /^Appendix ([A-Z]) \u2014 (.+)$/.exec(title);
    if (m) return { num: m[1], text: m[2] };
    m = /^([A-Z]\.\d+) (?:Lab \d\d \u2014 )?(.+)$/.exec(title);
    if (m) return { num: m[1], text: m[2] };
    return null;
  },

  shortenSidebar: function () {
    var tree = document.getElementById("nav-tree");
    if (!tree) return;
    function relabel() {
      var links = tree.querySelectorAll("span.label > a:not(.book-nav-short)");
      for (var i = 0; i < links.length; ++i) {
        var a = links[i];
        var title = a.textContent.trim();
        // (an entry under an interlude's first page: the parent's link, which keeps its title)
        var li = a.closest("li");
        var parentLi = li && li.parentElement ? li.parentElement.closest("li") : null;
        var parent = parentLi ? parentLi.querySelector(":scope > div.item span.label > a") : null;
        var short = BookNav.shortLabel(
            title, !!parent && /^Interlude [IVX]+:/.test(parent.title || parent.textContent.trim()));
        a.classList.add("book-nav-short");
        if (!short) continue;
        a.title = title;
        a.textContent = "";
        var num = document.createElement("span");
        num.className = "book-nav-num";
        num.textContent = short.num;
        var text = document.createElement("span");
        text.className = "book-nav-text";
        text.textContent = short.text;
        if (short.num) a.appendChild(num);
        else if (short.sub) a.classList.add("book-nav-sub");
        a.appendChild(text);
      }
    }
    relabel();
    if (window.MutationObserver) {
      new MutationObserver(relabel).observe(tree, { childList: true, subtree: true });
    }
  },

  /**
   * The "☰ Chapters" button of a narrow window (below 1000 px, where book.css folds the sidebar
   * away so the text gets the whole width): it opens and closes the sidebar. Wider windows
   * never show it.
   */
  contentsToggle: function () {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "book-contents-toggle";
    button.textContent = "\u2630 Chapters";
    function remember(open) {  // the choice holds for the next page of this visit
      try { window.sessionStorage.setItem("bookContentsOpen", open ? "1" : "0"); } catch (e) {}
    }
    var wasOpen = false;
    try { wasOpen = window.sessionStorage.getItem("bookContentsOpen") === "1"; } catch (e) {}
    if (wasOpen) document.documentElement.classList.add("book-contents-open");
    button.setAttribute("aria-expanded", wasOpen ? "true" : "false");
    button.addEventListener("click", function () {
      var open = document.documentElement.classList.toggle("book-contents-open");
      remember(open);
      button.setAttribute("aria-expanded", open ? "true" : "false");
      window.dispatchEvent(new Event("resize"));  // Doxygen's resize.js lays the panes out again
    });
    var content = document.getElementById("doc-content");
    if (content) content.insertBefore(button, content.firstChild);
  },

  /**
   * The page's contents (Doxygen's div.toc) as a bar across the top of the text, from 768 to
   * 1399 px (book.css): its heading names the section being read, the one the theme's
   * interactive contents marks `active` as the page scrolls; a click on a section in the opened
   * list goes there and folds the list, as do Escape and a click outside it. Wider windows show
   * the contents as a column beside the text and hide the name.
   */
  tocBar: function () {
    var toc = document.querySelector("div.contents > div.toc");
    var heading = toc && toc.querySelector(":scope > h3");
    if (!heading) return;
    heading.textContent = "Contents";
    heading.setAttribute("role", "button");
    heading.setAttribute("tabindex", "0");
    var current = document.createElement("span");
    current.className = "book-toc-current";
    heading.appendChild(current);
    function show() {
      var active = toc.querySelector("ul a.active");
      current.textContent = active ? active.textContent : "";
      heading.setAttribute("aria-expanded", toc.classList.contains("open") ? "true" : "false");
    }
    function fold() { toc.classList.remove("open"); show(); }
    heading.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); heading.click(); }
    });
    heading.addEventListener("click", function () { setTimeout(show, 0); });
    toc.addEventListener("click", function (e) {
      if (e.target.closest && e.target.closest("ul a")) fold();
    });
    document.addEventListener("click", function (e) {
      if (toc.classList.contains("open") && !toc.contains(e.target)) fold();
    });
    document.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && toc.classList.contains("open")) fold();
    });
    var scroller = document.getElementById("doc-content") || window;
    scroller.addEventListener("scroll", function () { setTimeout(show, 0); });
    show();
  },

  /**
   * On paper a fold could not be opened, so printing opens every test table's hint, every long
   * listing of a bench page and every folded aside of a chapter, and folds back afterwards those
   * the reader had not opened
   * (book.css hides a hint's "Hint" line in print and labels the text instead).
   */
  printFolds: function () {
    var opened = [];
    window.addEventListener("beforeprint", function () {
      var folds = document.querySelectorAll(
        "details.book-hint:not([open]), details.book-listing:not([open]), details.book-fold:not([open])");
      for (var i = 0; i < folds.length; ++i) { folds[i].open = true; opened.push(folds[i]); }
    });
    window.addEventListener("afterprint", function () {
      while (opened.length) opened.pop().open = false;
    });
  },

  /*
   * A page's contents longer than the window (lab 05's notes list twelve stumbles) show the
   * subsections of the section being read only; the others fold to their headings (book.css).
   */
  foldLongToc: function () {
    var toc = document.querySelector("div.contents > div.toc");
    if (toc && toc.querySelectorAll("li.level2").length > 10) toc.classList.add("book-toc-folded");
  },

  init: function () {
    // The interactive contents count a section as the one being read once its heading is this
    // close to the top of the window. The theme's 38 px (72 px before) named the section above
    // for as long as the heading stayed in view below the contents bar: a reader at the top of
    // "Run", its heading a third of the way down, saw "Files". A heading in the top third of
    // the window (and never less than 72 px: one reached through a link stops 64 px down, below
    // the bar) starts the section being read.
    function spyOffset() {
      if (typeof DoxygenAwesomeInteractiveToc === "undefined") return;
      DoxygenAwesomeInteractiveToc.topOffset = Math.max(72, Math.round(window.innerHeight / 3));
    }
    spyOffset();
    window.addEventListener("resize", function () {
      spyOffset();
      if (typeof DoxygenAwesomeInteractiveToc !== "undefined") DoxygenAwesomeInteractiveToc.update();
    });
    window.addEventListener("load", function () { BookNav.tocBar(); });
    // Back at the page's top through its address, Doxygen marks the book's title again.
    window.addEventListener("hashchange", function () {
      setTimeout(function () { BookNav.markIntroduction(); }, 0);
    });
    function run() {
      BookNav.shortenSidebar();
      BookNav.contentsToggle();
      BookNav.render();
      BookNav.breadcrumb();
      BookNav.openChapters(0);
      BookNav.printFolds();
      BookNav.foldLongToc();
    }
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", run);
    } else {
      run();
    }
  }
};

/*
 * The search box of the course book: full-text search over every page of the book, offline.
 * Doxygen's own search (SEARCHENGINE) knows code symbols and page titles only. This takes over
 * its box (#MSearchField, at the top of the sidebar; below 1000 px the sidebar folds away and
 * the box shows when "☰ Chapters" opens it) and searches html/search_book.js, the index
 * docs/search_index.py writes at build time: every section of every page of the book, with its
 * heading, anchor and plain text, and Doxygen's symbols as a second list. The index is a script
 * that assigns a global (a page opened from disk cannot fetch a file), loaded the first time
 * the box gets the focus.
 *
 * A section matches when every word typed begins a word of its heading or text ("corr" finds
 * "correction", "lse" does not find "else"). The sections where every word is a whole word
 * come first ("corr" before "correction"); within each of those two groups, those with every
 * word in the heading, then those with some, then the rest; within those, the sections that use
 * the words most (up to 5 times each), then reading order. Enter opens the chosen result (the first, until the
 * arrows move the choice), Escape closes the list, a click outside it too.
 */
var BookSearch = {
  MAX_SECTIONS: 30,
  MAX_SYMBOLS: 12,
  index: null,      // BOOK_SEARCH once loaded, each section with its lowercase text added
  field: null,
  panel: null,
  chosen: -1,
  pending: null,    // the query typed while the index was loading

  relPath: function () {
    // Every page of the book lies in html/ itself; the script's own src gives the way there.
    var scripts = document.getElementsByTagName("script");
    for (var i = 0; i < scripts.length; ++i) {
      var src = scripts[i].getAttribute("src") || "";
      var m = src.match(/^(.*?)book-search\.js$/);
      if (m) return m[1];
    }
    return "";
  },

  load: function () {
    if (BookSearch.index || BookSearch.loading) return;
    BookSearch.loading = true;
    function ready() {
      if (typeof BOOK_SEARCH === "undefined") return;
      var sections = BOOK_SEARCH.sections;
      for (var i = 0; i < sections.length; ++i) {
        var s = sections[i];
        s.lowHeading = s[2].toLowerCase();
        s.low = s.lowHeading + "\n" + s[3].toLowerCase();
      }
      BookSearch.index = BOOK_SEARCH;
      if (BookSearch.pending !== null) BookSearch.search(BookSearch.pending);
    }
    if (typeof BOOK_SEARCH !== "undefined") { ready(); return; }
    var script = document.createElement("script");
    script.src = BookSearch.relPath() + "search_book.js";
    script.onload = ready;
    script.onerror = function () {
      BookSearch.show([], [], "The search index (search_book.js) did not load.");
    };
    document.head.appendChild(script);
  },

  words: function (query) {
    var words = query.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 0; });
    var unique = [];
    for (var i = 0; i < words.length; ++i) if (unique.indexOf(words[i]) < 0) unique.push(words[i]);
    return unique;
  },

  escape: function (s) {
    return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
            .replace(/"/g, "&quot;");
  },

  escapeRegExp: function (s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); },

  /** `text` escaped, every word of `words` in it marked. */
  highlight: function (text, words) {
    if (!words.length) return BookSearch.escape(text);
    var pattern = new RegExp("(" + words.map(BookSearch.escapeRegExp).join("|") + ")", "gi");
    var parts = text.split(pattern);
    var out = "";
    for (var i = 0; i < parts.length; ++i) {
      out += i % 2 ? "<mark>" + BookSearch.escape(parts[i]) + "</mark>" : BookSearch.escape(parts[i]);
    }
    return out;
  },

  /** About 160 characters of `text` around the first word of `words` found in it. */
  snippet: function (text, words) {
    var low = text.toLowerCase();
    var at = -1;
    for (var i = 0; i < words.length; ++i) {
      var k = low.indexOf(words[i]);
      if (k >= 0 && (at < 0 || k < at)) at = k;
    }
    if (at < 0) at = 0;
    var start = Math.max(0, at - 60);
    if (start > 0) {
      var space = text.indexOf(" ", start);
      start = space >= 0 && space < at ? space + 1 : start;
    }
    var end = Math.min(text.length, start + 170);
    if (end < text.length) {
      var cut = text.lastIndexOf(" ", end);
      if (cut > at) end = cut;
    }
    return (start > 0 ? "\u2026" : "") + text.slice(start, end) + (end < text.length ? "\u2026" : "");
  },

  wholeWords: function (low, words) {
    var n = 0;
    for (var i = 0; i < words.length; ++i) {
      if (new RegExp("(^|[^a-z0-9_])" + BookSearch.escapeRegExp(words[i]) + "($|[^a-z0-9_])").test(low)) ++n;
    }
    return n;
  },

  /** A word typed, as a pattern of the start of a word ("lse" is not found inside "else"; "map"
   * is found in "slot_mapping", an underscore beginning a word). */
  startOf: function (word) {
    return new RegExp("(^|[^a-z0-9])" + BookSearch.escapeRegExp(word), "g");
  },

  /** [{section, rank}] of the sections holding every word, best first. */
  match: function (words) {
    var sections = BookSearch.index.sections;
    var starts = words.map(BookSearch.startOf);
    var found = [];
    for (var i = 0; i < sections.length; ++i) {
      var s = sections[i], all = true, inHeading = 0;
      for (var j = 0; j < words.length; ++j) {
        starts[j].lastIndex = 0;
        if (!starts[j].test(s.low)) { all = false; break; }
        starts[j].lastIndex = 0;
        if (starts[j].test(s.lowHeading)) ++inHeading;
      }
      if (!all) continue;
      var tier = inHeading === words.length ? 0 : inHeading > 0 ? 1 : 2;
      var whole = BookSearch.wholeWords(s.low, words) === words.length ? 0 : 1;
      // How much the section is about the words: their occurrences, each word's count capped
      // at 5 so one long list of mentions does not win over a section that explains the term.
      var uses = 0;
      for (var k = 0; k < words.length; ++k) {
        uses += Math.min(5, (s.low.match(starts[k]) || []).length);
      }
      // A page whose title holds every word (its opening section, no anchor) is the best hit of
      // its tier: "online softmax" finds lab 02 before a later section that mentions it more.
      var opening = tier === 0 && s[1] === "" ? 0 : 1;
      // Then the pages that teach (lessons, interludes, the front matter) before the pages that
      // use or look up (a bench, the notes, the measurements, the appendices): "corr" finds
      // lab 02's lesson, where it is defined, before lab 07's bench page.
      var page = BookSearch.index.pages[s[0]][0];
      var lookup = /_(bench|review|measurements)\.html$|^(given_code|glossary|measurements|tools_inside|instructor)/.test(page) ? 1 : 0;
      found.push({ section: s, order: i, rank: [whole, tier, opening, lookup, -uses] });
    }
    found.sort(function (a, b) {
      for (var r = 0; r < a.rank.length; ++r) if (a.rank[r] !== b.rank[r]) return a.rank[r] - b.rank[r];
      return a.order - b.order;
    });
    return found;
  },

  matchSymbols: function (words) {
    var symbols = BookSearch.index.symbols || [];
    var found = [];
    for (var i = 0; i < symbols.length; ++i) {
      var low = (symbols[i][0] + " " + symbols[i][2]).toLowerCase(), all = true;
      for (var j = 0; j < words.length; ++j) if (low.indexOf(words[j]) < 0) { all = false; break; }
      if (all) found.push({ symbol: symbols[i], starts: symbols[i][0].toLowerCase().indexOf(words[0]) === 0 ? 0 : 1, order: i });
    }
    found.sort(function (a, b) { return a.starts - b.starts || a.order - b.order; });
    return found;
  },

  search: function (query) {
    var words = BookSearch.words(query);
    if (!words.length) { BookSearch.close(); return; }
    if (!BookSearch.index) { BookSearch.pending = query; BookSearch.load(); return; }
    BookSearch.pending = null;
    BookSearch.show(BookSearch.match(words), BookSearch.matchSymbols(words), null, words);
  },

  show: function (sections, symbols, message, words) {
    var panel = BookSearch.panel;
    var rel = BookSearch.relPath();
    var html = "";
    var pages = BookSearch.index ? BookSearch.index.pages : [];
    if (message) html += '<div class="book-search-none">' + BookSearch.escape(message) + "</div>";
    else if (!sections.length && !symbols.length) {
      html += '<div class="book-search-none">No section of the book holds every word of “' +
              BookSearch.escape(BookSearch.field.value.trim()) + "”.</div>";
    }
    if (sections.length) {
      html += '<div class="book-search-group">In the book: ' + sections.length +
              (sections.length === 1 ? " section" : " sections") +
              (sections.length > BookSearch.MAX_SECTIONS ? ", the first " + BookSearch.MAX_SECTIONS + " shown" : "") +
              "</div>";
      for (var i = 0; i < sections.length && i < BookSearch.MAX_SECTIONS; ++i) {
        var s = sections[i].section, page = pages[s[0]];
        var url = rel + page[0] + (s[1] ? "#" + s[1] : "");
        var title = s[1] ? s[2] : page[1];
        html += '<a class="book-search-hit" role="option" href="' + BookSearch.escape(url) + '">' +
                '<span class="book-search-title">' + BookSearch.highlight(title, words) +
                (s[1] ? '<span class="book-search-page"> \u2014 ' + BookSearch.escape(page[1]) + "</span>" : "") +
                "</span>" +
                '<span class="book-search-snippet">' +
                BookSearch.highlight(BookSearch.snippet(s[3], words), words) + "</span></a>";
      }
    }
    if (symbols.length) {
      html += '<div class="book-search-group">In the code (API reference): ' + symbols.length +
              (symbols.length > BookSearch.MAX_SYMBOLS ? ", the first " + BookSearch.MAX_SYMBOLS + " shown" : "") +
              "</div>";
      for (var k = 0; k < symbols.length && k < BookSearch.MAX_SYMBOLS; ++k) {
        var y = symbols[k].symbol;
        html += '<a class="book-search-hit book-search-symbol" role="option" href="' +
                BookSearch.escape(rel + y[1]) + '"><span class="book-search-title"><code>' +
                BookSearch.highlight(y[0], words) + "</code>" +
                (y[2] ? '<span class="book-search-page"> \u2014 ' + BookSearch.escape(y[2]) + "</span>" : "") +
                "</span></a>";
      }
    }
    panel.innerHTML = html;
    panel.scrollTop = 0;
    BookSearch.place();
    panel.hidden = false;
    BookSearch.field.setAttribute("aria-expanded", "true");
    BookSearch.choose(panel.querySelector("a.book-search-hit") ? 0 : -1);
  },

  /** Under the box, as wide as the window allows (the sidebar is narrower than a result). */
  place: function () {
    var r = BookSearch.field.getBoundingClientRect();
    var panel = BookSearch.panel;
    var left = Math.max(8, r.left);
    panel.style.left = left + "px";
    panel.style.top = (r.bottom + 6) + "px";
    panel.style.width = Math.min(560, window.innerWidth - left - 16) + "px";
    panel.style.maxHeight = Math.max(160, window.innerHeight - r.bottom - 24) + "px";
  },

  hits: function () { return BookSearch.panel.querySelectorAll("a.book-search-hit"); },

  choose: function (i) {
    var hits = BookSearch.hits();
    for (var j = 0; j < hits.length; ++j) hits[j].classList.toggle("book-search-chosen", j === i);
    BookSearch.chosen = i;
    if (i >= 0 && hits[i]) {
      var top = hits[i].offsetTop, bottom = top + hits[i].offsetHeight, panel = BookSearch.panel;
      if (top < panel.scrollTop) panel.scrollTop = top - 30;
      else if (bottom > panel.scrollTop + panel.clientHeight) panel.scrollTop = bottom - panel.clientHeight;
    }
  },

  close: function () {
    if (!BookSearch.panel) return;
    BookSearch.panel.hidden = true;
    BookSearch.chosen = -1;
    BookSearch.field.setAttribute("aria-expanded", "false");
  },

  open: function (hit) {
    BookSearch.close();
    window.location.href = hit.href;   // a link to this very page only scrolls: close first
  },

  onKey: function (e) {
    var hits = BookSearch.panel.hidden ? [] : BookSearch.hits();
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      if (!hits.length) return;
      e.preventDefault();
      var n = hits.length;
      BookSearch.choose(e.key === "ArrowDown" ? (BookSearch.chosen + 1) % n
                                              : (BookSearch.chosen - 1 + n) % n);
    } else if (e.key === "Enter") {
      e.preventDefault();
      if (hits.length) BookSearch.open(hits[Math.max(0, BookSearch.chosen)]);
      else BookSearch.search(BookSearch.field.value);
    } else if (e.key === "Escape") {
      e.preventDefault();
      if (!BookSearch.panel.hidden) BookSearch.close();
      else { BookSearch.field.value = ""; BookSearch.field.blur(); }
    }
  },

  /** Takes over Doxygen's box once menu.js has written it. */
  attach: function (tries) {
    var old = document.getElementById("MSearchField");
    if (!old) {
      if (tries < 50) setTimeout(function () { BookSearch.attach(tries + 1); }, 50);
      return;
    }
    // A copy of the field without Doxygen's handlers (its results window, its filter menu).
    var field = old.cloneNode(false);
    ["onfocus", "onblur", "onkeyup", "onkeydown"].forEach(function (a) { field.removeAttribute(a); });
    field.value = "";
    field.setAttribute("placeholder", "Search the book");
    field.setAttribute("autocomplete", "off");
    field.setAttribute("role", "combobox");
    field.setAttribute("aria-label", "Search the book");
    field.setAttribute("aria-expanded", "false");
    field.setAttribute("aria-controls", "book-search-results");
    old.parentNode.replaceChild(field, old);
    var select = document.getElementById("MSearchSelect");
    if (select) { select.removeAttribute("onmouseover"); select.removeAttribute("onmouseout"); }
    var closer = document.getElementById("MSearchClose");
    if (closer) closer.style.display = "none";
    var form = document.getElementById("FSearchBox");
    if (form) form.addEventListener("submit", function (e) { e.preventDefault(); });
    BookSearch.field = field;

    var panel = document.createElement("div");
    panel.id = "book-search-results";
    panel.className = "book-search-results";
    panel.setAttribute("role", "listbox");
    panel.hidden = true;
    document.body.appendChild(panel);
    BookSearch.panel = panel;

    var timer = null;
    field.addEventListener("focus", BookSearch.load);
    field.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { BookSearch.search(field.value); }, 80);
    });
    field.addEventListener("keydown", BookSearch.onKey);
    panel.addEventListener("keydown", BookSearch.onKey);
    panel.addEventListener("mousemove", function (e) {
      var hit = e.target.closest && e.target.closest("a.book-search-hit");
      if (!hit) return;
      var hits = BookSearch.hits();
      for (var i = 0; i < hits.length; ++i) if (hits[i] === hit && i !== BookSearch.chosen) BookSearch.choose(i);
    });
    panel.addEventListener("click", function (e) {
      var hit = e.target.closest && e.target.closest("a.book-search-hit");
      if (hit) { e.preventDefault(); BookSearch.open(hit); }
    });
    document.addEventListener("mousedown", function (e) {
      if (!panel.hidden && !panel.contains(e.target) && e.target !== field) BookSearch.close();
    });
    window.addEventListener("resize", function () { if (!panel.hidden) BookSearch.place(); });
  },

  init: function () {
    function run() { setTimeout(function () { BookSearch.attach(0); }, 0); }
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
    else run();
  }
};

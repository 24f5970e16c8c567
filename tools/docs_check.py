#!/usr/bin/env python3
"""The course book's checks, over a built site (build/docs/html). Python 3 standard library only.

- structure_check: the book's order and shape: the index lists every chapter, in order; each
  chapter carries the section ids every chapter has (lab_NN_why ... lab_NN_references).
- link_check: every local href/src/data in the HTML (and SVG) and in the sidebar's data resolves
  to a file, and every #fragment to an id in it; nothing is loaded from the network; the only
  external links are references: in a chapter's References section, or to a paper host (arXiv,
  DOI, proceedings).
- browser_check: Debian's chromium, headless and offline, driven over the DevTools protocol on a
  pipe (fds 3/4, NUL-separated JSON). Opens each page from disk, waits for MathJax, asserts the
  formulas rendered (no raw TeX left, no MathJax errors), every diagram's SVG loaded, and the
  console stayed clean; saves a screenshot of each page.

Run alone: python3 tools/docs_check.py build/docs/html [--screenshots DIR] [--no-browser]
"""
from __future__ import annotations

import argparse
import base64
import html.parser
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

# External links are allowed only as references: inside a chapter's References section (any
# host), or anywhere to a paper (these hosts serve papers and preprints only).
PAPER_HOSTS = {
    "arxiv.org", "www.arxiv.org", "export.arxiv.org", "doi.org", "dx.doi.org", "dl.acm.org",
    "proceedings.neurips.cc", "papers.nips.cc", "papers.neurips.cc", "openreview.net",
    "proceedings.mlr.press", "aclanthology.org",
}

# The sections every chapter has, as `lab_NN_<suffix>` ids.
CHAPTER_SECTIONS = ("why", "background", "files", "run", "implement", "tests", "notes",
                    "further", "references")

# Attributes that load or link something, per tag (HTML and SVG).
LINK_ATTRS = {
    "a": ("href", "xlink:href"), "area": ("href",), "link": ("href",),
    "script": ("src",), "img": ("src",), "iframe": ("src",), "frame": ("src",),
    "embed": ("src",), "source": ("src",), "video": ("src",), "audio": ("src",),
    "object": ("data",), "image": ("href", "xlink:href"), "use": ("href", "xlink:href"),
}
# Tags whose URL is fetched when the page loads (never allowed to be external).
LOADED_TAGS = {"link", "script", "img", "iframe", "frame", "embed", "source", "video", "audio",
               "object", "image", "use"}


# ---- parsing ---------------------------------------------------------------------------------

class _Page(html.parser.HTMLParser):
    """Collects the ids/names (link targets) and the URLs of one HTML or SVG file."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, url)
        self.in_references: set[int] = set()  # indexes into urls of links after a References id
        self._references = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k.lower(): (v or "") for k, v in attrs}
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
                # A chapter's last section, {#lab_NN_references}, runs to the end of the page.
                if key == "id" and re.fullmatch(r"lab_\d\d_references", a[key]):
                    self._references = True
        for attr in LINK_ATTRS.get(tag.lower(), ()):
            if attr in a:
                if self._references:
                    self.in_references.add(len(self.urls))
                self.urls.append((tag.lower(), attr, a[attr].strip()))

    handle_startendtag = handle_starttag


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    page.close()
    return page


def read_navtree(html_dir: Path) -> list:
    """Doxygen's NAVTREE (navtreedata.js) as a Python list."""
    text = (html_dir / "navtreedata.js").read_text(encoding="utf-8")
    m = re.search(r"var NAVTREE\s*=\s*(\[.*?\]);\s*\n\s*var NAVTREEINDEX", text, re.S)
    if not m:
        raise ValueError("navtreedata.js: no NAVTREE")
    return json.loads(m.group(1))


def book_pages(html_dir: Path) -> list[tuple[str, str]]:
    """(file, title) of every page of the book in reading order, from the sidebar: everything
    but the API reference, each file once."""
    pages: list[tuple[str, str]] = []
    seen: set[str] = set()

    def walk(nodes: list) -> None:
        for title, url, children in nodes:
            if url == "files.html":
                continue
            if isinstance(url, str) and re.fullmatch(r"[\w.-]+\.html", url) and url not in seen:
                seen.add(url)
                pages.append((url, title))
            if isinstance(children, list):
                walk(children)

    walk(read_navtree(html_dir)[0][2])
    return pages


def _lab_dirs(repo: Path) -> list[str]:
    labs = repo / "labs"
    if not labs.is_dir():
        return []
    return sorted(d.name[:2] for d in labs.iterdir()
                  if d.is_dir() and re.fullmatch(r"\d\d-.+", d.name))


# ---- structure ------------------------------------------------------------------------------

def structure_check(html_dir: Path, repo: Path) -> list[str]:
    """The book's order and the chapters' shape; returns the problems found."""
    problems: list[str] = []
    index = html_dir / "index.html"
    if not index.is_file():
        return [f"{index}: missing"]
    expected = _lab_dirs(repo)
    for nn in expected:
        if not (html_dir / f"lab_{nn}.html").is_file():
            problems.append(f"lab_{nn}.html: missing (no chapter for labs/{nn}-*: "
                            f"labs/{nn}-*/README.md with first line `# Lab {nn} — Title {{#lab_{nn}}}`)")
    # The index lists the chapters in order: the first link to each comes after the previous.
    text = index.read_text(encoding="utf-8")
    body = text[text.find('<div class="contents">'):]
    positions = []
    for nn in expected:
        at = body.find(f'href="lab_{nn}.html"')
        if at < 0:
            problems.append(f"index.html: no link to chapter lab_{nn}")
        else:
            positions.append((at, nn))
    order = [nn for _, nn in sorted(positions)]
    if order != [nn for _, nn in positions]:
        problems.append(f"index.html: chapters listed in the order {order}, not {expected}")
    # Sidebar: the chapters in order.
    pages = [f for f, _ in book_pages(html_dir)]
    labs_in_sidebar = [f[4:6] for f in pages if re.fullmatch(r"lab_\d\d\.html", f)]
    if labs_in_sidebar != sorted(labs_in_sidebar):
        problems.append(f"sidebar: chapters in the order {labs_in_sidebar}")
    # Every heading of the book's pages has an explicit id (Doxygen makes up `autotoc_md<N>`
    # ids for the others, which change whenever a heading is added above them).
    for file, _ in book_pages(html_dir):
        made_up = sorted(i for i in _parse(html_dir / file).ids if i.startswith("autotoc_md"))
        if made_up:
            problems.append(f"{file}: {len(made_up)} heading(s) without an explicit {{#id}}")
    # Each chapter: its section ids.
    for nn in expected:
        chapter = html_dir / f"lab_{nn}.html"
        if not chapter.is_file():
            continue
        ids = _parse(chapter).ids
        missing = [f"lab_{nn}_{s}" for s in CHAPTER_SECTIONS if f"lab_{nn}_{s}" not in ids]
        if missing:
            problems.append(f"lab_{nn}.html: no section with id {', '.join(missing)}")
    return problems


# ---- links ----------------------------------------------------------------------------------

@dataclass
class LinkReport:
    files: int = 0
    local: int = 0
    external: dict[str, int] = field(default_factory=dict)  # host -> count
    problems: list[str] = field(default_factory=list)


def link_check(html_dir: Path) -> LinkReport:
    """Every local URL resolves (file, and #fragment to an id); no external loads; external
    links only to reference hosts."""
    html_dir = html_dir.resolve()
    report = LinkReport()
    files = sorted(p for p in html_dir.rglob("*") if p.suffix in (".html", ".svg")
                   and "mathjax" not in p.relative_to(html_dir).parts)
    parsed: dict[Path, _Page] = {p: _parse(p) for p in files}
    report.files = len(files)

    def ids_of(path: Path) -> set[str]:
        if path not in parsed:
            parsed[path] = _parse(path)
        return parsed[path].ids

    # The sidebar and the menu are JavaScript data: check their URLs like links of index.html.
    scripts = sorted(html_dir.glob("navtree*.js")) + sorted(html_dir.glob("menudata.js"))
    for script in scripts:
        text = script.read_text(encoding="utf-8", errors="replace")
        urls = re.findall(r'\[ *"(?:[^"\\]|\\.)*", *"([^"]*)"', text)  # NAVTREE entries
        urls += re.findall(r"url:'([^']*)'", text)                      # menudata entries
        if script.name.startswith("navtreeindex"):
            urls += re.findall(r'^"([^"]+)":', text, re.M)
        index = html_dir / "index.html"
        parsed.setdefault(index, _parse(index))
        for url in urls:
            parsed[index].urls.append(("a", f"({script.name})", url))

    for path in files:
        rel = path.relative_to(html_dir)
        for i, (tag, attr, url) in enumerate(parsed[path].urls):
            if not url or url.startswith(("javascript:", "data:")):
                continue
            parts = urllib.parse.urlsplit(url)
            if parts.scheme in ("http", "https", "ftp") or url.startswith("//"):
                host = parts.hostname or ""
                report.external[host] = report.external.get(host, 0) + 1
                if tag in LOADED_TAGS:
                    report.problems.append(f"{rel}: <{tag} {attr}> loads {url} from the network")
                elif i not in parsed[path].in_references and host not in PAPER_HOSTS:
                    report.problems.append(f"{rel}: external link to {url} outside a chapter's "
                                           f"References section (and not to a paper host)")
                continue
            if parts.scheme:  # mailto:, file:, ... nothing else belongs in the book
                report.problems.append(f"{rel}: <{tag} {attr}=\"{url}\"> unexpected scheme")
                continue
            report.local += 1
            target = path if not parts.path else (path.parent / urllib.parse.unquote(parts.path))
            target = target.resolve()
            if html_dir not in target.parents and target != html_dir:
                report.problems.append(f"{rel}: {url} points outside the site")
                continue
            if not target.is_file():
                report.problems.append(f"{rel}: <{tag} {attr}=\"{url}\"> -> no such file")
                continue
            fragment = urllib.parse.unquote(parts.fragment)
            if fragment and target.suffix == ".html" and fragment not in ids_of(target):
                report.problems.append(f"{rel}: {url} -> no id \"{fragment}\" in "
                                       f"{target.relative_to(html_dir)}")
    return report


# ---- browser: the DevTools protocol over a pipe ------------------------------------------------

class CdpError(RuntimeError):
    pass


class Chromium:
    """Headless chromium, offline, driven over --remote-debugging-pipe."""

    FLAGS = [
        "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-quic", "--disable-extensions", "--disable-default-apps",
        "--disable-domain-reliability", "--disable-client-side-phishing-detection",
        "--disable-breakpad", "--metrics-recording-only", "--mute-audio", "--hide-scrollbars",
        "--no-pings", "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
        # No network at all: every host resolves to nothing and no proxy is reachable.
        "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--allow-file-access-from-files", "--force-color-profile=srgb",
        "--window-size=1440,900", "--remote-debugging-pipe",
    ]

    def __init__(self, binary: str, log_path: Path, no_sandbox: bool = False) -> None:
        self.profile = tempfile.mkdtemp(prefix="pa-docs-chromium-")
        flags = list(self.FLAGS) + [f"--user-data-dir={self.profile}"]
        if no_sandbox or os.geteuid() == 0:  # root cannot use chromium's sandbox
            flags.append("--no-sandbox")
        to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, from_child_w = os.pipe()

        def child_fds() -> None:  # chromium reads commands on fd 3 and writes replies on fd 4
            a, b = os.dup(to_child_r), os.dup(from_child_w)  # both above any fd in use
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.closerange(5, os.sysconf("SC_OPEN_MAX"))

        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            [binary, *flags, "about:blank"], stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=subprocess.STDOUT, preexec_fn=child_fds, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []
        self.session: str | None = None

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.send("Browser.close", session=False, timeout=5)
                except (CdpError, OSError):
                    pass
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            for fd in (self._to_child_w, self._from_child_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._log.close()
            shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline: float) -> dict | None:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._from_child_r], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._from_child_r, 1 << 20)
            if not chunk:
                raise CdpError("chromium closed the DevTools pipe "
                               f"(exit status {self.proc.poll()}; see {self._log.name})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: bool = True,
             timeout: float = 60) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_child_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply is None:
                raise CdpError(f"{method}: no answer in {timeout:.0f} s")
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        for i, event in enumerate(self.events):
            if event["method"] == method:
                return self.events.pop(i)
        while True:
            event = self._read_message(deadline)
            if event is None:
                return None
            if event.get("method") == method:
                return event
            if "method" in event:
                self.events.append(event)

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            event = self._read_message(deadline)
            if event is None:
                return
            if "method" in event:
                self.events.append(event)

    def evaluate(self, expression: str, timeout: float = 60, context: int | None = None):
        params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
        if context is not None:
            params["contextId"] = context
        result = self.send("Runtime.evaluate", params, timeout=timeout)
        if "exceptionDetails" in result:
            raise CdpError(f"evaluate: {result['exceptionDetails'].get('text')} "
                           f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result.get("result", {}).get("value")


# Waits for MathJax's first typeset of the page to finish (its "End" startup hook, then one more
# turn of its queue), or gives up after 30 s.
WAIT_FOR_MATHJAX = """
new Promise((resolve) => {
  const start = Date.now();
  (function poll() {
    if (window.MathJax && MathJax.Hub && MathJax.Hub.Register) {
      // Block bodies: a MathJax callback that returns a callback makes MathJax wait for it.
      MathJax.Hub.Register.StartupHook("End", () => { MathJax.Hub.Queue(() => { resolve("ready"); }); });
    } else if (Date.now() - start > 30000) {
      resolve("MathJax never loaded");
    } else {
      setTimeout(poll, 50);
    }
  })();
})
"""

# What the page shows once MathJax is done: rendered formulas, leftover TeX, MathJax errors,
# and the diagrams (SVG in iframes, objects or images).
AUDIT = r"""
(() => {
  const contents = document.querySelector("div.contents") || document.body;
  const rendered = contents.querySelectorAll(".MathJax_SVG, .MathJax_SVG_Display").length;
  // TeX that MathJax could not parse becomes an <merror> node in its element jax (shown as red
  // text); a crash inside MathJax shows "[Math Processing Error]" (.MathJax_Error) instead.
  const hasError = (node) => !!node && typeof node === "object" &&
      (node.type === "merror" || (Array.isArray(node.data) && node.data.some(hasError)));
  const bad = (window.MathJax && MathJax.Hub ? MathJax.Hub.getAllJax() : [])
      .filter(j => hasError(j.root));
  const errors = bad.map(j => j.originalText.slice(0, 80))
      .concat([...contents.querySelectorAll(".MathJax_Error, .noError")].map(e => e.textContent.slice(0, 80)));
  // TeX the reader would see raw: delimiters in text outside code, scripts and MathJax output.
  const raw = [];
  const walker = document.createTreeWalker(contents, NodeFilter.SHOW_TEXT, {
    acceptNode(node) {
      for (let e = node.parentElement; e && e !== contents; e = e.parentElement) {
        if (e.matches("script, style, code, pre, .fragment, .MathJax_SVG, .MathJax_SVG_Display, .MathJax_Preview"))
          return NodeFilter.FILTER_REJECT;
      }
      return NodeFilter.FILTER_ACCEPT;
    }
  });
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const m = n.nodeValue.match(/\\f[$\[\]]|\\\(|\\\)|\\\[|\\\]|\\begin\{|\$\$/);
    if (m) raw.push(n.nodeValue.trim().slice(0, 80));
  }
  const frames = [...contents.querySelectorAll("iframe, object, embed")]
      .map(e => ({tag: e.localName, url: e.src || e.data || "", parent: e.parentElement.className}))
      .filter(f => /\.svg($|[?#])/.test(f.url));
  const images = [...contents.querySelectorAll("img")]
      .filter(i => /\.svg($|[?#])/.test(i.src))
      .map(i => ({url: i.src, ok: i.complete && i.naturalWidth > 0}));
  const diagrams = contents.querySelectorAll("div.dotgraph").length;
  return {rendered, errors, raw, frames, images, diagrams, title: document.title};
})()
"""


@dataclass
class PageResult:
    file: str
    formulas: int = 0
    diagrams: int = 0
    svgs_loaded: int = 0
    screenshot: str = ""
    problems: list[str] = field(default_factory=list)


def _find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _frames(tree: dict) -> list[dict]:
    out = []
    for child in tree.get("childFrames", []) or []:
        out.append(child["frame"])
        out.extend(_frames(child))
    return out


def _screenshot(cdp: Chromium, path: Path, width: int, height: int, full: bool) -> None:
    if full:
        # The content scrolls inside #doc-content, not the document: make the viewport as tall
        # as the page (capped), let Doxygen's resize.js lay it out again, then shoot.
        total = cdp.evaluate("""(() => {
            const d = document.getElementById("doc-content");
            const top = d ? d.getBoundingClientRect().top : 0;
            return Math.ceil(top + (d ? d.scrollHeight : document.documentElement.scrollHeight)) + 40;
        })()""")
        tall = max(height, min(int(total or height), 16000))
        cdp.send("Emulation.setDeviceMetricsOverride",
                 {"width": width, "height": tall, "deviceScaleFactor": 1, "mobile": False})
        cdp.evaluate("new Promise(r => { window.dispatchEvent(new Event('resize')); setTimeout(r, 400); })")
    shot = cdp.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False})
    path.write_bytes(base64.b64decode(shot["data"]))
    if full:
        cdp.send("Emulation.setDeviceMetricsOverride",
                 {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


def browser_check(html_dir: Path, pages: list[str], shots_dir: Path,
                  chapters: set[str] | None = None, timeout: float = 60) -> list[PageResult]:
    """Opens each page in headless chromium from disk, offline; see the module docstring.
    `chapters`: pages that must show at least one rendered formula and one diagram."""
    binary = _find_chromium()
    if not binary:
        result = PageResult("(browser)")
        result.problems.append("chromium not found (apt-get install chromium)")
        return [result]
    chapters = chapters or set()
    shots_dir.mkdir(parents=True, exist_ok=True)
    for old in shots_dir.glob("*.png"):
        old.unlink()
    width, height = 1440, 900
    results: list[PageResult] = []
    cdp = Chromium(binary, shots_dir / "chromium.log")
    try:
        try:
            targets = cdp.send("Target.getTargets", session=False, timeout=30)["targetInfos"]
        except CdpError:
            # In a container without user namespaces the sandbox cannot start: the pages are
            # local files the build just wrote, opened with the network off, so run without it.
            cdp.close()
            cdp = Chromium(binary, shots_dir / "chromium.log", no_sandbox=True)
            targets = cdp.send("Target.getTargets", session=False, timeout=30)["targetInfos"]
        page_target = next((t for t in targets if t["type"] == "page"), None)
        if page_target is None:
            page_target = {"targetId": cdp.send("Target.createTarget", {"url": "about:blank"},
                                                session=False)["targetId"]}
        cdp.session = cdp.send("Target.attachToTarget",
                               {"targetId": page_target["targetId"], "flatten": True},
                               session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            cdp.send(f"{domain}.enable")
        cdp.send("Emulation.setDeviceMetricsOverride",
                 {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        # Light mode for the screenshots, whatever the machine prefers.
        cdp.send("Emulation.setEmulatedMedia",
                 {"features": [{"name": "prefers-color-scheme", "value": "light"}]})

        for file in pages:
            result = PageResult(file)
            results.append(result)
            url = (html_dir.resolve() / file).as_uri()
            cdp.events.clear()
            try:
                nav = cdp.send("Page.navigate", {"url": url}, timeout=timeout)
                if nav.get("errorText"):
                    result.problems.append(f"navigation failed: {nav['errorText']}")
                    continue
                if cdp.wait_event("Page.loadEventFired", timeout) is None:
                    result.problems.append(f"no load event in {timeout:.0f} s")
                state = cdp.evaluate(WAIT_FOR_MATHJAX, timeout=timeout)
                if state != "ready":
                    result.problems.append(f"MathJax: {state}")
                cdp.drain(0.3)  # late console messages and requests
                audit = cdp.evaluate(AUDIT, timeout=timeout)
            except CdpError as e:
                result.problems.append(str(e))
                continue
            result.formulas = audit["rendered"]
            result.diagrams = audit["diagrams"]
            for tex in audit["errors"]:
                result.problems.append(f"formula MathJax could not render: \"{tex}\"")
            for text in audit["raw"]:
                result.problems.append(f"raw TeX left in the page: \"{text}\"")
            if file in chapters and result.formulas == 0:
                result.problems.append("a chapter with no rendered formula")
            if file in chapters and result.diagrams == 0:
                result.problems.append("a chapter with no diagram")
            # Each SVG in a frame: its document must be an <svg> with a size.
            frames = _frames(cdp.send("Page.getFrameTree")["frameTree"])
            for f in audit["frames"]:
                frame = next((fr for fr in frames if fr.get("url") == f["url"]), None)
                if frame is None:
                    result.problems.append(f"diagram {f['url']}: no frame")
                    continue
                world = cdp.send("Page.createIsolatedWorld",
                                 {"frameId": frame["id"], "worldName": "pa-docs-check"})
                size = cdp.evaluate(
                    "(() => { const r = document.documentElement;"
                    " if (!r || r.localName !== 'svg') return -1;"
                    " const b = r.getBBox(); return b.width * b.height; })()",
                    context=world["executionContextId"])
                if not size or size <= 0:
                    result.problems.append(f"diagram {Path(f['url']).name} did not load as SVG")
                else:
                    result.svgs_loaded += 1
            for img in audit["images"]:
                if img["ok"]:
                    result.svgs_loaded += 1
                else:
                    result.problems.append(f"image {Path(img['url']).name} did not load")
            # Console errors, exceptions, failed loads and any network request.
            for event in cdp.events:
                method, params = event["method"], event.get("params", {})
                if method == "Runtime.exceptionThrown":
                    d = params["exceptionDetails"]
                    text = d.get("exception", {}).get("description") or d.get("text")
                    result.problems.append(f"exception: {text}")
                elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                    args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                    result.problems.append(f"console.{params['type']}: {args}")
                elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                    e = params["entry"]
                    result.problems.append(f"console error: {e.get('text')} {e.get('url', '')}")
                elif method == "Network.requestWillBeSent":
                    req = params["request"]["url"]
                    if not req.startswith(("file:", "data:", "about:", "blob:")):
                        result.problems.append(f"network request: {req}")
                elif method == "Network.loadingFailed" and not params.get("canceled"):
                    result.problems.append(f"failed to load a resource: {params.get('errorText')}")
            try:
                shot = shots_dir / (Path(file).stem + ".png")
                _screenshot(cdp, shot, width, height, full=True)
                result.screenshot = str(shot)
            except CdpError as e:
                result.problems.append(f"screenshot: {e}")
    except CdpError as e:
        failure = PageResult("(browser)")
        failure.problems.append(str(e))
        results.append(failure)
    finally:
        cdp.close()
    return results


def run_checks(html_dir: Path, repo: Path, shots_dir: Path, browser: bool = True) -> int:
    """Runs every check, prints a report; returns the number of problems."""
    count = 0
    print(f"== Book structure ({html_dir})")
    problems = structure_check(html_dir, repo)
    for p in problems:
        print(f"  FAIL {p}")
    if not problems:
        chapters = [f for f, _ in book_pages(html_dir) if re.fullmatch(r"lab_\d\d\.html", f)]
        print(f"  ok: the index and the sidebar list {len(chapters)} chapter(s) in order, "
              f"each with its {len(CHAPTER_SECTIONS)} sections; every heading has an explicit id")
    count += len(problems)

    print("== Link check")
    links = link_check(html_dir)
    for p in links.problems:
        print(f"  FAIL {p}")
    hosts = ", ".join(f"{h} ({n})" for h, n in sorted(links.external.items())) or "none"
    print(f"  {links.files} files, {links.local} local links/sources"
          f"{' all resolve' if not links.problems else ''}; external links: {hosts}")
    count += len(links.problems)

    if browser:
        print("== Browser check (headless chromium, offline)")
        pages = [f for f, _ in book_pages(html_dir)]
        if (html_dir / "files.html").is_file():
            pages.append("files.html")
        chapters = {f for f in pages if re.fullmatch(r"lab_\d\d\.html", f)}
        for r in browser_check(html_dir, pages, shots_dir, chapters):
            status = "ok  " if not r.problems else "FAIL"
            print(f"  {status} {r.file:28} formulas={r.formulas:<4} diagrams={r.diagrams:<3} "
                  f"svg_loaded={r.svgs_loaded}")
            for p in r.problems:
                print(f"       - {p}")
            count += len(r.problems)
        print(f"  screenshots: {shots_dir}")
    return count


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html_dir", type=Path)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--screenshots", type=Path)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args(argv)
    shots = args.screenshots or args.html_dir.parent / "screenshots"
    problems = run_checks(args.html_dir, args.repo, shots, browser=not args.no_browser)
    print(f"== {'PASS' if problems == 0 else f'FAIL: {problems} problem(s)'}")
    return 0 if problems == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

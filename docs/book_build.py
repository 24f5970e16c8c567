#!/usr/bin/env python3
"""`tools/lab docs [--check]`: build the course book, and check it. Python 3 standard library.

The book is the Doxygen target `docs` of docs/CMakeLists.txt, configured on its own
(cmake -S docs -B build/docs), so building it needs no compiler, Eigen or GoogleTest. Every
Doxygen warning is an error. The site lands in build/docs/html; this prints where to open it.
With --check it then runs docs/book_check.py: the book's structure, a link check over the
generated HTML, and a browser check in headless, offline chromium (driven by Debian's Selenium
and chromedriver) with the layout check at 1400, 1920, 1200, 1000 and 900 px and a screenshot
per page.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))  # labkit
from labkit.paths import ROOT, build_dir  # noqa: E402
BUILD = build_dir("docs")

# Debian packages: what building the book needs, and what checking it adds (tools/packages.txt).
from labkit.system import ensure_packages as _ensure, packages  # noqa: E402
BUILD_PACKAGES, CHECK_PACKAGES = packages("book"), packages("book-check")
# python3-selenium installs for Debian's own Python; when this one (a pyenv or venv, say) cannot
# import it, the check runs under that interpreter instead.
SYSTEM_PYTHON = "/usr/bin/python3"


def _run(cmd: list[str]) -> int:
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode


def build(build_dir: Path) -> tuple[int, float]:
    """Configures and builds target docs; returns (exit status, seconds)."""
    start = time.monotonic()
    configure = ["cmake", "-S", str(ROOT / "docs"), "-B", str(build_dir)]
    if not (build_dir / "CMakeCache.txt").exists():
        configure += ["-G", "Ninja"]
    status = _run(configure)
    if status == 0:
        status = _run(["cmake", "--build", str(build_dir), "--target", "docs"])
    return status, time.monotonic() - start


def main(argv: list[str], ensure_packages: Callable[[list[str]], None]) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/lab docs",
        description="Build the course book (Doxygen, zero warnings); --check also runs the "
                    "link check and the browser check.")
    parser.add_argument("--check", action="store_true",
                        help="check the links and render every page in headless chromium")
    parser.add_argument("--no-build", action="store_true",
                        help="check the site already built instead of building it again")
    parser.add_argument("--build-dir", type=Path, default=BUILD,
                        help=f"where to build (default: {BUILD.relative_to(ROOT)})")
    args = parser.parse_args(argv[1:] if argv[:1] == ["--"] else argv)
    build_dir = args.build_dir if args.build_dir.is_absolute() else ROOT / args.build_dir

    ensure_packages(BUILD_PACKAGES + (CHECK_PACKAGES if args.check else []))

    html = build_dir / "html"
    from book_check import hints_check   # the hints beside the chapters are part of the book
    bad_hints = hints_check(ROOT)
    if bad_hints:
        print("tools/lab docs: the hints (labs/NN-*/hints.json) have problems:\n  "
              + "\n  ".join(bad_hints), file=sys.stderr)
        return 1
    if not args.no_build:
        status, seconds = build(build_dir)
        if status != 0:
            print(f"tools/lab docs: the book did not build (every Doxygen warning above is an "
                  f"error; each names its file and line)", file=sys.stderr)
            return status
        print(f"tools/lab docs: built in {seconds:.1f} s with zero warnings")
    index = html / "index.html"
    if not index.is_file():
        print(f"tools/lab docs: {index} does not exist: build it first", file=sys.stderr)
        return 1
    print(f"The book: {index}\n  open it: {index.as_uri()}")

    if not args.check:
        return 0
    start = time.monotonic()
    python = _python_with_selenium()
    check = [python, str(ROOT / "docs" / "book_check.py"), str(html), "--repo", str(ROOT),
             "--screenshots", str(build_dir / "screenshots")]
    if python != sys.executable:
        print(f"tools/lab docs: the browser check runs under {python} (it has Selenium)")
    status = subprocess.run(check, cwd=ROOT).returncode
    print(f"tools/lab docs --check: {'PASS' if status == 0 else 'FAIL'}"
          f" in {time.monotonic() - start:.1f} s")
    return status


def _python_with_selenium() -> str:
    """This interpreter when it can import selenium, else Debian's (where python3-selenium
    installs); the check itself reports it when neither can."""
    for python in (sys.executable, SYSTEM_PYTHON):
        if python and os.access(python, os.X_OK) and subprocess.run(
                [python, "-c", "import selenium"], capture_output=True).returncode == 0:
            return python
    return sys.executable


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], _ensure))

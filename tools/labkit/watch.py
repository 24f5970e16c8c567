"""`tools/lab watch NN`: re-grade one lab each time a file in its room is saved.

It looks at the modification times of the room's files every --interval seconds (plain polling,
so it works on every file system); when one moved, it compares the files' contents with those
of the code it graded last, and when they differ it rebuilds the lab's tests (showing "building…"
with the time so far), runs the graded ones, clears the screen and shows the score and the test to
fix first, with its hint. It builds in build/starter with the same options as tools/lab grade, one
of them at a time (a lock), and never shows results of a binary older than the files: a save
during the build is built again before the tests run. Ctrl-C stops it."""
from __future__ import annotations

import os
import time
from pathlib import Path

from labkit import build as cmake
from labkit import diagnosis, grading, hints, reports, stamps, text
from labkit.labs import Lab, pick, require_solutions
from labkit.paths import shown

CLEAR = "\033[2J\033[H"


def snapshot(lab: Lab, impl: str) -> dict[str, tuple[int, int]]:
    """Modification time and size of every source of the lab (cheap to take twice a second)."""
    out = {}
    for p in stamps.sources(lab, impl):
        try:
            st = p.stat()
        except OSError:
            continue
        out[str(p)] = (st.st_mtime_ns, st.st_size)
    return out


def header(lab: Lab, impl: str, when: str) -> str:
    """The screen's first line; `when` says where the grading stands ("grading since 10:02:11",
    "graded 10:02:40, in 29 s")."""
    return f"{CLEAR}tools/lab watch {lab.number} — {lab.title}   ({impl}, {when})\n"


def report(g: grading.LabGrade, build: Path, verbose: bool) -> list[str]:
    """The screen after a grading: the score and the test to fix first, whole."""
    lab = g.lab
    if not g.built:
        return [f"Score: 0 / {g.max_score}   the lab does not build:", "",
                text.wrapped(g.build_error, "  ", 2)]
    passed = sum(t.status == "passed" for t in g.tests)
    lines = [f"Score: {g.score} / {g.max_score}   ({passed} of {len(g.tests)} graded tests pass)"]
    first, diagnosed = diagnosis.first_message(g)
    if first is None:
        return lines + ["", "Every graded test passes. Lab done."]
    kind = grading.failure_kind(first.status, first.detail)
    lines += ["", f"First test to fix: {first.name}"
              + (f"   ({kind})" if kind not in (first.status, "wrong value") else "")]
    what = reports.why(first)
    lines.append(text.wrapped(what, f"  {first.status}: " if what else f"  {first.status}", 4))
    if verbose and first.failures:
        lines += reports.failure_lines(first, 4)
    elif first.failures:
        more = reports.why_more(first, f"tools/lab watch {lab.number} --verbose, or "
                                       f"tools/lab grade {lab.number} --verbose")
        if more:
            lines.append(text.wrapped(more, "  ", 4))
    if first.hint:
        lines.append(text.wrapped(first.hint, "  hint: ", 8))
    for line in diagnosed:
        lines.append(text.wrapped(line, "  ", 4))
    if first.status != "not implemented":
        lines.append(text.wrapped(hints.usage_line(lab), "  ", 4))
    others = sum(t.status != "passed" for t in g.tests) - 1
    if others:
        lines.append(f"\n  ({others} other test{'s' if others > 1 else ''} fail too: "
                     f"tools/lab grade {lab.number} lists them)")
    lines.append(f"\n  its whole output:\n    ctest --test-dir {shown(build)} "
                 f"-R '{lab.target}.{first.name}' --output-on-failure")
    return lines


def show(lab: Lab, build: Path, options: dict[str, str], impl: str, verbose: bool,
         env: dict[str, str] | None = None) -> dict[str, str]:
    """Grades the lab once and shows the result; returns the digest of the sources it graded."""
    started = time.strftime("%H:%M:%S")
    start = time.monotonic()
    print(header(lab, impl, f"grading since {started}"), flush=True)
    ticker = grading.BuildTicker()

    def say(line: str) -> None:   # only what a student needs to see while it builds
        if "again" in line or "waiting" in line or line.endswith("testing"):
            print(grading.BuildTicker.clear() + line, flush=True)

    with cmake.lock(build, f"watch {lab.number}", say):
        cmake.configure(build, options, quiet=True)
        g = grading.grade([lab], build, progress=say, tick=ticker, env=env)[0]
    finished = f"graded {time.strftime('%H:%M:%S')}, in {time.monotonic() - start:.0f} s"
    print(header(lab, impl, finished) + "\n".join(report(g, build, verbose)))
    print(f"\nWatching labs/{lab.room}/ — save a file to grade again; Ctrl-C stops.", flush=True)
    return g.sources


def main(args) -> int:
    lab = pick([args.lab])[0]
    if args.impl == "solution":
        require_solutions("watch --impl solution")
    build, options = grading.grade_build(args.impl)
    schedule = getattr(args, "schedule", None)
    env = dict(os.environ, SIMT_SCHEDULE=schedule) if schedule else None
    try:
        seen: dict = {}   # empty: the first look compares contents (a save during a grading)
        graded = show(lab, build, options, args.impl, args.verbose, env)
        while True:
            time.sleep(args.interval)
            if snapshot(lab, args.impl) == seen:
                continue
            time.sleep(0.2)  # let an editor finish writing (some write twice)
            seen = snapshot(lab, args.impl)
            # A file saved unchanged (its time moved, not its bytes) is no change.
            if stamps.digest(stamps.sources(lab, args.impl)) != graded:
                graded = show(lab, build, options, args.impl, args.verbose, env)
                seen = {}
    except KeyboardInterrupt:
        print(grading.BuildTicker.clear() + "\ntools/lab watch: stopped.")
        return 0

"""`tools/lab watch NN`: re-grade one lab each time a file in its room is saved.

It looks at the modification times of the room's files every --interval seconds (plain polling,
so it works on every file system), and on a change rebuilds the lab's tests, runs the graded
ones, clears the screen and shows the score and the first test that does not pass, with its
hint. Ctrl-C stops it."""
from __future__ import annotations

import time
from pathlib import Path

from labkit import build as cmake
from labkit import grading
from labkit.labs import Lab, pick, require_solutions
from labkit.paths import build_dir, shown

CLEAR = "\033[2J\033[H"


def snapshot(room: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in sorted(room.rglob("*")) if p.is_file()}


def show(lab: Lab, build: Path, impl: str) -> None:
    started = time.strftime("%H:%M:%S")
    print(f"{CLEAR}tools/lab watch {lab.number} — {lab.title}   ({impl}, graded at {started})\n",
          flush=True)
    g = grading.grade([lab], build, timeout=20, quiet=True)[0]
    if not g.built:
        print(f"Score: 0 / {g.max_score}   the lab does not build:\n\n  {g.build_error}")
    else:
        passed = sum(t.status == "passed" for t in g.tests)
        print(f"Score: {g.score} / {g.max_score}   ({passed} of {len(g.tests)} graded tests pass)")
        first = next((t for t in g.tests if t.status != "passed"), None)
        if first is None:
            print("\nEvery graded test passes. Lab done.")
        else:
            print(f"\nFirst test to fix: {first.name}\n  {first.status}"
                  + (f": {first.detail}" if first.detail else ""))
            if first.hint:
                print(f"  hint: {first.hint}")
            print(f"\n  its whole output: ctest --test-dir {shown(build)} "
                  f"-R '{lab.target}.{first.name}' --output-on-failure")
    print(f"\nWatching labs/{lab.room}/ — save a file to grade again; Ctrl-C stops.", flush=True)


def main(args) -> int:
    lab = pick([args.lab])[0]
    if args.impl == "solution":
        require_solutions("watch --impl solution")
    build = build_dir(args.impl)
    room = lab.folder()
    try:
        cmake.configure(build, {"LAB_IMPL": args.impl, "PA_TEST_TIMEOUT": "20"}, quiet=True)
        seen = snapshot(room)
        show(lab, build, args.impl)
        while True:
            time.sleep(args.interval)
            now = snapshot(room)
            if now != seen:
                time.sleep(0.2)  # let an editor finish writing (some write twice)
                seen = snapshot(room)
                show(lab, build, args.impl)
    except KeyboardInterrupt:
        print("\ntools/lab watch: stopped.")
        return 0

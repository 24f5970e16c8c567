"""What a build was made from: a stamp per lab in the build folder with the content hash of every
file of the lab's room (given/ included) and of the implementation it is built from.

Ninja (1.11, Debian 12's) judges a file by its modification time: a file saved while its own
compile runs is older than the object that compile writes, so ninja counts that object as up to
date although it holds the code from before the save. The grader therefore hashes the sources
before and after each build and, when they differ, removes the objects built from the files that
changed (build.outdate: the build folder's side; the student's files are only ever read, never
written or re-timed) and builds again; it never runs tests on a binary whose stamp does not match
the sources. The same hashes tell `watch` whether a save changed anything."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from labkit.labs import Lab
from labkit.paths import ROOT

# Editor droppings in a room are not sources: vim's .swp files and its 4913 write probe, emacs'
# .#lock and #autosave#, backups ending in ~.
IGNORED = re.compile(r"^(\..*|#.*#|.*~|\d+)$")
# Files whose change cannot change a binary: a chapter's text (its table is read when grading).
NOT_BUILT = (".md",)


def impl_of(build: Path) -> str:
    """LAB_IMPL of a configured build folder ("starter" when it cannot tell)."""
    cache = build / "CMakeCache.txt"
    if cache.exists():
        m = re.search(r"^LAB_IMPL:\w+=(\w+)$", cache.read_text(errors="replace"), re.M)
        if m:
            return m.group(1)
    return "starter"


def sources(lab: Lab, impl: str, root: Path = ROOT) -> list[Path]:
    """Every file of the lab's room (given/ and the chapter included, editor files left out),
    and solutions/NN-name/solution.cpp when the lab is built from it."""
    room = lab.folder(root)
    found = [p for p in room.rglob("*") if p.is_file()
             and not any(IGNORED.match(part) for part in p.relative_to(room).parts)]
    if impl == "solution":
        found.append(lab.solution_folder(root) / "solution.cpp")
    return sorted(found)


def digest(paths: list[Path], root: Path = ROOT) -> dict[str, str]:
    """Path (relative to the tree) -> sha256 of its bytes, for the files that exist."""
    out = {}
    for p in paths:
        try:
            data = p.read_bytes()
        except OSError:
            continue
        out[p.relative_to(root).as_posix() if p.is_relative_to(root) else str(p)] = \
            hashlib.sha256(data).hexdigest()
    return out


def changed(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """The paths whose hash differs between two digests (added and removed ones included)."""
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def stamp_path(build: Path, lab: Lab) -> Path:
    return build / "lab-stamps" / f"{lab.target}.json"


def read(build: Path, lab: Lab) -> dict[str, str] | None:
    """The digest the lab's binaries in `build` were last built from; None when unknown."""
    try:
        return json.loads(stamp_path(build, lab).read_text())
    except (OSError, ValueError):
        return None


def write(build: Path, lab: Lab, hashes: dict[str, str]) -> None:
    path = stamp_path(build, lab)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def forget(build: Path, lab: Lab) -> None:
    stamp_path(build, lab).unlink(missing_ok=True)

"""The labs of a tree: every `labs/NN-name/` room, in the book's order. The one place that finds
them (the grader, the mutants, the benchmarks, the Gradescope bundle's collect_submission.py)."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from labkit.paths import ROOT

ROOM = "[0-9][0-9]-*"   # labs/NN-name, solutions/NN-name


@dataclass(frozen=True)
class Lab:
    number: str   # "02"
    room: str     # "02-online-softmax"
    title: str    # "Online softmax"

    @property
    def target(self) -> str:
        """The CMake target (and ctest label) of its graded tests."""
        return f"lab{self.number}"

    def folder(self, root: Path = ROOT) -> Path:
        """The student's room: labs/NN-name."""
        return root / "labs" / self.room

    def solution_folder(self, root: Path = ROOT) -> Path:
        """solutions/NN-name: solution.cpp and mutants/ (instructors only)."""
        return root / "solutions" / self.room


def title_of(room: Path) -> str:
    """The title in the first line of the room's chapter, `# Lab NN — Title {#lab_NN}` (the
    room's name when there is none)."""
    readme = room / "README.md"
    if readme.exists():
        lines = readme.read_text(encoding="utf-8").splitlines()
        m = re.match(r"#\s*Lab\s+\d+\s*[—-]\s*(.*?)\s*(\{#[^}]*\})?\s*$", lines[0] if lines else "")
        if m:
            return m.group(1)
    return room.name[3:]


def labs(root: Path = ROOT) -> list[Lab]:
    """Every lab room of the tree at `root`, in the book's order."""
    return [Lab(room.name[:2], room.name, title_of(room))
            for room in sorted((root / "labs").glob(ROOM)) if room.is_dir()]


def pick(wanted: list[str], root: Path = ROOT) -> list[Lab]:
    """The labs named by number in `wanted` (every lab when empty); exits on an unknown one."""
    every = labs(root)
    if not wanted:
        return every
    by_number = {lab.number: lab for lab in every}
    picked = []
    for n in wanted:
        n = n.zfill(2)
        if n not in by_number:
            sys.exit(f"tools/lab: there is no lab {n} (labs: {', '.join(by_number)})")
        picked.append(by_number[n])
    return picked


def has_solutions(root: Path = ROOT) -> bool:
    return (root / "solutions").is_dir()


def require_solutions(command: str, root: Path = ROOT) -> None:
    if not has_solutions(root):
        sys.exit(f"tools/lab {command} is an instructor command and needs solutions/, which this "
                 "tree (a student release) does not have. Students: tools/lab grade")

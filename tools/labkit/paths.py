"""Where things are: the repository root, and every folder tools/lab builds in. One place, so a
command and its tests cannot disagree about where build/starter is."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent   # tools/labkit/paths.py -> the tree
TOOLS = ROOT / "tools"
PACKAGE_LIST = TOOLS / "packages.txt"                   # the Debian packages, by group
AUTOGRADER_FILES = TOOLS / "autograder"                 # the Gradescope bundle's own scripts


def build_root(root: Path = ROOT) -> Path:
    """The folder every build of the tree at `root` lives in."""
    return root / "build"


def build_dir(kind: str, root: Path = ROOT) -> Path:
    """The build folder of one kind: "starter", "solution" (the labs from LAB_IMPL), "mutants",
    "bench-starter", "bench-solution" (the benchmarks, -march=native), "bench" (their results and
    plots), "docs" (the book)."""
    return build_root(root) / kind


def shown(path: Path, root: Path = ROOT) -> str:
    """`path` relative to the tree when it is inside it (for messages), else as it is."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)

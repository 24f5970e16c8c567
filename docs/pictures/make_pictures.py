#!/usr/bin/env python3
"""Writes every picture of the book into OUT_DIR: `make_pictures.py OUT_DIR`.

Run by the docs build (docs/CMakeLists.txt, target docs_pictures) before Doxygen, whose
IMAGE_PATH includes OUT_DIR; a chapter shows a picture with `\\image html <stem>.svg "caption"`.
Two kinds of source, both in docs/pictures/:
- Python: every module named book*.py or labNN*.py defines FIGURES = {"stem": function}, each
  function returning an svgfig.Figure;
- Graphviz: every *.dot file becomes <stem>.svg through `dot -Tsvg`.
A picture wider than MAX_WIDTH would not fit the content column at 1400 px: an error, as is a
stem defined twice. Standard library only.
"""
from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAX_WIDTH = 840  # px: the content column at a 1400 px window (docs/book.css)
EDGE_SLACK = 4   # px: text widths are estimates (svgfig.text_width), so a hair past the edge is not
                 # reported


def _svg_width(svg: str) -> float:
    m = re.search(r'<svg[^>]*\swidth="([\d.]+)(pt|px)?"', svg)
    if not m:
        return 0.0
    return float(m.group(1)) * (4 / 3 if m.group(2) == "pt" else 1)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.svg"):
        old.unlink()
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    sys.path.insert(0, str(HERE))
    written: dict[str, str] = {}
    problems: list[str] = []

    for source in sorted(HERE.glob("*.py")):
        if not re.fullmatch(r"(book|lab\d\d)\w*\.py", source.name):
            continue
        module = importlib.import_module(source.stem)
        for stem, make in getattr(module, "FIGURES", {}).items():
            if stem in written:
                problems.append(f"{source.name}: picture {stem} is also made by {written[stem]}")
                continue
            figure = make()
            if figure.width > MAX_WIDTH:
                problems.append(f"{source.name}: {stem} is {figure.width:g} px wide, more than "
                                f"the {MAX_WIDTH} px column")
            for left, right, text in figure.extents:
                if left < -EDGE_SLACK or right > figure.width + EDGE_SLACK:
                    problems.append(f"{source.name}: {stem}: the text \"{text[:40]}\" runs past "
                                    f"the picture's edge (x {left:.0f} to {right:.0f} of "
                                    f"{figure.width:g}): shorten it or break the line")
            for overflow in figure.overflows[:3]:
                problems.append(f"{source.name}: {stem}: text overflows: {overflow}")
            (out / f"{stem}.svg").write_text(figure.svg(), encoding="utf-8")
            written[stem] = source.name

    dot = shutil.which("dot")
    for source in sorted(HERE.glob("*.dot")):
        if source.stem in written:
            problems.append(f"{source.name}: picture {source.stem} is also made by "
                            f"{written[source.stem]}")
            continue
        if not dot:
            problems.append(f"{source.name}: Graphviz's dot is missing (apt-get install graphviz)")
            continue
        target = out / f"{source.stem}.svg"
        result = subprocess.run([dot, "-Tsvg", str(source), "-o", str(target)],
                                capture_output=True, text=True)
        if result.returncode != 0 or result.stderr.strip():
            problems.append(f"{source.name}: dot: {result.stderr.strip() or result.returncode}")
            continue
        width = _svg_width(target.read_text(encoding="utf-8"))
        if width > MAX_WIDTH:
            problems.append(f"{source.name}: {width:.0f} px wide, more than the {MAX_WIDTH} px "
                            f"column (set size= or rankdir in the graph)")
        written[source.stem] = source.name

    for p in problems:
        print(f"docs/pictures/{p}", file=sys.stderr)
    print(f"make_pictures: {len(written)} picture(s) in {out}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

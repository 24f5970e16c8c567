"""Hints when asked: `tools/lab hint NN [STEP]`. Python 3 standard library only.

Each lab keeps its hints as data beside its chapter, labs/NN-name/hints.json: one entry per TODO
step of the starter, each with three levels shown one at a time (the idea; the invariant or
formula; the shape of the code) and a § link into the chapter:

    {"steps": [{"id": "attention.5",                 # what `tools/lab hint 06 attention.5` takes
                "function": "paged_attention_v2_kernel",   # the /// [region] of the starter
                "todo": "5",                         # its TODO number there ("" for a function)
                "title": "acc: the partition's weighted values",
                "section": "lab_06_partial_state",   # the chapter section behind it
                "covers": [],                        # other solution regions it owns (helpers)
                "shown_as": "...",                   # optional: the book's name for the region's
                                                     # code, where it differs (KvTile::copy)
                "levels": ["the idea", "the invariant", "the shape of the code"]}]}

Which level a student has seen is kept under build/hints/ (never in the student's files): each
call shows the next one; `--reset` starts over. The same steps name where a bug lives
(labkit/diagnosis.py maps a line of solution.cpp or starter.cpp to its step)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from labkit.labs import Lab
from labkit.paths import ROOT, build_root

LEVELS = ("the idea", "the invariant", "the shape of the code")
FILE = "hints.json"


@dataclass
class Step:
    id: str
    function: str
    todo: str
    title: str
    section: str
    levels: list[str]
    covers: list[str] = field(default_factory=list)

    def name(self) -> str:
        """The step as the starter names it: "TODO 5 of paged_attention_v2_kernel" or
        "build_forward_meta"."""
        return f"TODO {self.todo} of {self.function}" if self.todo else self.function


@dataclass
class StageProbe:
    """A graded test that runs a kernel only part of the way and checks what it holds there
    (lab 05's Probe A after TODO 2): it grades the steps of `through`'s function up to and
    including `through`, before the later ones exist."""
    test: str      # its Suite.Test key
    through: str   # the id of the last step it grades


class HintError(ValueError):
    pass


def path_of(lab: Lab, root: Path = ROOT) -> Path:
    return lab.folder(root) / FILE


def load(lab: Lab, root: Path = ROOT) -> list[Step]:
    """The lab's steps, in the starter's order ([] when the lab has no hints.json). Raises
    HintError naming the file and the entry of anything malformed."""
    path = path_of(lab, root)
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise HintError(f"{path}: not JSON: {e}") from None
    steps = []
    for i, entry in enumerate(data.get("steps", [])):
        where = f"{path}: steps[{i}]"
        for key in ("id", "function", "title", "section", "levels"):
            if key not in entry:
                raise HintError(f"{where}: no '{key}'")
        steps.append(Step(entry["id"], entry["function"], str(entry.get("todo", "")),
                          entry["title"], entry["section"], list(entry["levels"]),
                          list(entry.get("covers", []))))
    return steps


def stage_probes(lab: Lab, root: Path = ROOT) -> list[StageProbe]:
    """The lab's stage probes, earliest stage first: hints.json's optional
    "probes": [{"test": "Suite.Test", "through": "step id"}] ([] when it has none)."""
    path = path_of(lab, root)
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    return [StageProbe(str(p.get("test", "")), str(p.get("through", "")))
            for p in data.get("probes", [])]


def steps_through(steps: list[Step], last: str) -> set[str]:
    """The ids of the steps of `last`'s function up to and including `last`, in hints order."""
    step = next((s for s in steps if s.id == last), None)
    if step is None:
        return set()
    same = [s.id for s in steps if s.function == step.function]
    return set(same[:same.index(last) + 1])


def problems(lab: Lab, root: Path = ROOT) -> list[str]:
    """What is wrong with a lab's hints.json (for the book's check): every step has its three
    levels, every id is unique, every § link (its section, and each \\ref in a level) is a
    heading of the chapter, every step's function is a /// [region] of the starter and its TODO
    is written there; and every "(§ Title)" in the starter's comments begins a heading's title."""
    from labkit import grading
    path = path_of(lab, root)
    if not path.exists():
        return [f"{path}: missing (every lab keeps its hints beside its chapter)"]
    try:
        steps = load(lab, root)
    except HintError as e:
        return [str(e)]
    if not steps:
        return [f"{path}: no steps"]
    readme = (lab.folder(root) / "README.md").read_text(encoding="utf-8")
    anchors = grading.section_titles(readme)
    starter = (lab.folder(root) / "starter.cpp").read_text(encoding="utf-8")
    regions = set(re.findall(r"^/// \[(\w+)\]", starter, re.M))
    out, seen = [], set()
    for s in steps:
        where = f"{path}: step {s.id}"
        if s.id in seen:
            out.append(f"{where}: a second step with this id")
        seen.add(s.id)
        if len(s.levels) != len(LEVELS) or not all(isinstance(t, str) and t.strip()
                                                    for t in s.levels):
            out.append(f"{where}: needs {len(LEVELS)} non-empty levels ({'; '.join(LEVELS)}), "
                       f"has {len(s.levels)}")
        refs = [s.section] + [r for t in s.levels for r in re.findall(r"\\ref\s+(\w+)", str(t))]
        for ref in refs:
            if ref not in anchors:
                out.append(f"{where}: § {ref} is not a heading of {lab.room}/README.md")
        if s.function not in regions:
            out.append(f"{where}: {s.function} is not a /// [region] of starter.cpp")
        elif s.todo and not re.search(rf"TODO {re.escape(s.todo.rstrip('abcdefg'))}", starter):
            out.append(f"{where}: the starter has no 'TODO {s.todo}'")
    # The starter's own "(§ Title)" pointers: each is the beginning of a heading's title.
    comments = " ".join(re.sub(r"^\s*//\s?", "", line).strip()
                        for line in starter.splitlines() if line.strip().startswith("//"))
    for m in re.finditer(r"§ ([^)]+?)\)", comments):
        if not any(t.startswith(m.group(1).strip()) for t in anchors.values()):
            out.append(f"labs/{lab.room}/starter.cpp: § {m.group(1).strip()} is not a heading "
                       f"of {lab.room}/README.md")
    ids = [s.id for s in steps]
    for probe in stage_probes(lab, root):
        if probe.through not in ids:
            out.append(f"{path}: probe {probe.test}: 'through' {probe.through!r} is no step id")
        if f"`{probe.test}`" not in readme:
            out.append(f"{path}: probe {probe.test} is not a graded test of the chapter's table")
    return out


# ---- where a line of code belongs ----------------------------------------------------------------

REGION = re.compile(r"^/// \[(\w+)\]")
# A step's start: the solution's "// ---- Step 3b: ..." banners, the starter's "// TODO 3." lines
# (and "//   b." sub-steps of a TODO).
STEP_MARK = re.compile(r"^\s*//\s*(?:-+\s*Step\s+(\d+[a-z]?)\b|TODO\s+(\d+[a-z]?)\b)")
SUB_MARK = re.compile(r"^\s*//\s+([a-g])\.\s")


def place_of_line(lines: list[str], number: int) -> tuple[str, str]:
    """(region, step mark) of the 1-based line `number` of a solution or starter: the
    `/// [region]` it is in and the last Step/TODO mark above it in that region ("" when none)."""
    region, mark = "", ""
    for i in range(min(number, len(lines))):
        line = lines[i]
        m = REGION.match(line)
        if m:
            if region == m.group(1):   # the closing marker
                region, mark = "", ""
                if i + 1 == number:
                    return m.group(1), ""
            else:
                region, mark = m.group(1), ""
            continue
        m = STEP_MARK.match(line)
        if m and region:
            mark = m.group(1) or m.group(2)
            continue
        m = SUB_MARK.match(line)
        if m and region and mark.isdigit():
            mark = mark + m.group(1)
    return region, mark


def step_for(steps: list[Step], region: str, mark: str) -> Step | None:
    """The hint step that owns a place: the step of that region with that TODO (a sub-step such
    as 3b falls back to 3), else the region's step without a TODO, else its first step; a helper
    region belongs to the step that `covers` it."""
    mine = [s for s in steps if s.function == region]
    if not mine:
        mine = [s for s in steps if region in s.covers]
        return mine[0] if mine else None
    todo = mark
    while todo:
        hit = [s for s in mine if s.todo == todo]
        if hit:
            return hit[0]
        todo = todo[:-1] if todo[-1].isalpha() else ""
    plain = [s for s in mine if not s.todo]
    if plain:
        return plain[0]
    # Before the first TODO of a kernel (its given geometry): the first step.
    return mine[0]


def step_of_line(steps: list[Step], lines: list[str], number: int) -> Step | None:
    region, mark = place_of_line(lines, number)
    return step_for(steps, region, mark) if region else None


def find(steps: list[Step], wanted: str) -> list[Step]:
    """The steps `wanted` names: an id ("attention.5"), a TODO number ("5", when one step has
    it), or a function's name."""
    exact = [s for s in steps if s.id == wanted]
    if exact:
        return exact
    by_todo = [s for s in steps if s.todo == wanted or s.id.endswith("." + wanted)]
    if by_todo:
        return by_todo
    return ([s for s in steps if s.function == wanted or s.id.startswith(wanted + ".")]
            or [s for s in steps if s.id.startswith(wanted)])


# ---- tools/lab hint ----------------------------------------------------------------------------------

def state_path(lab: Lab, root: Path = ROOT) -> Path:
    return build_root(root) / "hints" / f"{lab.room}.json"


def read_state(lab: Lab, root: Path = ROOT) -> dict[str, int]:
    try:
        return json.loads(state_path(lab, root).read_text())
    except (OSError, ValueError):
        return {}


def write_state(lab: Lab, state: dict[str, int], root: Path = ROOT) -> None:
    path = state_path(lab, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")


def render_step(lab: Lab, step: Step, shown_levels: int, root: Path = ROOT) -> list[str]:
    from labkit import grading
    from labkit.text import wrapped
    readme = (lab.folder(root) / "README.md").read_text(encoding="utf-8")
    titles = grading.section_titles(readme)
    out = [f"Lab {lab.number}, {step.name()} — {step.title}"
           f"   (§ {titles.get(step.section, step.section)})"]
    for i in range(shown_levels):
        out.append(wrapped(grading.plain(step.levels[i], titles), f"  {i + 1}. {LEVELS[i]}: ", 6))
    return out


def usage_line(lab: Lab) -> str:
    """The one line watch and grade add: how to ask for a hint."""
    return (f"Stuck on a step? tools/lab hint {lab.number} STEP shows one more hint each time "
            f"(tools/lab hint {lab.number} lists the steps).")


def main(args, root: Path = ROOT) -> int:
    from labkit.labs import pick
    lab = pick([args.lab], root)[0]
    try:
        steps = load(lab, root)
    except HintError as e:
        print(f"tools/lab hint: {e}")
        return 1
    if not steps:
        print(f"tools/lab hint: lab {lab.number} has no hints ({path_of(lab, root)})")
        return 1
    state = read_state(lab, root)
    if args.reset:
        for s in (find(steps, args.step) if args.step else steps):
            state.pop(s.id, None)
        write_state(lab, state, root)
        print(f"tools/lab hint {lab.number}: hints start again from level 1"
              + (f" for {args.step}" if args.step else ""))
        return 0
    if not args.step:
        print(f"Lab {lab.number} — {lab.title}: the steps (tools/lab hint {lab.number} STEP "
              "shows one more level each time: the idea, the invariant, the shape of the code)")
        for s in steps:
            seen = state.get(s.id, 0)
            print(f"  {s.id:<16} {s.name():<40} {s.title}"
                  + (f"   [{seen}/{len(LEVELS)} seen]" if seen else ""))
        return 0
    found = find(steps, args.step)
    if len(found) != 1:
        names = ", ".join(s.id for s in (found or steps))
        print(f"tools/lab hint {lab.number}: " + (f"'{args.step}' names several steps: {names}"
              if found else f"no step '{args.step}'; the steps: {names}"))
        return 1
    step = found[0]
    level = min(state.get(step.id, 0) + 1, len(LEVELS))
    state[step.id] = level
    write_state(lab, state, root)
    print("\n".join(render_step(lab, step, level, root)))
    if level < len(LEVELS):
        print(f"\n  (again for level {level + 1}: tools/lab hint {lab.number} {step.id})")
    else:
        print("\n  (that was the last level; --reset hides them again)")
    return 0

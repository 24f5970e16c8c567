"""Diagnosis from the catalogue: which failing test to show first, and which step the bug most
likely lives in. Python 3 standard library only.

The mutant catalogue is a record of known bugs: for each one, the graded tests it fails
(tools/tests/mutants/first_shown.json) and the TODO step its diff changes, with its Caught by:
line (tools/tests/mutants/steps.json, derived from the diffs); `tools/lab check --record` writes
both. From it:

- a test's *specificity*: how few of the lab's mutants fail it. A test that catches one known bug
  says more than one that catches twenty;
- the *step*: each of the student's failing tests votes, with its specificity as weight, for the
  steps that bugs failing it live in — half from the catalogue (the steps of the known bugs that
  fail it), half from the chapter (the steps of the section its hint points at, which is all a
  test no known bug fails has); a tie goes to the step whose known bug is the closest match, by a
  Jaccard similarity of the failing sets in which each test weighs by its specificity;
- the *neighbours*: the votes above weigh each failing test alone, so a narrow test that passes
  says nothing. The known bugs whose whole pattern (what fails and what passes) is closest say
  it: each step also scores the mean over its known bugs of exp(-NEIGHBOUR_DECAY * d), d the
  specificity-weighted count of tests one fails and the other passes; the two scores, each
  normalized over the steps, are mixed NEIGHBOUR_SHARE to the neighbours;
- the first test shown: among the failing tests, the one the catalogue means for bugs of that
  step (named most often in their `Caught by:`), else one whose hint points at the step's
  section, else the most specific.

A sanitizer's report and an emulator error name a line and keep their place in front (they are
read, not matched). Every other case with no match clear enough (too little overlap, or two
steps tied) falls back to grading.first_to_fix's order, and names no step."""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from labkit import hints
from labkit.labs import Lab
from labkit.paths import ROOT

RECORD = Path("tools") / "tests" / "mutants" / "first_shown.json"
STEPS = Path("tools") / "tests" / "mutants" / "steps.json"
# A student release has no mutants/ folders: `tools/lab release` writes what the diagnosis needs
# here instead (shipped_catalogue), each known bug by lab and number, not by name.
SHIPPED = Path("tools") / "labkit" / "known_bugs.json"
# How much of a test's vote the chapter's table gets (its hint's § section) against the steps
# of the known bugs that fail it. Chosen on the catalogue left one out, TODO named (0.3: 46 %,
# 0.5: 50 %, 0.7: 52 %, 0.9: 50 %); the hand-planted bugs were measured after, not tuned on.
# Measured again on the records of 2026-11-26 15:55 with SPECIFICITY_POWER 0.5: 0.3: 69 %,
# 0.5: 67 %, 0.7: 70 %, 0.9: 71 % (59 % the exact step at both 0.7 and 0.9): kept, one case apart.
CHAPTER_SHARE = 0.7
# How steeply a test's weight falls with the number of known bugs that fail it: its weight is
# log((N + 1) / n) ** SPECIFICITY_POWER. Chosen on the catalogue left one out, TODO named (and the
# exact step): 1.0 and 0.75: 69 % (57 %); 0.5 and 0.25: 70 % (59 %); 2.0: 66 %. A flatter weight
# lets the many wide tests a bug fails outvote one narrow test that several steps' bugs fail.
SPECIFICITY_POWER = 0.5
# How much of a step's score comes from its nearest known bugs (whole failing pattern) rather than
# from the failing tests' separate votes, and how fast a known bug's say falls with its distance.
# Chosen on the catalogue left one out (TODO named; 2026-11-27 records): votes alone 59 of 88;
# share 0.2: decay 0.6: 63, 1.0: 65, 2.0: 66, 4.0: 65; decay 2.0: share 0.1: 63, 0.3: 64, 0.5: 61
# (mean over the step's known bugs; the nearest one alone: 63 at 2.0). The hand-planted bugs,
# measured the same day, went from 28 to 30 of 42 at 2.0 and 0.2.
NEIGHBOUR_SHARE = 0.2
NEIGHBOUR_DECAY = 2.0
# A known bug this similar (weighted Jaccard of the failing sets) is taken as the same bug.
SAME_BUG = 0.95
# Less evidence than this (the summed specificity of the votes) names no step.
MIN_EVIDENCE = 0.05
# The failures that are read rather than matched: they name the line.
READ_FIRST = ("race or out of bounds", "sanitizer report", "emulator error")
# Failures that say nothing about the bug: the student has not written that part yet.
UNMATCHED = ("not implemented", "did not build")


@dataclass
class Known:
    key: str            # "06-cuda-split-kv/reduce_without_rescale"
    step: str           # its hint step id, "" when unknown
    failing: frozenset  # Suite.Test keys
    caught_by: tuple = ()   # the tests its Caught by: line names (meant to catch it)
    at: str = ""        # the step that owns the line its first report names ("" when none)


@dataclass
class Catalogue:
    """A lab's known bugs, and how many of them fail each test."""
    known: list[Known] = field(default_factory=list)

    def catches(self, test: str) -> int:
        return sum(test in k.failing for k in self.known)

    def weight(self, test: str) -> float:
        """log((N + 1) / n_t) ** SPECIFICITY_POWER: high for a test few known bugs fail; a test
        none fails weighs like one that one bug fails (its evidence is unknown, not nil)."""
        n = max(len(self.known), 1)
        return math.log((n + 1) / (max(self.catches(test), 1))) ** SPECIFICITY_POWER

    def without(self, key: str) -> "Catalogue":
        return Catalogue([k for k in self.known if k.key != key])


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def failing_of(entry) -> frozenset:
    """The failing tests of one record entry, in any form the record has had: {"failing":
    {Suite.Test: kind}} (one line per mutant, labkit/mutants.py), a {Suite.Test: kind} object, a
    list of {"test", "status", "detail"} objects, or a list of names."""
    if isinstance(entry, str):
        return frozenset(entry.split())
    if isinstance(entry, dict):
        if "failing" in entry:
            return failing_of(entry["failing"])
        return frozenset(k for k, kind in entry.items() if kind not in ("passed", "skipped"))
    out = set()
    for e in entry or []:
        if isinstance(e, str):
            out.add(e)
        elif e.get("status") not in ("passed", "skipped", None):
            out.add(e["test"])
    return frozenset(out)


_CACHE: dict[tuple[str, str], Catalogue] = {}


def catalogue(lab: Lab, root: Path = ROOT) -> Catalogue:
    """The lab's recorded known bugs (empty when the tree has no record)."""
    cache_key = (str(root), lab.room)
    if cache_key not in _CACHE:
        record = _read_json(root / RECORD)
        if record:
            steps = _read_json(root / STEPS)
            entries = {key: {"failing": sorted(failing_of(entry)), **steps.get(key, {}),
                             "at": entry.get("at", "") if isinstance(entry, dict) else ""}
                       for key, entry in record.items()}
        else:
            entries = _read_json(root / SHIPPED)
        known = [Known(key, e.get("step", ""), frozenset(e.get("failing", ())),
                       tuple(e.get("caught_by", ())), e.get("at", ""))
                 for key, e in sorted(entries.items()) if key.split("/")[0] == lab.room]
        _CACHE[cache_key] = Catalogue([k for k in known if k.failing])
    return _CACHE[cache_key]


def catalogue_with(m, root: Path = ROOT) -> Catalogue:
    """The lab's recorded catalogue with mutant `m` (a mutants.Mutant that has run) as it is
    now: its live failing tests, its step from its diff, its Caught by."""
    from labkit import mutants
    key = f"{m.lab.room}/{m.stem}"
    steps = mutant_steps([m], root)
    live = Known(key, steps.get(key, {}).get("step", ""), frozenset(mutants.failing_kinds(m)),
                 tuple(m.caught_by))
    cat = catalogue(m.lab, root).without(key)
    return Catalogue(cat.known + ([live] if live.failing else []))


def shipped_catalogue(root: Path = ROOT) -> str:
    """The text of SHIPPED for a release of the tree at `root`: one line per known bug,
    "NN-name/#i": {"step", "failing", "caught_by"}."""
    record = _read_json(root / RECORD)
    steps = _read_json(root / STEPS)
    lines, numbers = [], {}
    for key, entry in sorted(record.items()):
        room = key.split("/")[0]
        numbers[room] = numbers.get(room, 0) + 1
        value = {"step": steps.get(key, {}).get("step", ""), "failing": sorted(failing_of(entry)),
                 "caught_by": steps.get(key, {}).get("caught_by", [])}
        if isinstance(entry, dict) and entry.get("at"):
            value["at"] = entry["at"]
        lines.append(f"{json.dumps(f'{room}/#{numbers[room]}')}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def similarity(cat: Catalogue, a: frozenset, b: frozenset) -> float:
    """Jaccard similarity of two sets of failing tests, each test weighted by its specificity."""
    union = a | b
    if not union:
        return 0.0
    total = sum(cat.weight(t) for t in union)
    return sum(cat.weight(t) for t in a & b) / total if total else 0.0


@dataclass
class Diagnosis:
    first: object                 # the test to show first (anything with .key/.status/.detail)
    step: hints.Step | None       # where the closest known bugs live; None: no clear match
    score: float = 0.0            # the best match's similarity
    closest: list[str] = field(default_factory=list)   # the best-matching known bugs
    located: bool = False         # the step is where a sanitizer or the emulator says it broke


def step_weights(cat: Catalogue, test: str, steps: list[hints.Step], table: dict) -> dict:
    """P(step | this test fails): the steps of the known bugs that fail it, mixed half and half
    with the chapter's own word, the § section its hint points at (spread over the steps of
    that section). A test no known bug fails is left to the chapter alone."""
    dist: dict[str, float] = {}
    known = [k for k in cat.known if test in k.failing and k.step]
    for k in known:
        dist[k.step] = dist.get(k.step, 0.0) + 1.0 / len(known)
    row = table.get(test)
    chapter = [s.id for s in steps if row is not None and s.section == row.section]
    share = CHAPTER_SHARE if known else 1.0
    for sid in chapter:
        dist[sid] = dist.get(sid, 0.0) * (1 - share if sid in dist else 1) + share / len(chapter)
    if chapter and known:   # renormalize the data's part where the chapter took its share
        for sid in dist:
            if sid not in chapter:
                dist[sid] *= 1 - share
    return dist


def rank_steps(cat: Catalogue, failing: frozenset, steps: list[hints.Step] | None = None,
               table: dict | None = None) -> list[tuple[float, float, str, list[str]]]:
    """(score, best Jaccard match, step, its best-matching bugs) per step, best first; [] when the
    votes sum to less than MIN_EVIDENCE. Each failing test votes for the steps P(step | it fails)
    gives, with its specificity as weight; the neighbours' score is mixed in (module docstring)."""
    steps = steps or []
    table = table or {}
    evidence: dict[str, float] = {}
    for test in failing:
        weight = cat.weight(test)
        for sid, p in step_weights(cat, test, steps, table).items():
            evidence[sid] = evidence.get(sid, 0.0) + weight * p
    # Per step, its known bugs' Jaccard matches and, for the neighbours' score, how far each one's
    # whole pattern is from the student's.
    matches: dict[str, list[tuple[float, str]]] = {}
    near: dict[str, list[float]] = {}
    for k in cat.known:
        if k.step:
            matches.setdefault(k.step, []).append((similarity(cat, failing, k.failing), k.key))
            distance = sum(cat.weight(t) for t in failing ^ k.failing)
            near.setdefault(k.step, []).append(math.exp(-NEIGHBOUR_DECAY * distance))
    near_mean = {sid: sum(v) / len(v) for sid, v in near.items()}
    votes_total = sum(evidence.values())
    near_total = sum(near_mean.values()) or 1.0
    ranked = []
    if votes_total < MIN_EVIDENCE:
        return ranked
    for sid in set(evidence) | set(near_mean):
        score = ((1 - NEIGHBOUR_SHARE) * evidence.get(sid, 0.0) / votes_total
                 + NEIGHBOUR_SHARE * near_mean.get(sid, 0.0) / near_total)
        m = sorted(matches.get(sid, [(0.0, "")]), reverse=True)
        ranked.append((score, m[0][0], sid, [key for s, key in m if s == m[0][0] and key]))
    ranked.sort(key=lambda r: (-r[0], -r[1], r[2]))
    return ranked


def kind_of_result(t) -> str:
    """A graded or live result's kind (grading.KINDS; "passed", "skipped")."""
    from labkit import grading
    return getattr(t, "kind", None) or grading.failure_kind(t.status, t.detail)


class Recorded:
    """A recorded failing test (the record keeps its Suite.Test key and its kind, and, for a report
    that names a line, the step that owns the line: `at`)."""

    def __init__(self, key: str, kind: str, at: str = ""):
        self.key = self.name = key
        self.kind = kind
        self.at = at if kind in READ_FIRST else ""


def recorded_tests(failing) -> list[Recorded]:
    """The failing tests of one record entry ({"failing": {Suite.Test: kind}, "at": step},
    {Suite.Test: kind}, or a list of names)."""
    at = ""
    if isinstance(failing, dict) and "failing" in failing:
        failing, at = failing["failing"], failing.get("at", "")
    if isinstance(failing, dict):
        return [Recorded(k, v, at) for k, v in sorted(failing.items())]
    return [Recorded(k, "wrong value") for k in sorted(failing_of(failing))]


def diagnose(tests: list, table: dict, lab: Lab, cat: Catalogue | None = None,
             root: Path = ROOT) -> Diagnosis | None:
    """The test to show first and the step to name, for a lab's graded results (anything with
    .key and .status/.detail, or .kind; None when every test passes). `cat` defaults to the
    lab's recorded catalogue."""
    from labkit import grading
    kinds = {id(t): kind_of_result(t) for t in tests}
    failing_tests = [t for t in tests if kinds[id(t)] not in ("passed", "skipped")]
    if not failing_tests:
        return None
    fallback = grading.first_to_fix(tests, table, kind_of=lambda t: kinds[id(t)])
    read_first = kinds[id(fallback)] in READ_FIRST
    cat = catalogue(lab, root) if cat is None else cat
    failing = frozenset(t.key for t in failing_tests if kinds[id(t)] not in UNMATCHED)
    if read_first:
        # It names a line: the step is the one that line belongs to, not a guess. (A report
        # that names no line of starter.cpp still comes first; the catalogue names the step.)
        # A recorded result keeps the step of its line instead of the report (`at`).
        located = step_of_report(lab, getattr(fallback, "detail", ""), root)
        if located is None and getattr(fallback, "at", ""):
            located = next((s for s in hints.load(lab, root) if s.id == fallback.at), None)
        if located is not None:
            # ... unless it is a known bug: the same tests fail and its report names a line of
            # the same step, yet the bug lives in another (an index computed early that
            # overruns a buffer later): the catalogue knows where.
            same = [k for k in cat.known if k.failing == failing and k.at == located.id]
            if len({k.step for k in same}) == 1 and same[0].step != located.id:
                step = next((s for s in hints.load(lab, root) if s.id == same[0].step), None)
                if step is not None:
                    return Diagnosis(fallback, step, 1.0, [k.key for k in same])
            return Diagnosis(fallback, located, located=True)
    steps = hints.load(lab, root)
    # A stage probe that fails is the earliest evidence there is: it ran the kernel only up to
    # its stage, so the bug is in a step it grades (and later steps cannot have caused it).
    probe = next((p for p in hints.stage_probes(lab, root) if p.test in failing), None)
    probe_test = next((t for t in failing_tests if probe and t.key == probe.test), None)
    if not failing or not cat.known:
        return Diagnosis(probe_test or fallback, None)
    ranked = rank_steps(cat, failing, steps, table)
    if probe_test is not None:
        graded = hints.steps_through(steps, probe.through)
        ranked = [r for r in ranked if r[2] in graded]
        if not ranked:
            return Diagnosis(probe_test, None)
    if not ranked or ranked[0][0] < MIN_EVIDENCE:
        return Diagnosis(probe_test or fallback, None, ranked[0][0] if ranked else 0.0)
    if len(ranked) > 1 and ranked[1][:2] == ranked[0][:2]:   # two steps tied: no evidence either way
        return Diagnosis(probe_test or fallback, None, ranked[0][0])
    # A known bug whose failing set is (almost) the student's is the answer itself.
    nearest = max(ranked, key=lambda r: (r[1], r[0]))
    match = nearest[1]
    best, _, step_id, closest = nearest if match >= SAME_BUG else ranked[0]
    step = next((s for s in steps if s.id == step_id), None)
    # Lead with the failing test the catalogue means for bugs of that step: the one most often
    # named in the Caught by: lines of the step's known bugs (the closest known bugs' own lines
    # count most: for a bug of the catalogue, that is the test its author meant), then one whose
    # hint points at the step's section, then the most specific (fewest known bugs fail it),
    # then today's order.
    meant: dict[str, float] = {}
    for k in cat.known:
        weight = (len(cat.known) if match >= SAME_BUG and k.key in closest else 0) + (k.step == step_id)
        for key in k.caught_by:
            meant[key] = meant.get(key, 0) + weight
    order = {key: i for i, key in enumerate(table)}
    section = step.section if step else ""

    def lead(t):
        n = cat.catches(t.key)
        row = table.get(t.key)
        return (kinds[id(t)] in UNMATCHED, -meant.get(t.key, 0),
                not (row is not None and row.section == section),
                n if n else len(cat.known) + 1, order.get(t.key, len(order)), t.key)

    first = fallback if read_first else probe_test or min(failing_tests, key=lead)
    return Diagnosis(first, step, best, closest)


def step_of_report(lab: Lab, detail: str, root: Path = ROOT) -> hints.Step | None:
    """The step that owns the line of the student's file a sanitizer's or the emulator's report
    names ("labs/06-x/starter.cpp:97 in ..."), read from the starter's /// [regions] and TODO
    marks as it is now; None when it names no line of it."""
    path = lab.folder(root) / "starter.cpp"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    return step_of_lines(hints.load(lab, root), lines, "starter.cpp", detail)


def report_lines(detail: str, name: str) -> list[int]:
    """The lines of the file `name` a report names, in its order ("inlined at" call sites too)."""
    return [int(n) for n in re.findall(rf"(?<![\w.-]){re.escape(name)}:(\d+)", detail or "")]


def report_line(detail: str, name: str, lines: list[str] | None = None) -> int | None:
    """The line of the file `name` (its text: `lines`) that a report is about. For a race, the
    line of its write, when one of its two accesses writes and the other reads: the barrier that
    is missing belongs to the step that writes (after a write that others then read — the step
    publishes its result —, or before a write over what others are still reading — the step
    reuses a buffer too soon); for two writes, or a copy that has not landed, the earlier in the
    file of the accesses, and so too when the write is only a helper's line (a copy: where an
    access was issued, not where the order belongs). Only lines inside the kernel the race is in
    count, where it names any. A race between two blocks (a missing fence + atomic handshake) is
    placed at its read instead: the handshake belongs to the step that takes the other blocks'
    results.
    Otherwise the first line of that file it names. None when it names none."""
    numbers = report_lines(detail, name)
    if not numbers:
        return None
    race = re.search(r"\bsimt: race in (\w+)", detail)
    if not race:
        return numbers[0]

    def own(found: list[int]) -> list[int]:
        if lines is None:
            return found
        return [n for n in found if hints.place_of_line(lines, n)[0] == race.group(1)]

    current, sep, previous = detail.partition(", which ")
    across_blocks = ", and nothing orders the two blocks" in previous
    previous = previous.split(", with no barrier")[0].split(", and nothing orders")[0]
    if sep:
        cur_writes = " writes " in current
        prev_writes = bool(re.search(r" (wrote|updated atomically) at ", previous))
        if across_blocks and cur_writes != prev_writes:
            # Two blocks of one launch: the missing fence + atomic handshake is written where the
            # later block takes the others' results (a fused merge), so the step is the reader's.
            reader = own(report_lines(previous if cur_writes else current, name))
            if reader:
                return min(reader)
        prev_reads = " read at " in previous
        if cur_writes != prev_writes and (prev_writes or prev_reads):
            writer = own(report_lines(current if cur_writes else previous, name))
            if writer:   # a write issued by a helper (a copy) says nothing of the kernel's order
                return min(writer)
    return min(own(numbers) or numbers)


def step_of_lines(steps: list[hints.Step], lines: list[str], name: str,
                  detail: str) -> hints.Step | None:
    """The step that owns the line of the file `name` (its text: `lines`) a report names."""
    number = report_line(detail, name, lines)
    return None if number is None else hints.step_of_line(steps, lines, number)


def located_step(lab: Lab, tests: list, source: str, name: str, root: Path = ROOT) -> str:
    """For a record: the step (its id) that owns the line the first failure shown names, when it
    is one that is read rather than matched (a race or bounds finding, a sanitizer's report, an
    emulator error) and it names a line of `source` (the file built, called `name` in reports);
    "" otherwise. Graded results: anything with .key, .status, .detail."""
    from labkit import grading
    first = grading.first_to_fix(tests, grading.read_table(lab, root))
    if first is None or grading.failure_kind(first.status, first.detail) not in READ_FIRST:
        return ""
    step = step_of_lines(hints.load(lab, root), source.splitlines(), name, first.detail)
    return step.id if step else ""


def step_line(d: Diagnosis, titles: dict[str, str]) -> str:
    """"Failures like these usually come from TODO 5 of … (…): § …" (or, for a report that
    names a line, "That line is in TODO 5 …")."""
    if d is None or d.step is None:
        return ""
    s = d.step
    lead = "That line is in" if d.located else "Failures like these usually come from"
    return f"{lead} {s.name()} ({s.title}): § {titles.get(s.section, s.section)}"


def crash_line(tests: list, lab: Lab) -> str:
    """A note when tests crash: a write past a buffer corrupts the heap and brings down tests
    far from the bug; the sanitizers name the line."""
    crashed = [t for t in tests if kind_of_result(t) == "crashed"]
    if not crashed:
        return ""
    return (f"{len(crashed)} test{'s' if len(crashed) > 1 else ''} crashed: a read or write "
            f"outside a buffer often does that far from the bug. tools/lab grade {lab.number} "
            "--asan names the line.")


def first_message(g, root: Path = ROOT) -> tuple[object, list[str]]:
    """For a graded lab (grading.LabGrade): the test to show first and the lines that follow its
    hint (the step the closest known bugs live in, or the one that owns the line a report names,
    with that step's first hint instead of the test's; a note on crashes)."""
    from labkit import grading
    d = diagnose(g.tests, g.table, g.lab, root=root)
    if d is None:
        return None, []
    if d.located and d.step is not None and kind_of_result(d.first) != "race or out of bounds":
        # The test's own hint is about what it checks, not about the line that broke (the
        # memory checker's findings already carry a hint of their line's step: grading.py).
        d.first.hint = f"{grading.plain(d.step.levels[0])} (§ " + grading.section_titles(
            (g.lab.folder(root) / "README.md").read_text(encoding="utf-8")).get(
                d.step.section, d.step.section) + ")"
    readme = (g.lab.folder(root) / "README.md").read_text(encoding="utf-8")
    titles = grading.section_titles(readme)
    lines = [x for x in (step_line(d, titles), "" if kind_of_result(d.first) == "crashed" else
                         crash_line(g.tests, g.lab)) if x]
    if d.step is not None:
        lines.append(f"More on that step: tools/lab hint {g.lab.number} {d.step.id}")
    return d.first, lines


# ---- where each known bug lives --------------------------------------------------------------

def changed_lines(diff_lines: list[str], solution: list[str] | None = None) -> list[int]:
    """The 1-based lines of the old file that a unified diff removes, or, for a hunk that only
    adds, the line it adds before. Each hunk is placed where it applies in `solution` (its lines
    may have moved since it was written), else at the line its header states."""
    from labkit import patches
    diff = patches.parse(diff_lines)
    out = []
    for number, h in enumerate(diff.hunks, start=1):
        line = h.old_start
        if solution is not None:
            try:
                line = patches.locate(h, solution, number, "the diff") + 1
            except patches.PatchError:
                pass
        for text in h.lines:
            if text[0] in "-+":
                out.append(line)
            if text[0] in " -":
                line += 1
    return out


def step_of_diff(lab: Lab, diff_lines: list[str], solution: str, chapter: str = "",
                 root: Path = ROOT) -> str:
    """The hint step that owns a diff of solution.cpp: the step of the first changed line inside
    a marked step (a change to a kernel's parameter list says less than one to its body), else
    of the first changed line inside a /// [region], else the first step whose § is the
    mutant's Chapter: section (a helper outside every region). "" when none."""
    steps = hints.load(lab, root)
    lines = solution.splitlines()
    places = [hints.place_of_line(lines, n) for n in changed_lines(diff_lines, lines)]
    for want_mark in (True, False):
        for region, mark in places:
            if region and (mark or not want_mark):
                step = hints.step_for(steps, region, mark)
                if step is not None:
                    return step.id
    return next((s.id for s in steps if s.section == chapter), "")


def check_shown_first(found: list, root: Path = ROOT) -> None:
    """For each mutant of `found` that ran (mutants.run): the test a student with this bug sees
    first (watch, grade) goes in its shown_first, and must be one of the tests its header names,
    so that its hint is one meant for this bug; otherwise that is a problem of the mutant. The
    catalogue it is diagnosed against holds the mutant as it runs now (a new or changed mutant is
    known to the diagnosis before it is recorded)."""
    from labkit import grading
    for m in found:
        if not m.results:
            continue
        d = diagnose(list(m.results.values()), grading.read_table(m.lab), m.lab,
                     catalogue_with(m, root))
        m.shown_first = d.first if d else None
        if m.shown_first is not None and m.shown_first.key not in m.caught_by:
            kind = grading.failure_kind(m.shown_first.status, m.shown_first.detail)
            m.problems.append(f"watch would show {m.shown_first.key} first ({kind}), which "
                              "Caught by does not name: name it there if it is meant to catch "
                              "this bug, or move a test Caught by names before it in the "
                              "chapter's table")


def mutant_steps(found: list, root: Path = ROOT) -> dict[str, dict]:
    """NN-name/stem -> {"step", "caught_by"} of each catalogue mutant in `found` that applies (a
    stale one's step waits for its rewrite)."""
    from labkit import mutants
    out = {}
    for m in found:
        if m.source is None:
            continue
        _, diff, _ = mutants.split(m.path.read_text(encoding="utf-8"))
        solution = mutants.solution_path(m.lab, root).read_text(encoding="utf-8")
        out[f"{m.lab.room}/{m.stem}"] = {
            "step": step_of_diff(m.lab, diff, solution, m.chapter, root),
            "caught_by": m.caught_by}
    return out


def write_steps(found: list, root: Path = ROOT) -> int:
    """Writes STEPS (one line per mutant) for the mutants in `found`, keeping the others'."""
    path = root / STEPS
    kept = _read_json(path)
    kept.update(mutant_steps(found, root))
    lines = [f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in sorted(kept.items())]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
    return len(lines)

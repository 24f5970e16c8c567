"""The diagnosis from the catalogue (labkit/diagnosis.py), on recorded data: no build needed.

- Every catalogue mutant's recorded failing set leads to its own step (the rule reads the record).
- Left one out: for each mutant of labs 04-07, the rule built from the *other* mutants still
  names its step for most (a student's bug is rarely exactly one of the catalogue).
- Hand-planted bugs that are NOT in the catalogue (tools/tests/mutants/hand_bugs/: one patch each,
  as a student would make the mistake, and hand_bugs.json: the step that holds it and the tests it
  failed when graded): over the catalogue mutants of labs 04-07 and these, the first message names
  the step that holds the bug in at least 90 % of cases.
- steps.json (each mutant's step, from where its diff lands in solution.cpp) is up to date.

Record again after a change to the tests or the catalogue:

    tools/lab check --record                                 # first_shown.json and steps.json
    python3 tools/tests/test_diagnosis.py --steps            # steps.json alone, from the diffs
    python3 tools/tests/test_diagnosis.py --hand-bugs [NN]   # build, grade, record the hand bugs

Run: python3 -m unittest discover -s tools/tests"""
from __future__ import annotations

import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labkit import diagnosis, grading, hints, labs, mutants  # noqa: E402
from labkit.paths import ROOT  # noqa: E402

HERE = Path(__file__).resolve().parent / "mutants"
STEPS = HERE / "steps.json"
HAND = HERE / "hand_bugs"
HAND_RECORD = HAND / "hand_bugs.json"
MEASURED = ("04", "05", "06", "07")
# The issue asks for 90 % (the first message names the TODO that holds the bug, over the catalogue
# mutants of labs 04-07 and the hand-planted bugs). Measured on the records of 2026-11-27 15:20
# (100 mutants, 74 hand bugs): 157 of 174, 90.2 % (catalogue 100 of 100; hand bugs 57 of 74; the
# catalogue left one out 70 %). Two changes to the equal-key/value probes that day made them
# blind to the other half of the kernel even when it reads the wrong place: the equal-values
# probes give the key slots no token holds real keys instead of NaN, and the equal-keys probes
# write 1/2 into every dimension of the one key, so a key read of the wrong dimensions sees the
# same key. Named right since: lab 05's keys_of_the_logical_block and
# key_chunks_read_as_one_contiguous_row, lab 06's last_partition_read_whole; named wrong since
# (one vote behind): lab 06's partition_max_reduced_with_block_sum. On the records of 12:00:
# 155 of 174 (catalogue 99, hand bugs 56). The third blind set (16 bugs written that day by a
# helper who saw neither the tests, the rule nor this report, recorded before the change above)
# is placed 13 of 16 (13 then too, one bug gained and one lost); the first and second 12 and 13
# of 16 (the second was 11 of 16 before the whole-cache equal-key/value probes and lab 06's
# equal-maxima reduce probe, which were written after reading its misses, so it is no longer
# blind). Earlier: 87 % of 157 (09:20), 90 % of 130 (04:10, 42 hand bugs), 84 % of 96 before
# that day's stage probes.
# On the records of 2026-11-29 22:30, after lab 05's two stage probes (ProbeA..., ProbeB...)
# and the rule that a failing stage probe bounds the step: 159 of 175, 90.9 % (catalogue 101 of
# 101, hand bugs 58 of 74, left one out 70 of 101).
# On the records of 2026-11-30 05:00, with the mutant gqa_divides_by_num_kv_heads (lab 05, TODO 0:
# kv head = head / num_kv_heads): left one out 70 of 102. Where it overruns the key cache the
# emulator names TODO 2's load, and an emulator error is read, not matched, so that case cannot
# name TODO 0 (the GQA test it shows first hints at the kv-head map; Probe A, at 6/3, fails too);
# the bar below moved from 0.69 to 0.68 for that one case, no other row changed.
# These bars guard what is reached, so that a change that loses ground fails. The hand-planted
# bugs stay under 90 %: bugs of neighbouring steps fail the same tests (a stage probe fails
# for a bug in its stage and in every stage before it), so a failing set cannot tell them apart.
TARGET = 0.90
HAND_TARGET = 0.76
LEAVE_ONE_OUT = 0.68   # a bug the catalogue does not hold, simulated


Failing = diagnosis.Recorded   # a recorded failing test: its Suite.Test key and its kind


def recorded_failures(entry) -> list:
    return diagnosis.recorded_tests(entry)


def mutant_steps() -> dict[str, dict]:
    """Each catalogue mutant's step and Caught by, from its diff."""
    return diagnosis.mutant_steps(mutants.catalogue(labs.labs()))


def hand_bugs(lab: labs.Lab) -> list[mutants.Mutant]:
    return [mutants.read_mutant(lab, p) for p in sorted((HAND / lab.room).glob("*.patch"))]


def record_hand_bugs(numbers: list[str]) -> None:
    """Builds each hand bug like a mutant (in build/hand-bugs, at grade's -O1), runs the graded
    tests, and records its failing tests and its step; keeps other labs' entries."""
    from labkit import build as cmake
    from labkit.paths import build_dir
    picked = labs.pick(numbers or list(MEASURED))
    found = [m for lab in picked for m in hand_bugs(lab)]
    for m in found:
        if m.source is None:
            sys.exit(f"hand bug {m.lab.room}/{m.stem}: {'; '.join(m.problems)}")
    build = build_dir("hand-bugs")
    sources = build / "sources"
    with cmake.lock(build, "test_diagnosis --hand-bugs"):
        mutants.write_sources(found, sources)
        cmake.configure(build, {"LAB_IMPL": "solution", "PA_MUTANTS": "ON",
                                "PA_MUTANT_SOURCES": str(sources), "PA_CUDA": "OFF",
                                "PA_BENCHMARKS": "OFF",
                                "CMAKE_CXX_FLAGS_RELEASE": grading.FAST_FLAGS})
        mutants.run(found, build)
    kept = json.loads(HAND_RECORD.read_text()) if HAND_RECORD.exists() else {}
    steps = {s.id for lab in picked for s in hints.load(lab)}
    for m in found:
        key = f"{m.lab.room}/{m.stem}"
        _, diff, _ = mutants.split(m.path.read_text(encoding="utf-8"))
        solution = mutants.solution_path(m.lab).read_text(encoding="utf-8")
        step = diagnosis.step_of_diff(m.lab, diff, solution, m.chapter)
        assert step in steps, f"{key}: no step"
        kept[key] = {"step": step, "bug": m.bug, **mutants.record_entry(m)}
        print(f"{key}: {step}, {len(kept[key]['failing'])} failing")
    lines = [f"{json.dumps(k)}: {json.dumps(e, ensure_ascii=False)}" for k, e in sorted(kept.items())]
    HAND_RECORD.write_text("{\n" + ",\n".join(lines) + "\n}\n")   # one line per bug


def first_message(lab: labs.Lab, failing: list[Failing], cat=None):
    """(the test shown first, the step named or None) for one graded result."""
    d = diagnosis.diagnose(failing, grading.read_table(lab), lab, cat)
    return (d.first.key if d else None), (d.step.id if d and d.step else None)


def measure(with_catalogue: bool = True, leave_one_out: bool = False):
    """[(key, owning step, test shown first, step named)] over the measured labs."""
    record = json.loads(mutants.RECORD.read_text())   # each entry whole: its "at" too
    owners = {k: v["step"] for k, v in json.loads(STEPS.read_text()).items()}
    rows = []
    for lab in labs.pick(list(MEASURED)):
        cat = diagnosis.catalogue(lab)
        if with_catalogue:
            for key in sorted(k for k in record if k.startswith(lab.room + "/")):
                use = cat.without(key) if leave_one_out else cat
                shown, named = first_message(lab, recorded_failures(record[key]), use)
                rows.append((key, owners.get(key, ""), shown, named))
        hand = json.loads(HAND_RECORD.read_text()) if HAND_RECORD.exists() else {}
        if not leave_one_out:
            for key in sorted(k for k in hand if k.startswith(lab.room + "/")):
                failing = recorded_failures(hand[key])
                shown, named = first_message(lab, failing, cat) if failing else (None, None)
                rows.append((key, hand[key]["step"], shown, named))
    return rows


def todo_of(step: str | None) -> str | None:
    """The starter's TODO a hint step belongs to: lab 07's sub-steps 3b, 3c, 3f are TODO 3."""
    return step.rstrip("abcdefg") if step else None


def rate(rows, strict: bool = False) -> float:
    """How often the step named is the one that holds the bug (strict), or its TODO."""
    same = (lambda a, b: a == b) if strict else (lambda a, b: todo_of(a) == todo_of(b))
    return sum(same(owner, named) for _, owner, _, named in rows) / max(len(rows), 1)


@unittest.skipUnless(labs.has_solutions(), "a student release has no mutants")
class Diagnosis(unittest.TestCase):
    def test_steps_record_is_up_to_date(self):
        recorded, now = json.loads(STEPS.read_text()), mutant_steps()
        self.assertEqual({k: recorded.get(k) for k in now}, now,
                         "steps.json is stale: tools/lab check --record (or python3 "
                         "tools/tests/test_diagnosis.py --steps)")
        every = {f"{m.lab.room}/{m.stem}" for m in mutants.catalogue(labs.labs())}
        self.assertLessEqual(set(now), set(recorded), "a mutant has no step: --steps")
        self.assertLessEqual(set(recorded), every, "steps.json names a mutant that is gone")

    def test_every_mutant_has_a_step(self):
        for key, entry in json.loads(STEPS.read_text()).items():
            self.assertTrue(entry["step"], f"{key}: its diff lands in no step of hints.json")

    def test_catalogue_mutants_name_their_own_step(self):
        rows = measure()
        missed = [r for r in rows if r[0] in json.loads(STEPS.read_text())
                  and todo_of(r[1]) != todo_of(r[3])]
        self.assertLessEqual(len(missed), 2, "\n".join(map(str, missed)))

    def test_left_one_out(self):
        rows = measure(leave_one_out=True)
        self.assertGreaterEqual(len(rows), 40)
        self.assertGreaterEqual(rate(rows), LEAVE_ONE_OUT,
                                "\n".join(str(r) for r in rows if r[1] != r[3]))

    def test_hand_bugs_and_catalogue_reach_the_target(self):
        hand = json.loads(HAND_RECORD.read_text())
        self.assertGreaterEqual(len(hand), 20, "at least 20 hand-planted bugs")
        catalogue_keys = set(json.loads(STEPS.read_text()))
        self.assertFalse(catalogue_keys & set(hand), "a hand bug must not be in the catalogue")
        for key in hand:   # not a copy of a catalogue mutant under another name
            lab_room, stem = key.split("/")
            self.assertFalse((ROOT / "solutions" / lab_room / "mutants" / f"{stem}.patch").exists())
        rows = measure()
        misses = "\n".join(str(r) for r in rows if todo_of(r[1]) != todo_of(r[3]))
        self.assertGreaterEqual(rate(rows), TARGET, misses)
        self.assertGreaterEqual(rate([r for r in rows if r[0] in hand]), HAND_TARGET, misses)

    def test_a_failing_stage_probe_comes_first_and_bounds_the_step(self):
        # Lab 05 with a bug in TODO 3 or 4 that, of the whole-kernel tests, only the equal-values
        # one sees: Probe B fails with it. Without the probe rule the grader would start with
        # that test and name TODO 5 (measured: it does); with it, it starts with Probe B and
        # names a step Probe B grades.
        lab = labs.pick(["05"])[0]
        probes = hints.stage_probes(lab)
        self.assertEqual([p.through for p in probes], ["attention.2", "attention.4"])
        table = grading.read_table(lab)
        failing = [diagnosis.Recorded(probes[1].test, "wrong value"), diagnosis.Recorded(
            "PagedAttentionV1.EqualValuesComeBackWhateverTheWeights", "wrong value")]
        d = diagnosis.diagnose(failing, table, lab)
        self.assertEqual(d.first.key, probes[1].test)
        self.assertIsNotNone(d.step)
        self.assertIn(d.step.id, hints.steps_through(hints.load(lab), "attention.4"))
        # A probe's 'through' must name a step, and the probe must be a graded test.
        self.assertEqual([x for x in hints.problems(lab) if "probe" in x], [])

    def test_a_release_ships_the_same_knowledge_without_the_names(self):
        import shutil
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            release = Path(tmp)
            (release / diagnosis.SHIPPED).parent.mkdir(parents=True)
            text = diagnosis.shipped_catalogue()
            (release / diagnosis.SHIPPED).write_text(text)
            for lab in labs.pick(list(MEASURED)):
                shipped = diagnosis.catalogue(lab, release)
                here = diagnosis.catalogue(lab)
                def facts(cat):
                    return sorted((k.step, sorted(k.failing), k.caught_by) for k in cat.known)
                self.assertEqual(facts(shipped), facts(here))
                for m in mutants.catalogue([lab]):
                    self.assertNotIn(m.stem, text, "a release names no mutant")
            shutil.rmtree(release / "tools")

    def test_a_clear_match_leads_with_a_test_the_match_fails(self):
        lab = labs.pick(["06"])[0]
        record = mutants.read_record()
        for key in (k for k in record if k.startswith(lab.room + "/")):
            failing = recorded_failures(record[key])
            d = diagnosis.diagnose(failing, grading.read_table(lab), lab)
            if d.step is not None:
                self.assertIn(d.first.key, {f.key for f in failing})


class Rule(unittest.TestCase):
    """The rule on made-up data: specificity, ties and no match fall back."""

    def setUp(self):
        self.lab = labs.pick(["06"])[0]
        K = diagnosis.Known
        self.cat = diagnosis.Catalogue([
            K("x/a", "attention.1", frozenset({"S.Wide", "S.NarrowA"})),
            K("x/b", "reduce.3", frozenset({"S.Wide", "S.NarrowB"})),
            K("x/c", "reduce.3", frozenset({"S.Wide", "S.NarrowB", "S.Other"})),
        ])
        self.table = {k: grading.Row(k, 1, "", "", "") for k in
                      ("S.Wide", "S.NarrowA", "S.NarrowB", "S.Other")}

    def test_the_most_specific_failing_test_leads(self):
        d = diagnosis.diagnose([Failing("S.Wide", "NaN"), Failing("S.NarrowA", "wrong value")],
                               self.table, self.lab,
                               self.cat)
        self.assertEqual((d.first.key, d.step.id), ("S.NarrowA", "attention.1"))

    def test_no_match_falls_back_to_the_table_order(self):
        d = diagnosis.diagnose([Failing("S.Unknown", "wrong value")], self.table, self.lab, self.cat)
        self.assertIsNone(d.step)
        self.assertEqual(d.first.key, "S.Unknown")

    def test_a_tie_names_no_step(self):
        cat = diagnosis.Catalogue([
            diagnosis.Known("x/a", "attention.1", frozenset({"S.Wide"})),
            diagnosis.Known("x/b", "reduce.3", frozenset({"S.Wide"}))])
        d = diagnosis.diagnose([Failing("S.Wide", "wrong value")], self.table, self.lab, cat)
        self.assertIsNone(d.step)

    def test_a_report_that_names_a_line_names_that_lines_step(self):
        starter = (self.lab.folder() / "starter.cpp").read_text().splitlines()
        line = next(i for i, l in enumerate(starter, 1) if "TODO 5." in l) + 1
        report = Failing("S.Wide", "sanitizer report")
        report.detail = f"labs/{self.lab.room}/starter.cpp:{line} in paged_attention_v2_kernel: ..."
        d = diagnosis.diagnose([Failing("S.NarrowA", "wrong value"), report], self.table, self.lab,
                               self.cat)
        self.assertEqual((d.first.key, d.step.id, d.located), ("S.Wide", "attention.5", True))

    def test_a_race_names_the_line_of_its_write(self):
        # The missing barrier belongs to the step that writes: after a write others then read
        # (it publishes its result), or before a write over what others still read (it reuses
        # the buffer too soon). Two writes: the earlier line, where the first must be ordered.
        race = ("simt: race in k, block (0, 0, 0): thread 2 writes static __shared__ memory at "
                "bug.cpp:138, which thread 0 read at device_helpers.cuh:49 (inlined at "
                "bug.cpp:166), with no barrier between them")
        self.assertEqual(diagnosis.report_line(race, "bug.cpp"), 138)
        reuse_later = race.replace("bug.cpp:138", "bug.cpp:190")
        self.assertEqual(diagnosis.report_line(reuse_later, "bug.cpp"), 190)
        publish = ("simt: race in k, block (0, 0, 0): thread 5 reads static __shared__ memory at "
                   "bug.cpp:90, which thread 0 wrote at bug.cpp:120, with no barrier between them")
        self.assertEqual(diagnosis.report_line(publish, "bug.cpp"), 120)
        two_writes = publish.replace(" reads ", " writes ")
        self.assertEqual(diagnosis.report_line(two_writes, "bug.cpp"), 90)
        bounds = "simt: out of bounds in k: thread 3 reads at bug.cpp:90 (inlined at bug.cpp:40)"
        self.assertEqual(diagnosis.report_line(bounds, "bug.cpp"), 90)
        # A write issued in a helper (a copy) outside the kernel: the kernel's own line counts.
        source = ["/// [copy]"] + ["  x;"] * 8 + ["/// [copy]", "/// [k]"] + ["  y;"] * 200
        landed = ("simt: race in k, block (0, 0, 0): thread 5 reads static __shared__ memory at "
                  "bug.cpp:90, which thread 0 wrote at bug.cpp:4, with no barrier between them")
        self.assertEqual(diagnosis.report_line(landed, "bug.cpp", source), 90)
        self.assertEqual(diagnosis.report_line(publish, "bug.cpp", source), 120)
        self.assertIsNone(diagnosis.report_line(race, "starter.cpp"))
        self.assertIsNone(diagnosis.report_line("at not_bug.cpp:12", "bug.cpp"))
        # Two blocks (a missing fence): the handshake belongs where the results are taken, the read.
        blocks = ("simt: race in k, block (3, 0, 0): thread 7 reads global memory at bug.cpp:240, "
                  "which thread 7 of block (0, 0, 0) wrote at bug.cpp:200, and nothing orders the "
                  "two blocks: the block that writes must publish ...")
        self.assertEqual(diagnosis.report_line(blocks, "bug.cpp"), 240)

    def test_a_recorded_report_names_the_step_of_its_line(self):
        entry = {"failing": {"S.Wide": "race or out of bounds", "S.NarrowA": "wrong value"},
                 "at": "reduce.3"}
        d = diagnosis.diagnose(diagnosis.recorded_tests(entry), self.table, self.lab, self.cat)
        self.assertEqual((d.first.key, d.step.id, d.located), ("S.Wide", "reduce.3", True))

    def test_a_narrow_test_that_passes_speaks_through_the_neighbours(self):
        # Both steps' bugs fail S.Wide; only attention.1's also fail S.NarrowA. A student who fails
        # S.Wide alone looks like reduce.3's bugs (S.NarrowA passes), though the votes tie.
        cat = diagnosis.Catalogue([
            diagnosis.Known("x/a", "attention.1", frozenset({"S.Wide", "S.NarrowA"})),
            diagnosis.Known("x/b", "reduce.3", frozenset({"S.Wide"}))])
        ranked = diagnosis.rank_steps(cat, frozenset({"S.Wide"}))
        self.assertEqual(ranked[0][2], "reduce.3")
        self.assertGreater(ranked[0][0], ranked[1][0])

    def test_a_located_report_of_a_known_bug_names_the_known_bugs_step(self):
        # The report names a line of reduce.3 (where the overrun lands), and a known bug with the
        # same failures, reported at the same step, lives in attention.1: the catalogue wins.
        cat = diagnosis.Catalogue(self.cat.known + [diagnosis.Known(
            "x/d", "attention.1", frozenset({"S.Wide", "S.NarrowA"}), (), "reduce.3")])
        entry = {"failing": {"S.Wide": "race or out of bounds", "S.NarrowA": "wrong value"},
                 "at": "reduce.3"}
        d = diagnosis.diagnose(diagnosis.recorded_tests(entry), self.table, self.lab, cat)
        self.assertEqual((d.first.key, d.step.id, d.located), ("S.Wide", "attention.1", False))
        # A different failing set is not that bug: the line's step stands.
        entry["failing"]["S.Other"] = "wrong value"
        d = diagnosis.diagnose(diagnosis.recorded_tests(entry), self.table, self.lab, cat)
        self.assertEqual((d.step.id, d.located), ("reduce.3", True))

    def test_a_sanitizer_report_keeps_its_place(self):
        d = diagnosis.diagnose([Failing("S.NarrowA", "wrong value"),
                                Failing("S.Wide", "sanitizer report")],
                               self.table, self.lab, self.cat)
        self.assertEqual(d.first.key, "S.Wide")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--steps"]:
        diagnosis.write_steps(mutants.catalogue(labs.labs()))
        print(f"{STEPS}: written")
    elif sys.argv[1:2] == ["--hand-bugs"]:
        record_hand_bugs(sys.argv[2:])
    elif sys.argv[1:2] == ["--report"]:
        both = measure()
        for name, rows in (("catalogue + hand bugs", both),
                           ("catalogue", [r for r in both if "/" in r[0] and r[0] in
                                          json.loads(STEPS.read_text())]),
                           ("hand bugs", [r for r in both if r[0] not in
                                          json.loads(STEPS.read_text())]),
                           ("catalogue left one out", measure(leave_one_out=True))):
            print(f"== {name}: {rate(rows):.0%} of {len(rows)} name the TODO, "
                  f"{rate(rows, strict=True):.0%} the exact step")
            for key, owner, shown, named in rows:
                print(f"  {'ok  ' if todo_of(owner) == todo_of(named) else 'MISS'} {key:<60} {owner:<14} "
                      f"named {named}, shown first {shown}")
    else:
        unittest.main()

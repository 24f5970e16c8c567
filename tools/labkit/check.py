"""The instructor's commands that prove the grader: `mutants` (and writing one: --new, --save)
and `check`. Each needs the tree's solutions/ folder."""
from __future__ import annotations

import sys

from labkit import build as cmake
from labkit import diagnosis, grading, mutants
from labkit.labs import labs, pick
from labkit.paths import build_dir, shown


# ---- mutants ----------------------------------------------------------------------------------

def cmd_mutants(args) -> int:
    if args.new or args.save:
        return edit_mutant(*(args.new or args.save), saving=bool(args.save))
    picked = pick(args.labs)
    found = mutants.catalogue(picked)
    if not found:
        sys.exit("tools/lab mutants: no mutants in solutions/*/mutants for these labs")
    with cmake.lock(build_dir("mutants"), "mutants"):
        mutants.run(found, mutants.configure(found))
    diagnosis.check_shown_first(found)
    mutants.print_report(found)
    survivors = [m for m in found if not m.killed]
    print(f"\n{len(found) - len(survivors)} of {len(found)} mutants killed by an algorithm test")
    return 1 if survivors else 0


def edit_mutant(number: str, stem: str, saving: bool) -> int:
    """--new NN STEM: the scratch file to write a mutant in; --save NN STEM: its patch."""
    lab = pick([number])[0]
    if not saving:
        try:
            scratch, stale = mutants.new(lab, stem)
        except ValueError as e:
            sys.exit(f"tools/lab mutants --new: {e}")
        patch = mutants.patch_path(lab, stem)
        if stale:
            print(f"{shown(patch)} no longer applies to solution.cpp:\n  "
                  + "\n  ".join(stale) + "\nIts fields are kept; make its change again in the "
                  "code. The old diff, to see what it changed:\n")
            print(patch.read_text(encoding="utf-8").partition("\n\n")[2])
        code = ("the mutant" if patch.exists() and not stale
                else f"solutions/{lab.room}/solution.cpp")
        print(f"tools/lab mutants --new: {shown(scratch)} holds {code} under its four "
              "fields.\n"
              "  1. Fill in the fields: Mutant: (the bug, as a student would make it), Bug: (what "
              "goes wrong),\n     Chapter: \\ref <section of the lab's README>, Caught by: "
              "Suite.Test, ... (the graded tests\n     that must fail). A field may go on over "
              "more '//' lines.\n"
              "  2. Make the one change in the code below the blank line.\n"
              f"  3. tools/lab mutants --save {lab.number} {stem}   (writes "
              f"solutions/{lab.room}/mutants/{stem}.patch)\n"
              f"  4. tools/lab mutants {lab.number}   (proves that its tests kill it)")
        return 0
    path, problems = mutants.save(lab, stem)
    if problems:
        print(f"tools/lab mutants --save: {shown(path)}:\n  " + "\n  ".join(problems))
        return 1
    print(path.read_text(encoding="utf-8"))
    print(f"tools/lab mutants --save: wrote {shown(path)}. Now prove that its tests "
          f"kill it: tools/lab mutants {lab.number}")
    return 0


# ---- check: the instructor's self-check --------------------------------------------------------

def cmd_check(args) -> int:
    """Every starter fails every graded test as not implemented, every solution passes every
    graded test, every mutant is killed, and every chapter's table lists exactly the graded tests.
    With lab numbers, those labs only (--record then rewrites only their lines of the record)."""
    picked = pick(args.labs) if getattr(args, "labs", None) else labs()
    problems: list[str] = []
    for lab in picked:
        try:
            grading.read_table(lab)
        except grading.TableError as e:
            problems.append(str(e))
    if problems:
        print("\n".join(problems))
        return 1

    print("== the starters", flush=True)
    starter_build, options = grading.grade_build("starter")   # as tools/lab grade builds them
    with cmake.lock(starter_build, "check"):
        cmake.configure(starter_build, options)
        starters = grading.grade(picked, starter_build)
    print("== the solutions", flush=True)
    solution_build = build_dir("solution")
    with cmake.lock(solution_build, "check"):
        cmake.configure(solution_build, {"LAB_IMPL": "solution"})
        solutions = grading.grade(picked, solution_build)
    print("== the mutants", flush=True)
    found = mutants.catalogue(picked)
    with cmake.lock(build_dir("mutants"), "check"):
        mutants.run(found, mutants.configure(found))
    diagnosis.check_shown_first(found)
    mutants.print_report(found)
    if args.record:
        print(f"\n{shown(mutants.RECORD)}: {mutants.write_record(found)} mutants recorded")
        print(f"{diagnosis.STEPS}: the steps of {diagnosis.write_steps(found)} mutants")

    rows = []
    for lab, s, r in zip(picked, starters, solutions):
        mine = [m for m in found if m.lab == lab]
        not_impl = sum(t.status == "not implemented" for t in s.tests)
        passed = sum(t.status == "passed" for t in r.tests)
        killed = sum(m.killed for m in mine)
        ok_s = s.built and s.tests and not_impl == len(s.tests)
        ok_r = r.built and r.tests and passed == len(r.tests)
        ok_m = len(mine) >= 6 and killed == len(mine)
        for g, who in ((s, "starter"), (r, "solution")):
            if not g.built:
                problems.append(f"lab {lab.number} {who} does not build: {g.build_error}")
            for key in g.unlisted:
                problems.append(f"lab {lab.number}: {key} has no row in the chapter's table")
            for key in g.unrun:
                problems.append(f"lab {lab.number}: the table lists {key}, which did not run")
            for reason in set(g.skipped.values()):
                if "no CUDA device" not in reason:
                    problems.append(f"lab {lab.number} {who}: tests skipped ({reason})")
        for t in s.tests:
            if t.status != "not implemented":
                problems.append(f"starter {lab.number} {t.name}: {t.status} {t.detail}")
        for t in r.tests:
            if t.status != "passed":
                problems.append(f"solution {lab.number} {t.name}: {t.status} {t.detail}")
        if len(mine) < 6:
            problems.append(f"lab {lab.number}: {len(mine)} mutants (at least 6)")
        problems += mutants.problems(mine)
        rows.append((lab, len(r.tests), f"{not_impl}/{len(s.tests)}", ok_s,
                     f"{passed}/{len(r.tests)}", ok_r, f"{killed}/{len(mine)}", ok_m,
                     s.max_score))

    print("\n== tools/lab check")
    head = f"{'lab':<4} {'title':<44} {'graded':>6} {'points':>6}  {'starter: not impl.':<20} " \
           f"{'solution: passed':<18} {'mutants killed':<14}"
    print(head)
    print("-" * len(head))
    mark = {True: "ok", False: "FAIL"}
    for lab, n, st, ok_s, so, ok_r, mu, ok_m, pts in rows:
        print(f"{lab.number:<4} {lab.title[:44]:<44} {n:>6} {pts:>6}  {st + ' ' + mark[ok_s]:<20} "
              f"{so + ' ' + mark[ok_r]:<18} {mu + ' ' + mark[ok_m]:<14}")
    total_m = len(found)
    print(f"{'all':<4} {'':<44} {sum(r[1] for r in rows):>6} {sum(r[8] for r in rows):>6}  "
          f"{'':<20} {'':<18} {sum(m.killed for m in found)}/{total_m}")
    if problems:
        print("\nProblems:\n  " + "\n  ".join(problems))
        return 1
    print("\nEvery starter fails every graded test as not implemented, every solution passes "
          f"every graded test, and all {total_m} mutants are killed by an algorithm test.")
    return 0

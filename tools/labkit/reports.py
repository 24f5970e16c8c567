"""The reports of a grade: the terminal table (and the failure lines that watch shares),
Gradescope's results.json with its validator, and JUnit XML. What a grade is, is grading.py's job;
this file only shows and writes one. Python 3 standard library only."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from labkit.grading import (CHECKER_NOTE, Graded, LabGrade, checker_finding, complete,
                            failure_kind)
from labkit.paths import shown
from labkit.text import terminal_width, wrapped

COLUMNS = ("points", "result", "test", "where or why")


def why(t: Graded) -> str:
    """The table's last column: where a test stopped, or why it did not pass."""
    if t.status == "passed":
        return ""
    if t.status == "not implemented":
        return f"reached {t.detail}()" if t.detail else ""
    if t.status == "crashed":
        return f"signal {t.detail}" if t.detail.startswith("SIG") else t.detail
    return t.detail


def exit_line(grades: list[LabGrade]) -> str:
    """The last line of a grading run: what its exit status will be, and why."""
    if complete(grades):
        return "Exit status 0: full marks."
    return ("Exit status 1: not every graded test passes yet. That is expected while you work, "
            "not an error; it is 0 at full marks.")


def failure_lines(t: Graded, indent: int) -> list[str]:
    """Every failed assertion of a test in full: its message (the emulator's where-is-every-thread
    report included) and the configuration it failed in."""
    out = []
    for i, f in enumerate(t.failures, start=1):
        head = f"failure {i} of {len(t.failures)}" + (f" (in {'; '.join(f.trace)})" if f.trace
                                                        else "") + ":"
        out.append(wrapped(head, " " * indent, indent))
        out.append(wrapped(f.message, " " * (indent + 2), indent + 2))
    return out


def why_more(t: Graded, command: str) -> str:
    """A note after a failure's headline when its whole report is longer."""
    if not t.failures:
        return ""
    more = t.failures[0].more_lines
    extra = len(t.failures) - 1
    parts = []
    if more:
        parts.append(f"{more} more lines")
    if extra:
        parts.append(f"{extra} more failed assertion{'s' if extra > 1 else ''}")
    return f"({' and '.join(parts)}: {command})" if parts else ""


def skipped_line(g: LabGrade) -> str:
    """Why some tests did not run: a CUDA twin without a GPU is no failure, and says so."""
    gpu = [n for n, why in g.skipped.items() if "CUDA" in why or "GPU" in why]
    others = {n: why for n, why in g.skipped.items() if n not in gpu}
    parts = []
    if gpu:
        parts.append(f"{len(gpu)} CUDA twin{'s' if len(gpu) > 1 else ''} need{'' if len(gpu) > 1 else 's'} "
                     "a GPU: not run and not graded here; their emulator twins ran")
    if others:
        parts.append(f"{len(others)} tests skipped and not graded: "
                     + "; ".join(sorted(set(others.values()))))
    return "; ".join(parts)


def print_table(grades: list[LabGrade], build: Path, verbose: bool = False) -> None:
    width = terminal_width()
    for g in grades:
        lab = g.lab
        print(f"Lab {lab.number} — {lab.title}: {g.score} / {g.max_score} points")
        if not g.built:
            print(wrapped(g.build_error, "  did not build: ", 4, width))
            print(f"  ({len(g.tests)} graded tests not run)\n")
            continue
        name_width = max([len(t.name) for t in g.tests] + [len(COLUMNS[2])])
        status_width = max([len(t.status) for t in g.tests] + [15])   # a sanitizer's is longer
        column = 2 + 6 + 2 + status_width + 2 + name_width + 2   # where "where or why" starts
        under = 2 + 6 + 2 + status_width + 2                      # where the test name starts
        if column + 30 <= width:
            print(f"  {COLUMNS[0]:>6}  {COLUMNS[1]:<{status_width}}  {COLUMNS[2]:<{name_width}}  "
                  f"{COLUMNS[3]}")
        else:   # a narrow terminal: the reasons go under the rows
            print(f"  {COLUMNS[0]:>6}  {COLUMNS[1]:<{status_width}}  {COLUMNS[2]}\n"
                  f"{'':{under}}{COLUMNS[3]}")
        from labkit import diagnosis
        first, diagnosed = diagnosis.first_message(g)
        for t in g.tests:
            pts = f"{t.points}/{t.max_points}"
            row = f"  {pts:>6}  {t.status:<{status_width}}  {t.name:<{name_width}}  "
            text = why(t)
            if not verbose:
                text = " ".join(x for x in (text, why_more(t, f"tools/lab grade {lab.number} "
                                                               "--verbose")) if x)
            if not text:
                print(row.rstrip())
            elif column + 30 <= width:
                print(wrapped(text, row, column, width))
            else:   # a narrow terminal: the reason goes under the row
                print(row.rstrip())
                print(wrapped(text, " " * under, under, width))
            if t.status not in ("passed", "not implemented", "did not build") and t.hint:
                print(wrapped(t.hint, f"{'':{under}}hint: ", under + 6, width))
            if verbose and t.failures:
                print("\n".join(failure_lines(t, under)))
        if first is not None and first.status != "not implemented":
            kind = failure_kind(first.status, first.detail)
            print(wrapped(f"{first.name} ({kind}; tools/lab watch {lab.number} shows it first)",
                          "  Start with: ", 14, width))
            for line in diagnosed:
                print(wrapped(line, " " * 14, 14, width))
        if any(t.status == "failed" and checker_finding(t.detail) for t in g.tests):
            print(wrapped(CHECKER_NOTE, "  ", 2, width))
        if g.skipped:
            print(f"  ({skipped_line(g)})")
        print()
    total = sum(g.score for g in grades)
    most = sum(g.max_score for g in grades)
    print(f"Total: {total} / {most} points")
    print(wrapped(f"ctest --test-dir {shown(build)} -R <test> --output-on-failure",
                  "Full output of one test: ", 2, width))
    if len(grades) > 1:
        print("Grade one lab: tools/lab grade NN")
    from labkit import hints
    unfinished = [g for g in grades if g.built and g.score < g.max_score
                  and any(t.status not in ("not implemented", "passed") for t in g.tests)]
    if unfinished:
        print(wrapped(hints.usage_line(unfinished[0].lab), "", 0, width))
    print(wrapped(exit_line(grades), "", 0, width))


def gradescope(grades: list[LabGrade], seconds: float) -> dict:
    """Gradescope's results.json for these grades."""
    tests = []
    for g in grades:
        for i, t in enumerate(g.tests, start=1):
            lines = [t.status + (f": {t.detail}" if t.detail else "")]
            if t.status != "passed" and t.hint:
                lines.append(f"Hint: {t.hint}")
            if why_more(t, "below"):   # the whole report, when the headline leaves some out
                for n, f in enumerate(t.failures, start=1):
                    where = f" (in {'; '.join(f.trace)})" if f.trace else ""
                    lines.append(f"\nFailure {n} of {len(t.failures)}{where}:\n{f.message}")
            tests.append({
                "name": f"Lab {g.lab.number} — {t.name}",
                "number": f"{int(g.lab.number)}.{i}",
                "score": t.points,
                "max_score": t.max_points,
                "status": "passed" if t.status == "passed" else "failed",
                "output": "\n".join(lines),
                "visibility": "visible",
                "execution_time": round(t.seconds, 3),
                "tags": [f"lab{g.lab.number}", t.status],
            })
    summary = []
    for g in grades:
        line = f"Lab {g.lab.number} — {g.lab.title}: {g.score} / {g.max_score}"
        if not g.built:
            line += f" (did not build: {g.build_error})"
        if g.skipped:
            line += f" ({len(g.skipped)} GPU tests skipped: not graded here)"
        summary.append(line)
    return {
        "score": sum(g.score for g in grades),
        "max_score": sum(g.max_score for g in grades),
        "execution_time": round(seconds, 1),
        "output": "\n".join(summary),
        "visibility": "visible",
        "stdout_visibility": "visible",
        "tests": tests,
    }


def validate_gradescope(obj) -> list[str]:
    """What is wrong with `obj` as a Gradescope results.json (empty when nothing is)."""
    problems = []

    def need(where, d, key, types):
        if not isinstance(d, dict) or key not in d:
            problems.append(f"{where}: missing '{key}'")
        elif not isinstance(d[key], types) or isinstance(d[key], bool):
            problems.append(f"{where}.{key}: {type(d[key]).__name__}, expected "
                            f"{' or '.join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))}")

    number = (int, float)
    for key, types in (("score", number), ("max_score", number), ("execution_time", number),
                       ("output", str), ("visibility", str), ("tests", list)):
        need("results", obj, key, types)
    if problems:
        return problems
    names = set()
    for i, t in enumerate(obj["tests"]):
        where = f"tests[{i}]"
        for key, types in (("name", str), ("score", number), ("max_score", number),
                           ("status", str), ("output", str), ("visibility", str),
                           ("execution_time", number)):
            need(where, t, key, types)
        if not isinstance(t, dict):
            continue
        if t.get("status") not in ("passed", "failed"):
            problems.append(f"{where}.status: {t.get('status')!r}, expected 'passed' or 'failed'")
        if t.get("visibility") not in ("visible", "hidden", "after_due_date", "after_published"):
            problems.append(f"{where}.visibility: {t.get('visibility')!r}")
        if isinstance(t.get("score"), number) and isinstance(t.get("max_score"), number):
            if not 0 <= t["score"] <= t["max_score"]:
                problems.append(f"{where}: score {t['score']} outside 0..{t['max_score']}")
            if (t["score"] == t["max_score"]) != (t.get("status") == "passed"):
                problems.append(f"{where}: status {t.get('status')} with score "
                                f"{t['score']}/{t['max_score']}")
        if t.get("name") in names:
            problems.append(f"{where}: name {t.get('name')!r} is not unique")
        names.add(t.get("name"))
    if not problems:
        if abs(sum(t["score"] for t in obj["tests"]) - obj["score"]) > 1e-9:
            problems.append("results.score is not the sum of the tests' scores")
        if abs(sum(t["max_score"] for t in obj["tests"]) - obj["max_score"]) > 1e-9:
            problems.append("results.max_score is not the sum of the tests' max_score")
    return problems


def junit(grades: list[LabGrade]) -> ET.ElementTree:
    """JUnit XML: one <testsuite> per lab, one <testcase> per graded test."""
    suites = ET.Element("testsuites", name="tools/lab grade")
    for g in grades:
        failures = sum(t.status in ("failed", "not implemented") for t in g.tests)
        errors = sum(t.status in ("crashed", "timed out", "did not build") for t in g.tests)
        suite = ET.SubElement(suites, "testsuite", name=f"lab{g.lab.number}",
                              tests=str(len(g.tests) + len(g.skipped)), failures=str(failures),
                              errors=str(errors), skipped=str(len(g.skipped)),
                              time=f"{sum(t.seconds for t in g.tests):.3f}")
        ET.SubElement(ET.SubElement(suite, "properties"), "property", name="score",
                      value=f"{g.score}/{g.max_score}")
        for t in g.tests:
            suite_name, _, test_name = t.name.partition(".")
            case = ET.SubElement(suite, "testcase", classname=f"lab{g.lab.number}.{suite_name}",
                                 name=test_name, time=f"{t.seconds:.3f}")
            message = t.status + (f": {t.detail}" if t.detail else "")
            text = f"Hint: {t.hint}" if t.hint else None
            if t.status in ("failed", "not implemented"):
                ET.SubElement(case, "failure", message=message, type=t.status).text = text
            elif t.status != "passed":
                ET.SubElement(case, "error", message=message, type=t.status).text = text
        for name, reason in g.skipped.items():
            suite_name, _, test_name = name.partition(".")
            case = ET.SubElement(suite, "testcase", classname=f"lab{g.lab.number}.{suite_name}",
                                 name=test_name, time="0")
            ET.SubElement(case, "skipped", message=reason)
    ET.indent(suites)
    return ET.ElementTree(suites)

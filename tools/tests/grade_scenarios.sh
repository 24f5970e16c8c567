#!/usr/bin/env bash
# tools/lab grade against the ways a submission goes wrong, all in one copy of this tree:
#   lab 01: its reference solution saved as starter.cpp  -> full marks
#   lab 02: every function segfaults before its TODO     -> every test "crashed" (SIGSEGV)
#   lab 03: merge() spins forever                        -> its tests "timed out" (after the one
#                                                           limit, 30 s), the others "not implemented"
#   lab 04: a syntax error                               -> "did not build", for lab 04 only
#   labs 05 and later: untouched                         -> every test "not implemented"
# Then checks results.json (Gradescope's shape) and the JUnit XML say exactly that.
# Usage: tools/tests/grade_scenarios.sh [WORKDIR]   (instructor tree; needs solutions/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${1:-$(mktemp -d)}/tree"
rm -rf "$work" && mkdir -p "$work"
(cd "$root" && git ls-files --cached --others --exclude-standard -z | xargs -0 cp --parents -t "$work")
rm -rf "$work/solutions"   # grade what a student has

cp "$root/solutions/01-paged-gather/solution.cpp" "$work/labs/01-paged-gather/starter.cpp"
sed -i 's|throw NotImplemented(|{ volatile int* volatile nowhere = nullptr; *nowhere = 1; } throw NotImplemented(|' \
  "$work/labs/02-online-softmax/starter.cpp"
sed -i 's|throw NotImplemented("merge")|for (volatile bool spin = true; spin;) {} throw NotImplemented("merge")|' \
  "$work/labs/03-flash-decoding/starter.cpp"
sed -i '0,/^namespace /s//int planted_syntax_error = ;\nnamespace /' "$work/labs/04-varlen-batch/starter.cpp"

(cd "$work" && tools/lab grade --json "$work/r.json" --junit "$work/r.xml" | tee "$work/grade.txt") || true
python3 - "$work" "$root" <<'PY'
import json, sys, xml.etree.ElementTree as ET
work, root = sys.argv[1], sys.argv[2]
sys.path.insert(0, root + "/tools")
from labkit import reports
report = json.load(open(f"{work}/r.json"))
problems = reports.validate_gradescope(report)
expected = {"01": {"passed"}, "02": {"crashed"}, "03": {"timed out", "not implemented"},
            "04": {"did not build"}}
seen = {}
for t in report["tests"]:
    lab = t["name"].split(" ")[1]
    expected.setdefault(lab, {"not implemented"})  # every lab this script leaves untouched
    status = t["output"].splitlines()[0].split(":")[0]
    seen.setdefault(lab, set()).add(status)
    if status not in expected[lab]:
        problems.append(f"{t['name']}: {status}, expected {' or '.join(sorted(expected[lab]))}")
    if lab == "02" and "SIGSEGV" not in t["output"]:
        problems.append(f"{t['name']}: the crash does not name SIGSEGV")
    if lab == "04" and "error" not in t["output"]:
        problems.append(f"{t['name']}: no compiler error quoted")
for lab in expected:
    if lab not in seen:
        problems.append(f"lab {lab}: no tests in results.json")
if "timed out" not in seen.get("03", set()):
    problems.append("lab 03: no test timed out")
scores = {}
for t in report["tests"]:
    lab = t["name"].split(" ")[1]
    s, m = scores.get(lab, (0, 0))
    scores[lab] = (s + t["score"], m + t["max_score"])
if scores.get("01", (0, 1))[0] != scores.get("01", (0, 1))[1]:
    problems.append(f"lab 01 scored {scores.get('01')}")
suites = {s.get("name"): s for s in ET.parse(f"{work}/r.xml").getroot().iter("testsuite")}
if int(suites["lab04"].get("errors")) == 0 or int(suites["lab01"].get("failures")) != 0:
    problems.append("the JUnit XML does not match the results")
text = open(f"{work}/grade.txt").read()
for needle in ("did not build", "crashed", "timed out", "not implemented", "hint:"):
    if needle not in text:
        problems.append(f"the table never says '{needle}'")
print("\n".join(f"lab {lab}: {s} / {m} ({', '.join(sorted(seen[lab]))})" for lab, (s, m) in sorted(scores.items())))
if problems:
    print("grade scenarios FAILED:\n  " + "\n  ".join(problems[:30]))
    sys.exit(1)
print("grade scenarios: passed (full marks, crashed, timed out, did not build, not implemented)")
PY

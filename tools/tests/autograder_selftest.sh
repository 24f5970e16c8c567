#!/usr/bin/env bash
# The Gradescope bundle, tried on this machine: tools/lab autograder writes it, a fake
# /autograder folder gets its zip unpacked into source/ and a fake submission (lab 01's reference
# solution as its starter.cpp, lab 02's starter untouched, nothing for the other labs), then
# setup.sh and run_autograder run as Gradescope would run them. results.json must be valid, give
# lab 01 full marks and every other lab zero.
# Usage: tools/tests/autograder_selftest.sh [WORKDIR]   (instructor tree; needs solutions/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${1:-$(mktemp -d)}"
rm -rf "$work/bundle" "$work/ag"
"$root/tools/lab" autograder "$work/bundle"
mkdir -p "$work/ag/source" "$work/ag/submission/my-work/labs/01-paged-gather" \
         "$work/ag/submission/my-work/labs/02-online-softmax"
python3 -m zipfile -e "$work/bundle/autograder.zip" "$work/ag/source"
chmod +x "$work/ag/source/setup.sh" "$work/ag/source/run_autograder"
cp "$root/solutions/01-paged-gather/solution.cpp" "$work/ag/submission/my-work/labs/01-paged-gather/starter.cpp"
cp "$root/labs/02-online-softmax/starter.cpp" "$work/ag/submission/my-work/labs/02-online-softmax/starter.cpp"
if [ "$(id -u)" -eq 0 ]; then bash "$work/ag/source/setup.sh"; fi
AUTOGRADER_ROOT="$work/ag" bash "$work/ag/source/run_autograder" > "$work/ag/log.txt" 2>&1 || true
python3 - "$work/ag/results/results.json" "$root" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2] + "/tools")
from labkit import reports
report = json.load(open(sys.argv[1]))
problems = reports.validate_gradescope(report)
by_lab = {}
for t in report["tests"]:
    lab = t["name"].split(" ")[1]
    s, m = by_lab.get(lab, (0, 0))
    by_lab[lab] = (s + t["score"], m + t["max_score"])
for lab, (s, m) in sorted(by_lab.items()):
    print(f"lab {lab}: {s} / {m}")
    if lab == "01" and (s != m or m == 0):
        problems.append(f"lab 01 (the submitted solution) scored {s} / {m}")
    if lab != "01" and s != 0:
        problems.append(f"lab {lab} scored {s}, expected 0")
if "lab 01: graded my-work/labs/01-paged-gather/starter.cpp" not in report["output"]:
    problems.append("results.json's output does not say which file was graded for lab 01")
if problems:
    print("autograder self-test FAILED:\n  " + "\n  ".join(problems))
    sys.exit(1)
print(f"autograder self-test: results.json valid, {report['score']} / {report['max_score']}, "
      "lab 01 full marks, the others zero")
PY

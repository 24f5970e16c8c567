#!/usr/bin/env bash
# tools/lab watch, driven in tmux the way a student uses it: start `tools/lab watch 01` in a copy
# of this tree, wait for the first screen (score 0), save lab 01's reference solution over its
# starter.cpp, wait for the screen to change to full marks; then save once more (a comment), and
# while the screen says "building…" save a bug (one of lab 01's mutants): the screen must end on
# that bug's score, never on the full marks of the code compiled before the save. Then Ctrl-C,
# and watch must say goodbye and exit 0. Prints the screens it saw. Needs tmux (instructor tree).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${1:-$(mktemp -d)}/tree"
session="lab-watch-$$"
rm -rf "$work" && mkdir -p "$work"
(cd "$root" && git ls-files --cached --others --exclude-standard -z | xargs -0 cp --parents -t "$work")

screen() { tmux capture-pane -p -t "$session"; }
wait_for() {  # wait_for <regex> <seconds>; looks 5 times a second: a rebuild after a comment
  # can show "building…" for under a second (ccache), and a look once a second missed it.
  for _ in $(seq 1 "$(($2 * 5))"); do
    if grep -Eq "$1" <<<"$(screen)"; then return 0; fi
    sleep 0.2
  done
  echo "watch test: no '$1' on the screen after $2 s; the screen was:"; screen; return 1
}
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT

tmux new-session -d -s "$session" -x 130 -y 40 \
  "cd '$work' && tools/lab watch 01; echo \"watch exited with status \$?\"; sleep 60"
wait_for "Score: 0 / [0-9]+" 600
echo "---- first screen ----"; screen | sed '/^$/N;/^\n$/D'
grep -q "hint:" <(screen) || { echo "watch test: the first screen shows no hint"; exit 1; }

cp "$root/solutions/01-paged-gather/solution.cpp" "$work/labs/01-paged-gather/starter.cpp"
wait_for "Lab done" 300
echo "---- after saving starter.cpp ----"; screen | sed '/^$/N;/^\n$/D'
screen | grep -Eq "Score: ([0-9]+) / \1 " || { echo "watch test: not full marks"; exit 1; }

# A save while the lab builds: the bug saved during the compile of the comment is what is graded.
starter="$work/labs/01-paged-gather/starter.cpp"
python3 - "$root" "$work/bug.cpp" <<'PY'
import sys
sys.path.insert(0, sys.argv[1] + "/tools")
from labkit import labs, mutants
lab = labs.pick(["01"])[0]
bug = next(m for m in mutants.catalogue([lab]) if m.source)
open(sys.argv[2], "w").write(bug.source)
print(f"the bug to save during the build: mutant {bug.stem} ({bug.bug})")
PY
echo "// a comment" >> "$starter"
wait_for "building… [0-9]+ s" 120
echo "---- while it builds (the comment) ----"; screen | sed '/^$/N;/^\n$/D'
cp "$work/bug.cpp" "$starter"
wait_for "First test to fix" 300
sleep 3   # a regrade, if one is due, starts within a second
wait_for "First test to fix" 300
echo "---- after saving the bug during the build ----"; screen | sed '/^$/N;/^\n$/D'
if grep -Eq "Score: ([0-9]+) / \1 |Lab done" <<<"$(screen)"; then
  echo "watch test: the bug saved during the build was not graded"; exit 1
fi

tmux send-keys -t "$session" C-c
wait_for "watch exited with status 0" 30
grep -q "tools/lab watch: stopped." <<<"$(screen)" || { echo "watch test: no goodbye line"; exit 1; }
echo "---- after Ctrl-C ----"; screen | grep -E "stopped|exited"
echo "watch test: passed (screen changed on save, a save during a build graded, Ctrl-C exits 0)"

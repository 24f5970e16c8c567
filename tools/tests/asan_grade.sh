#!/usr/bin/env bash
# tools/lab grade --asan on a bug that no graded test can see: lab 04's reference solution, in a
# student's copy of this tree, changed to gather every block of a sequence's padded block-table
# row (the -1 padding included) and then keep only the rows it needs. The answer is right, so
# `tools/lab grade 04` gives full marks: Eigen does not check the row index -1 * block_size + t.
# `tools/lab grade --asan 04` must show the read as a sanitizer status at that line of starter.cpp.
# Usage: tools/tests/asan_grade.sh [WORKDIR]   (instructor tree; needs solutions/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${1:-$(mktemp -d)}/tree"
rm -rf "$work" && mkdir -p "$work"
(cd "$root" && git ls-files --cached --others --exclude-standard -z | xargs -0 cp --parents -t "$work")
rm -rf "$work/solutions"   # grade what a student has
starter="$work/labs/04-varlen-batch/starter.cpp"

python3 - "$root/solutions/04-varlen-batch/solution.cpp" "$starter" <<'PY'
import sys
text = open(sys.argv[1]).read()
read = "    const Mat keys = k_pool(slots, Eigen::all);"
assert text.count(read) == 1, "the solution's gather of the keys moved: update this script"
planted = ("    const Eigen::Index padded = table.size() * meta.block_size;  // the whole padded row\n"
           "    const IVec every = IVec::LinSpaced(padded, 0, int(padded) - 1);\n"
           "    const Mat gathered = k_pool(slots_of(table, every, meta.block_size), Eigen::all);"
           "  // reads block -1\n"
           "    const Mat keys = gathered.topRows(kv_len);\n")
assert text.count(read + "    // [kv_len, num_kv_heads * head_dim]\n") == 1
text = text.replace(read + "    // [kv_len, num_kv_heads * head_dim]\n", planted)
open(sys.argv[2], "w").write(text)
line = next(i for i, l in enumerate(text.splitlines(), 1) if "reads block -1" in l)
open(sys.argv[2] + ".line", "w").write(str(line))
PY
line="$(cat "$starter.line")" && rm "$starter.line"

echo "== tools/lab grade 04: the wrong read goes unnoticed"
(cd "$work" && tools/lab grade 04 > "$work/plain.txt") || true
tail -4 "$work/plain.txt"
grep -Eq "^Lab 04 .*: ([0-9]+) / \1 points" "$work/plain.txt" \
  || { echo "asan test: the planted read already fails a graded test"; cat "$work/plain.txt"; exit 1; }

echo "== tools/lab grade --asan 04: a sanitizer status for the read, at starter.cpp:$line"
(cd "$work" && tools/lab grade --asan 04 > "$work/asan.txt") || true
awk '/^Lab 04/ { on = 1 } on && shown++ < 30' "$work/asan.txt"   # no pipe: no SIGPIPE
# Block -1 lies one block before the pool: in the allocator's red zone ("read outside a buffer")
# or, when the pool is a mapping of its own with nothing mapped before it, on no page at all
# ("read an invalid address", a SEGV). Which one depends on the machine's memory map; both are the
# sanitizer's report of the same read at the same line.
grep -Eq "read (outside a buffer|an invalid address)" "$work/asan.txt" \
  || { echo "asan test: no sanitizer status for the read"; cat "$work/asan.txt"; exit 1; }
grep -q "labs/04-varlen-batch/starter.cpp:$line in attn_paged" "$work/asan.txt" \
  || { echo "asan test: the report does not name starter.cpp:$line"; exit 1; }
echo "asan test: passed (full marks without the sanitizers, the student's line under --asan)"

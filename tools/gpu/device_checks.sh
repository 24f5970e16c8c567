#!/usr/bin/env bash
# The GPU checks of labs 05-07 in one call, for a machine with an NVIDIA GPU, nvcc, CMake, ninja,
# compute-sanitizer and ncu but none of the project's Debian packages. Prepare the packages first,
# where apt works (../shared/tools/gpu-pack writes them to .gpu/debs), carry .gpu/ to the GPU
# machine, and run from the project's root:
#
#   bash tools/gpu/device_checks.sh            # everything below, about 9 minutes on an H100
#   STEPS="twins bench" bash tools/gpu/device_checks.sh
#
# Steps (STEPS, in this order): build (labs 05-07 and their benchmarks only, solution, sm_90),
# twins (the CUDA twins of every test), x50 (lab 07's twins 50 times: the fused merge under real
# concurrency), bench (lab05_bench lab06_bench lab07_bench, GPU series), sdpa (PyTorch's
# FlashAttention over contiguous caches, labs/07-cuda-gqa-decode/bench/sdpa_contiguous.py),
# sanitize (memcheck, racecheck, synccheck on the twins of labs 06 and 07), ncu (one launch of
# lab 07's kernel at 64 x 4,096). Each step has its own time limit, so a slow one cannot take the
# others' time. Output: $OUT (or /tmp/out): log.txt, the benchmarks' JSON, sdpa.jsonl, ncu07.txt,
# and logs.tgz with every step's full log: at most 8 files, which is what a device call returns.
# The 2026-11-26 run of these steps (then a script in .gpu/) is in docs/measurements.md.
set -uo pipefail
OUT=${OUT:-/tmp/out}
STEPS=${STEPS:-build twins x50 bench sdpa sanitize ncu}
B=${BUILD_DIR:-/tmp/b}
mkdir -p "$OUT/logs"
exec > >(tee -a "$OUT/log.txt") 2>&1
want() { [[ " $STEPS " == *" $1 "* ]]; }

mkdir -p /tmp/deps && for d in .gpu/debs/*.deb; do dpkg -x "$d" /tmp/deps; done
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
SECONDS=0

if want build; then
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAB_IMPL=solution \
    -DCMAKE_PREFIX_PATH=/tmp/deps/usr -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/logs/configure.log" 2>&1 ||
    tail -n 30 "$OUT/logs/configure.log"
  cmake --build "$B" -j "$(nproc)" --target lab05 lab06 lab07 lab05_bench lab06_bench lab07_bench \
    >"$OUT/logs/build.log" 2>&1 || grep -m 20 -A6 -i error "$OUT/logs/build.log"
  echo "== build: ${SECONDS}s"
fi
if want twins; then
  for t in lab05 lab06 lab07; do
    timeout 120 "$B/$t" --gtest_filter='*Cuda*' --gtest_brief=1 >"$OUT/logs/$t.twins.log" 2>&1
    echo "== twins $t: rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/logs/$t.twins.log" | tr '\n' ' ')"
  done
fi
if want x50; then
  timeout 90 "$B/lab07" --gtest_filter='*Cuda*:-*LongContexts*' --gtest_repeat=50 --gtest_brief=1 \
    >"$OUT/logs/lab07.x50.log" 2>&1
  echo "== x50: rc=$? failures: $(grep -c 'FAILED TEST' "$OUT/logs/lab07.x50.log")"
fi
if want bench; then
  # The programs build 0.5-1 GiB batches on the host per kernel: about 1.5 to 3 minutes each.
  for t in lab05_bench lab06_bench lab07_bench; do
    timeout 240 "$B/$t" --benchmark_filter=Gpu --benchmark_out="$OUT/$t.json" \
      >"$OUT/logs/$t.log" 2>&1
    echo "== $t: rc=$? ${SECONDS}s"
    grep -E '^BM_|ERROR' "$OUT/logs/$t.log" | cut -c1-150
  done
fi
if want sdpa; then
  timeout 120 python3 labs/07-cuda-gqa-decode/bench/sdpa_contiguous.py >"$OUT/sdpa.jsonl" \
    2>"$OUT/logs/sdpa.err"
  echo "== sdpa: rc=$?"; cat "$OUT/sdpa.jsonl"
fi
if want sanitize; then
  for t in lab06 lab07; do
    for tool in memcheck racecheck synccheck; do
      timeout 60 compute-sanitizer --tool "$tool" --error-exitcode 9 "$B/$t" \
        --gtest_filter='*Cuda*:-*LongContexts*' --gtest_brief=1 >"$OUT/logs/$tool.$t.log" 2>&1
      echo "== $tool $t: rc=$? $(grep -E 'SUMMARY' "$OUT/logs/$tool.$t.log" | tr '\n' ' ')"
    done
  done
fi
if want ncu; then
  timeout 100 ncu --kernel-name regex:gqa --launch-skip 2 --launch-count 1 --section SpeedOfLight \
    --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats \
    "$B/lab07_bench" --benchmark_filter='BM_GpuGqaDecode/seqs:64/tokens:4096' \
    --benchmark_min_time=0.01 >"$OUT/ncu07.txt" 2>&1
  echo "== ncu: rc=$?"; grep -E 'DRAM Throughput|Theoretical Occ|Block Limit Shared' "$OUT/ncu07.txt"
fi
echo "== done: ${SECONDS}s"
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"

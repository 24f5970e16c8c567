// Lab 05 — benchmarks: what the emulator costs, and on a GPU how close the v1 kernel's reads
// come to the device's read roofline.
//
//   tools/lab bench 05     (or: cmake --preset starter && cmake --build --preset starter
//                           --target lab05_bench && build/starter/lab05_bench)
//
// Built from the file LAB_IMPL picks, so it times your kernel under the starter preset; a
// benchmark whose kernel is still a skeleton skips with "not implemented yet: ...", and one
// whose output disagrees with the float64 reference skips with "wrong answer: ...".
//
// Emulator (every build):
//   BM_EmulatorBarrierRound       one __syncthreads round of a 128-thread block (counter
//   BM_BaselineNoBarrierRound     `round`), against the same kernel and launch without it;
//   BM_EmulatorLaunchPerSequence  the v1 kernel on 1 to 64 one-block sequences (`per_seq`).
// GPU (a build with the CUDA backend on a machine with a device; otherwise one line on stderr
// says they were not registered), float16, head size 128, block size 16:
//   BM_GpuPagedAttentionV1        the kernel, bytes of K and V it must read per second, and
//                                 `roofline_pct`: the same-run read roofline's time over its own
//                                 (above 100 % fails); its answer checked before and after;
//   BM_GpuReadRoofline            the yardstick: a read-only kernel over the same bytes;
//   BM_GpuCopyD2D                 cudaMemcpy device to device of the same bytes.
// Every GPU series is timed alike: CUDA events around the kernels alone (queued without a host
// round trip; the skeleton flag is read before and after timing), the L2 cache flushed before
// each (outside the span), after a warm-up.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "paged_attention_v1.hpp"
#include "pa/bench.hpp"
#include "pa/bench_batches.hpp"
#include "pa/testing.hpp"
#include "simt/cuda.hpp"  // the emulator's CUDA dialect, for the barrier kernels below

namespace pa::cuda_v1 {
namespace {

// ---- The emulator's barrier ---------------------------------------------------------------

constexpr int kBlockThreads = 128;  // the v1 kernel's block
constexpr int kRounds = 1000;       // rounds per launch: enough to hide the launch's own cost

// One round: every thread folds the round number into its value, then (with the barrier)
// waits for the whole block. DoNotOptimize keeps the work a compiler cannot fold away.
__global__ void barrier_rounds_kernel(int rounds, int* sink) {
  int acc = 0;
  for (int r = 0; r < rounds; ++r) {
    acc += r ^ static_cast<int>(threadIdx.x);
    benchmark::DoNotOptimize(acc);
    __syncthreads();
  }
  if (threadIdx.x == 0) *sink = acc;
}

// The same work and launch without the barrier: each thread runs its loop to the end at once.
__global__ void no_barrier_rounds_kernel(int rounds, int* sink) {
  int acc = 0;
  for (int r = 0; r < rounds; ++r) {
    acc += r ^ static_cast<int>(threadIdx.x);
    benchmark::DoNotOptimize(acc);
  }
  if (threadIdx.x == 0) *sink = acc;
}

/// A counter of `items` per iteration that reads as seconds per item.
benchmark::Counter seconds_per_item(double items) {
  return benchmark::Counter(
      items, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// Reports `round`, the seconds per round: iterations x kRounds rounds, inverted.
void report_rounds(benchmark::State& state) {
  state.counters["round"] = seconds_per_item(kRounds);
}

void BM_EmulatorBarrierRound(benchmark::State& state) {
  simt::DeviceBuffer<int> sink(1);  // [1]
  for (auto _ : state) {
    simt::launch(barrier_rounds_kernel, dim3(1), dim3(kBlockThreads), 0, kRounds, sink.data());
  }
  report_rounds(state);
}
BENCHMARK(BM_EmulatorBarrierRound)->Unit(benchmark::kMicrosecond);

void BM_BaselineNoBarrierRound(benchmark::State& state) {
  simt::DeviceBuffer<int> sink(1);  // [1]
  for (auto _ : state) {
    simt::launch(no_barrier_rounds_kernel, dim3(1), dim3(kBlockThreads), 0, kRounds, sink.data());
  }
  report_rounds(state);
}
BENCHMARK(BM_BaselineNoBarrierRound)->Unit(benchmark::kMicrosecond);

// ---- A decode batch in the lab's layouts (pa/bench_batches.hpp) ----------------------------

constexpr DType kDType = DType::kFloat16;
constexpr int kHeadSize = 128;
constexpr int kBlockSize = 16;

using pa::testing::BatchShape;
using pa::testing::BenchBatch;

/// A batch in a device session, checked against the reference and warmed up: built once per
/// (backend, shape) and kept while that shape's benchmarks run, because Google Benchmark calls
/// a benchmark function several times while it settles the iteration count, and a GPU shape
/// holds about 1 GiB of cache.
struct Prepared {
  Backend backend = Backend::kEmulator;
  BatchShape shape;
  BenchBatch batch;
  std::unique_ptr<DeviceSession> session;
  std::string error;  // why the benchmarks of this shape skip; empty when the check passed

  /// Downloads the session's output and checks it ("" when right).
  std::string check() const {
    Tensor out(kDType, {shape.num_seqs, shape.num_heads, kHeadSize});
    session->download(out);
    return pa::testing::check_bench_output(batch, out);
  }
};

Prepared& prepare(Backend backend, const BatchShape& shape) {
  static std::unique_ptr<Prepared> current;  // one shape at a time
  if (current && current->backend == backend && current->shape == shape) return *current;
  current.reset();  // the previous shape's device memory goes first
  auto p = std::make_unique<Prepared>();
  p->backend = backend;
  p->shape = shape;
  try {
    p->batch = pa::testing::make_bench_batch(shape, pa::testing::KvLayout::kV0, kDType, kHeadSize,
                                             kBlockSize,
                                             5000 + static_cast<std::uint64_t>(shape.num_seqs));
    const BenchBatch& b = p->batch;
    p->session = std::make_unique<DeviceSession>(backend, b.query, b.key_cache, b.value_cache,
                                                 shape.num_kv_heads, b.scale(), b.block_tables,
                                                 b.seq_lens, kBlockSize, shape.seq_len);
    p->session->launch();  // also the warm-up
    p->error = p->check();
  } catch (const std::exception& e) {
    p->error = e.what();  // the starter: "not implemented yet: paged_attention_v1_kernel ..."
    p->session.reset();
  }
  current = std::move(p);
  return *current;
}

/// The counters every attention benchmark reports, and the bytes of K and V it read.
void report_batch(benchmark::State& state, const Prepared& p) {
  state.counters["seqs"] = p.shape.num_seqs;
  state.counters["heads"] = p.shape.num_heads;
  state.counters["kv_heads"] = p.shape.num_kv_heads;
  pa::bench::report(state, p.shape.seq_len, p.batch.kv_bytes());
}

// ---- The emulator's launch, per sequence --------------------------------------------------

// seqs one-block sequences (16 tokens), one head: seqs thread blocks of 128 fibers each, so
// `per_seq` is what one more sequence adds to a launch on the emulator.
void BM_EmulatorLaunchPerSequence(benchmark::State& state) {
  const BatchShape shape{static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), 1, 1};
  Prepared& p = prepare(Backend::kEmulator, shape);
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  for (auto _ : state) p.session->launch();
  report_batch(state, p);
  state.counters["per_seq"] = seconds_per_item(shape.num_seqs);
}
BENCHMARK(BM_EmulatorLaunchPerSequence)
    ->ArgNames({"seqs", "tokens"})
    ->Args({1, kBlockSize})
    ->Args({4, kBlockSize})
    ->Args({16, kBlockSize})
    ->Args({64, kBlockSize})
    ->Unit(benchmark::kMicrosecond);

// ---- The GPU: the kernel against the read roofline over the same bytes ---------------------

BatchShape gpu_shape(const benchmark::State& state) {
  return {static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
          static_cast<int>(state.range(2)), static_cast<int>(state.range(3))};
}

/// The v1 kernel, timed against the same-run read roofline (roofline_pct), checked before and
/// after timing.
void BM_GpuPagedAttentionV1(benchmark::State& state) {
  Prepared& p = prepare(Backend::kCuda, gpu_shape(state));
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  benchmark::DoNotOptimize(p.session->timed_launch());  // warm-up: also allocates the flush
  pa::bench::time_against_roofline(
      state, [&] { return p.session->timed_launch(); },
      [&] { return p.session->timed_read_roofline(); }, [&] { return p.check(); });
  report_batch(state, p);
}

/// The yardstick alone: a read-only kernel over the K and V bytes (the plot's roofline).
void BM_GpuReadRoofline(benchmark::State& state) {
  Prepared& p = prepare(Backend::kCuda, gpu_shape(state));
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  benchmark::DoNotOptimize(p.session->timed_read_roofline());
  for (auto _ : state) state.SetIterationTime(p.session->timed_read_roofline());
  report_batch(state, p);
}

/// A second yardstick: cudaMemcpy device to device of the same bytes (counted as read).
void BM_GpuCopyD2D(benchmark::State& state) {
  Prepared& p = prepare(Backend::kCuda, gpu_shape(state));
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  benchmark::DoNotOptimize(p.session->timed_cache_copy());  // warm-up: allocates the target
  for (auto _ : state) state.SetIterationTime(p.session->timed_cache_copy());
  report_batch(state, p);
}

/// Registers the GPU series when this build has the CUDA backend and a device is present.
void register_gpu_benchmarks() {
  // {seqs, tokens, heads, kv_heads}: multi-head with long and with shorter contexts, and
  // grouped-query attention (8 query heads per kv head).
  const std::vector<std::vector<std::int64_t>> shapes = {
      {16, 4096, 32, 32}, {64, 1024, 32, 32}, {64, 4096, 32, 4}};
  pa::bench::register_gpu_batches(cuda_device_present(), shapes,
                                  {{"BM_GpuPagedAttentionV1", &BM_GpuPagedAttentionV1},
                                   {"BM_GpuReadRoofline", &BM_GpuReadRoofline},
                                   {"BM_GpuCopyD2D", &BM_GpuCopyD2D}});
}

}  // namespace
}  // namespace pa::cuda_v1

int main(int argc, char** argv) {
  return pa::bench::main_with_gpu_series(argc, argv,
                                         [] { pa::cuda_v1::register_gpu_benchmarks(); });
}

// Lab 05 — benchmarks: what the emulator costs, and on a GPU how close the v1 kernel's reads
// come to the device's copy bandwidth.
//
//   cmake --preset solution && cmake --build --preset solution --target lab05_bench
//   build/solution/lab05_bench --benchmark_min_time=0.2
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
//   BM_GpuPagedAttentionV1        the kernel, bytes of K and V it must read per second;
//   BM_GpuCopyD2D                 cudaMemcpy device to device of the same bytes.
// Both GPU series are timed alike: CUDA events around one call, the L2 cache flushed before
// each (outside the span), after a warm-up; both spans end with the cudaDeviceSynchronize that
// every launch of this lab makes, a few microseconds on spans of 100 us and more.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "paged_attention_v1.hpp"
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

// ---- A decode batch in the lab's layouts --------------------------------------------------

constexpr DType kDType = DType::kFloat16;
constexpr int kHeadSize = 128;
constexpr int kBlockSize = 16;
constexpr int kX = 16 / 2;  // key_cache's innermost extent for 2-byte elements

/// One decode batch: num_seqs sequences of seq_len tokens each, num_heads query heads over
/// num_kv_heads kv heads.
struct BatchShape {
  int num_seqs = 0;
  int seq_len = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  bool operator==(const BatchShape&) const = default;
};

/// Returns the bytes of K and V the kernel must read: per sequence seq_len x num_kv_heads x
/// head_size elements of 2 bytes, once for K and once for V.
std::int64_t kv_bytes(const BatchShape& s) {
  return std::int64_t{s.num_seqs} * s.seq_len * s.num_kv_heads * kHeadSize * 2 * 2;
}

/// The batch's operands. Every sequence owns whole blocks (seq_len is a multiple of the block
/// size), dealt from a shuffled order, and the caches hold no other block: their bytes are
/// exactly the K and V bytes the kernel reads.
struct Batch {
  BatchShape shape;
  Mat q;                // [num_seqs * num_heads, head_size], the float16 values stored
  Tensor query;         // [num_seqs, num_heads, head_size]
  Tensor key_cache;     // [num_blocks, num_kv_heads, head_size / x, block_size, x]
  Tensor value_cache;   // [num_blocks, num_kv_heads, head_size, block_size]
  Tensor block_tables;  // [num_seqs, blocks_per_seq] int32
  Tensor seq_lens;      // [num_seqs] int32
};

/// A fast, seeded stream of uniforms in [-1, 1): a GPU shape holds half a billion cache
/// elements, too many for pa::testing::Rng's normal draws.
class FastUniform {
 public:
  explicit FastUniform(std::uint64_t seed) : state_(seed) {}
  float next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) * 0x1p-23f - 1.0f;  // 24 random bits over [0, 2), less 1
  }

 private:
  std::uint64_t state_;
};

/// Flat index of key_cache[block, head, d / x, row, d % x].
std::int64_t key_index(const BatchShape& s, std::int64_t block, int head, int row, int d) {
  return (((block * s.num_kv_heads + head) * (kHeadSize / kX) + d / kX) * kBlockSize + row) * kX +
         d % kX;
}

/// Flat index of value_cache[block, head, d, row].
std::int64_t value_index(const BatchShape& s, std::int64_t block, int head, int row, int d) {
  return ((block * s.num_kv_heads + head) * kHeadSize + d) * kBlockSize + row;
}

Batch make_batch(const BatchShape& shape, std::uint64_t seed) {
  Batch b;
  b.shape = shape;
  const int blocks_per_seq = shape.seq_len / kBlockSize;
  const int num_blocks = shape.num_seqs * blocks_per_seq;
  pa::testing::Rng rng(seed);
  // q ~ N(0, 4^2) against keys uniform in [-1, 1]: logits with a spread of ~2.3, so the
  // softmax is peaked and a kernel that averages V would fail the check.
  b.q = rng.normal(shape.num_seqs * shape.num_heads, kHeadSize, 4.0);
  b.query = Tensor(kDType, {shape.num_seqs, shape.num_heads, kHeadSize});
  for (Eigen::Index i = 0; i < b.q.size(); ++i) {
    const Eigen::half h(static_cast<float>(b.q.data()[i]));
    b.query.data_as<Eigen::half>()[i] = h;
    b.q.data()[i] = static_cast<float>(h);  // the reference sees what the kernel sees
  }
  b.key_cache = Tensor(kDType, {num_blocks, shape.num_kv_heads, kHeadSize / kX, kBlockSize, kX});
  b.value_cache = Tensor(kDType, {num_blocks, shape.num_kv_heads, kHeadSize, kBlockSize});
  FastUniform uniform(seed ^ 0x5EEDull);
  for (Tensor* cache : {&b.key_cache, &b.value_cache}) {
    Eigen::half* data = cache->data_as<Eigen::half>();
    for (std::int64_t i = 0; i < cache->numel(); ++i) data[i] = Eigen::half(uniform.next());
  }
  const IVec order = rng.permutation(num_blocks);
  b.block_tables = Tensor(DType::kInt32, {shape.num_seqs, blocks_per_seq});
  std::copy(order.begin(), order.end(), b.block_tables.data_as<std::int32_t>());
  b.seq_lens = Tensor(DType::kInt32, {shape.num_seqs});
  std::fill_n(b.seq_lens.data_as<std::int32_t>(), shape.num_seqs, shape.seq_len);
  return b;
}

/// The float64 truth for query head h of sequence s, from the float16 values the caches hold:
/// pa::testing::reference_attention over the sequence's tokens read through its block table.
Vec reference_row(const Batch& b, int s, int h) {
  const BatchShape& shape = b.shape;
  const int kv_head = h / (shape.num_heads / shape.num_kv_heads);
  const std::int32_t* table = b.block_tables.data_as<std::int32_t>() +
                              std::int64_t{s} * (shape.seq_len / kBlockSize);  // [blocks_per_seq]
  const Eigen::half* keys = b.key_cache.data_as<Eigen::half>();
  const Eigen::half* values = b.value_cache.data_as<Eigen::half>();
  Mat k(shape.seq_len, kHeadSize), v(shape.seq_len, kHeadSize);  // [seq_len, head_size] each
  for (int t = 0; t < shape.seq_len; ++t) {
    const std::int64_t block = table[t / kBlockSize];
    for (int d = 0; d < kHeadSize; ++d) {
      k(t, d) = static_cast<float>(keys[key_index(shape, block, kv_head, t % kBlockSize, d)]);
      v(t, d) = static_cast<float>(values[value_index(shape, block, kv_head, t % kBlockSize, d)]);
    }
  }
  return pa::testing::reference_attention(b.q.row(s * shape.num_heads + h).transpose(), k, v);
}

/// Returns "" when `out` ([num_seqs, num_heads, head_size]) is finite everywhere and matches
/// the reference on the given (sequence, head) pairs, else "wrong answer: ..." saying where.
std::string check_output(const Batch& b, const Tensor& out,
                         const std::vector<std::pair<int, int>>& pairs) {
  const Eigen::half* o = out.data_as<Eigen::half>();
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    if (!std::isfinite(static_cast<float>(o[i]))) {
      return "wrong answer: out element " + std::to_string(i) + " is not finite";
    }
  }
  // float16 output, as the tests' tolerance(): rounding costs up to 2^-11 relative, and 1e-3 is
  // two such half-ulps; atol covers outputs near 0.
  constexpr double kAtol = 1e-4, kRtol = 1e-3;
  for (const auto& [s, h] : pairs) {
    Vec got(kHeadSize);  // [head_size]
    const std::int64_t row = (std::int64_t{s} * b.shape.num_heads + h) * kHeadSize;
    for (int d = 0; d < kHeadSize; ++d) got[d] = static_cast<float>(o[row + d]);
    const ::testing::AssertionResult close =
        pa::testing::AllClose(reference_row(b, s, h), got, kAtol, kRtol);
    if (!close) {
      return "wrong answer: sequence " + std::to_string(s) + " head " + std::to_string(h) + ": " +
             close.message();
    }
  }
  return "";
}

/// A batch in a device session, checked against the reference and warmed up: built once per
/// (backend, shape) and kept while that shape's benchmarks run, because Google Benchmark calls
/// a benchmark function several times while it settles the iteration count, and a GPU shape
/// holds about 1 GiB of cache.
struct Prepared {
  Backend backend = Backend::kEmulator;
  BatchShape shape;
  std::unique_ptr<V1DeviceSession> session;
  std::string error;  // why the benchmarks of this shape skip; empty when the check passed
};

Prepared& prepare(Backend backend, const BatchShape& shape) {
  static std::unique_ptr<Prepared> current;  // one shape at a time
  if (current && current->backend == backend && current->shape == shape) return *current;
  current.reset();  // the previous shape's device memory goes first
  auto p = std::make_unique<Prepared>();
  p->backend = backend;
  p->shape = shape;
  try {
    const Batch batch = make_batch(shape, 5000 + static_cast<std::uint64_t>(shape.num_seqs));
    p->session = std::make_unique<V1DeviceSession>(
        backend, batch.query, batch.key_cache, batch.value_cache, shape.num_kv_heads,
        static_cast<float>(1.0 / std::sqrt(double{kHeadSize})), batch.block_tables,
        batch.seq_lens, kBlockSize, shape.seq_len);
    p->session->launch();  // also the warm-up
    Tensor out(kDType, {shape.num_seqs, shape.num_heads, kHeadSize});
    p->session->download(out);
    // Small batches: every (sequence, head). GPU shapes: the corners and the middle, each a
    // float64 pass over 4096 tokens.
    std::vector<std::pair<int, int>> pairs;
    if (std::int64_t{shape.num_seqs} * shape.num_heads <= 256) {
      for (int s = 0; s < shape.num_seqs; ++s) {
        for (int h = 0; h < shape.num_heads; ++h) pairs.emplace_back(s, h);
      }
    } else {
      const int last_seq = shape.num_seqs - 1, last_head = shape.num_heads - 1;
      pairs = {{0, 0}, {0, last_head}, {last_seq, 0}, {last_seq, last_head},
               {last_seq / 2, last_head / 2}};
    }
    p->error = check_output(batch, out, pairs);
  } catch (const std::exception& e) {
    p->error = e.what();  // the starter: "not implemented yet: paged_attention_v1_kernel ..."
    p->session.reset();
  }
  current = std::move(p);
  return *current;
}

/// The counters every attention benchmark reports, and the bytes of K and V it read.
void report_batch(benchmark::State& state, const BatchShape& shape) {
  state.counters["tokens"] = shape.seq_len;
  state.counters["seqs"] = shape.num_seqs;
  state.counters["heads"] = shape.num_heads;
  state.counters["kv_heads"] = shape.num_kv_heads;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * kv_bytes(shape));
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
  report_batch(state, shape);
  state.counters["per_seq"] = seconds_per_item(shape.num_seqs);
}
BENCHMARK(BM_EmulatorLaunchPerSequence)
    ->ArgNames({"seqs", "tokens"})
    ->Args({1, kBlockSize})
    ->Args({4, kBlockSize})
    ->Args({16, kBlockSize})
    ->Args({64, kBlockSize})
    ->Unit(benchmark::kMicrosecond);

// ---- The GPU: the kernel against a device-to-device copy of the same bytes ----------------

BatchShape gpu_shape(const benchmark::State& state) {
  return {static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
          static_cast<int>(state.range(2)), static_cast<int>(state.range(3))};
}

void BM_GpuPagedAttentionV1(benchmark::State& state) {
  const BatchShape shape = gpu_shape(state);
  Prepared& p = prepare(Backend::kCuda, shape);
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  benchmark::DoNotOptimize(p.session->timed_launch());  // warm-up: also allocates the flush
  for (auto _ : state) state.SetIterationTime(p.session->timed_launch());
  report_batch(state, shape);
}

void BM_GpuCopyD2D(benchmark::State& state) {
  const BatchShape shape = gpu_shape(state);
  Prepared& p = prepare(Backend::kCuda, shape);
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  benchmark::DoNotOptimize(p.session->timed_cache_copy());  // warm-up: allocates the target
  for (auto _ : state) state.SetIterationTime(p.session->timed_cache_copy());
  report_batch(state, shape);
}

/// Registers the GPU series when this build has the CUDA backend and a device is present,
/// each shape's kernel next to its copy so the two share one prepared batch; otherwise says so.
void register_gpu_benchmarks() {
  if (!cuda_device_present()) {
    std::fprintf(stderr, "no CUDA device: GPU benchmarks not registered\n");
    return;
  }
  // {seqs, tokens, heads, kv_heads}: multi-head with long and with shorter contexts, and
  // grouped-query attention (8 query heads per kv head).
  const std::vector<std::vector<std::int64_t>> shapes = {
      {16, 4096, 32, 32}, {64, 1024, 32, 32}, {64, 4096, 32, 4}};
  for (const auto& args : shapes) {
    for (const auto& [name, fn] : {std::pair{"BM_GpuPagedAttentionV1", &BM_GpuPagedAttentionV1},
                                   std::pair{"BM_GpuCopyD2D", &BM_GpuCopyD2D}}) {
      benchmark::RegisterBenchmark(name, fn)
          ->ArgNames({"seqs", "tokens", "heads", "kv_heads"})
          ->Args(args)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace pa::cuda_v1

// BENCHMARK_MAIN's steps, with the GPU series registered in between: whether they exist
// depends on the machine, which only a running program can ask.
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  pa::cuda_v1::register_gpu_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// Lab 07 — benchmarks: what the emulator costs per tile, and on a GPU how close this kernel, lab
// 05's v1 and lab 06's v2 come to the device's read roofline on the same decode batches.
//
//   tools/lab bench 07     (or: cmake --preset starter && cmake --build --preset starter
//                           --target lab07_bench && build/starter/lab07_bench)
//
// Built from the file LAB_IMPL picks, so it times your kernel under the starter preset; a
// benchmark whose kernel is still a skeleton skips with "not implemented yet: ...", and one
// whose output disagrees with the float64 reference skips with "wrong answer: ...".
//
// Emulator (every build):
//   BM_EmulatorDecodePerTile    the decode kernel on one sequence of 1 to 8 tiles, 8 query heads
//                               over 2 kv heads (`per_tile`: one kv head's tile of 64 tokens).
// GPU (a build with the CUDA backend on a machine with a device; otherwise one line on stderr
// says they were not registered), float16, head size 128, block size 16, every sequence's
// blocks dealt from a shuffled order; per shape {seqs, tokens, heads, kv_heads}:
//   BM_GpuGqaDecode             this kernel over the flash layout, default partitions (FA2's
//                               wave rule on this GPU's occupancy);
//   BM_GpuPagedAttentionV1      lab 05's v1 over the V0 layout (lab05_impl);
//   BM_GpuPagedAttentionV2      lab 06's v2 over the V0 layout, its partition size by the same
//                               rule (cuda_v2::choose_partition_size; lab06_impl);
//   BM_GpuReadRoofline          the yardstick: a read-only kernel over the flash caches' bytes.
// Each kernel series reports the bytes of K and V it must read per second and `roofline_pct`:
// the read roofline over its own session's caches (the same bytes), timed in the same
// iterations, over the kernel's time; above 100 % fails. Its answer is checked against the
// float64 reference before and after timing. Every call is timed with CUDA events after a
// warm-up, the L2 cache flushed before it (outside the span); the span holds the kernels
// alone, queued without a host round trip (the skeleton flag is read before and after).
//
// PyTorch's scaled_dot_product_attention over contiguous caches, the other yardstick of the
// chapter, is timed by bench/sdpa_contiguous.py (not part of the build).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gqa_decode.hpp"
#include "pa/bench.hpp"
#include "pa/bench_batches.hpp"
#include "pa/testing.hpp"
#include "paged_attention_v1.hpp"  // lab 05, through lab05_impl
#include "paged_attention_v2.hpp"  // lab 06, through lab06_impl
#include "simt/occupancy.hpp"

namespace pa::cuda_gqa {
namespace {

constexpr DType kDType = DType::kFloat16;
constexpr int kHeadSize = 128;
constexpr int kBlockSize = 16;

using pa::testing::BatchShape;
using pa::testing::BenchBatch;
using pa::testing::KvLayout;

/// Which kernel a prepared batch is for.
enum class Kernel { kGqa, kV1, kV2 };

/// A batch in a device session, checked against the reference and warmed up: built once per
/// (kernel, backend, shape) and kept while that shape's benchmarks run, because Google
/// Benchmark calls a benchmark function several times while it settles the iteration count,
/// and a GPU shape holds up to 1 GiB of cache. One batch per kernel at a time.
struct Prepared {
  Backend backend = Backend::kEmulator;
  BatchShape shape;
  BenchBatch batch;
  std::unique_ptr<DeviceSession> gqa;          // Kernel::kGqa
  std::unique_ptr<cuda_v1::DeviceSession> v1;  // Kernel::kV1
  std::unique_ptr<cuda_v2::DeviceSession> v2;  // Kernel::kV2
  std::string error;  // why the benchmarks of this shape skip; empty when the check passed

  /// Downloads the session's output and checks it ("" when right).
  std::string check() const {
    Tensor out(kDType, {shape.num_seqs, shape.num_heads, kHeadSize});
    if (gqa) gqa->download(out);
    if (v1) v1->download(out);
    if (v2) v2->download(out);
    return pa::testing::check_bench_output(batch, out);
  }
  void launch() {
    if (gqa) gqa->launch();
    if (v1) v1->launch();
    if (v2) v2->launch();
  }
  double timed_launch() {
    return gqa ? gqa->timed_launch() : v1 ? v1->timed_launch() : v2->timed_launch();
  }
  double timed_read_roofline() {
    return gqa  ? gqa->timed_read_roofline()
           : v1 ? v1->timed_read_roofline()
                : v2->timed_read_roofline();
  }
};

Prepared& prepare(Kernel kernel, Backend backend, const BatchShape& shape) {
  static std::unique_ptr<Prepared> current[3];  // one shape at a time per kernel
  std::unique_ptr<Prepared>& slot = current[static_cast<int>(kernel)];
  if (slot && slot->backend == backend && slot->shape == shape) return *slot;
  slot.reset();  // the previous shape's device memory goes first
  auto p = std::make_unique<Prepared>();
  p->backend = backend;
  p->shape = shape;
  try {
    const KvLayout layout = kernel == Kernel::kGqa ? KvLayout::kFlash : KvLayout::kV0;
    p->batch = pa::testing::make_bench_batch(shape, layout, kDType, kHeadSize, kBlockSize,
                                             7000 + static_cast<std::uint64_t>(shape.num_seqs));
    const BenchBatch& b = p->batch;
    if (kernel == Kernel::kGqa) {
      p->gqa =
          std::make_unique<DeviceSession>(backend, b.query, b.key_cache, b.value_cache, b.scale(),
                                          b.block_tables, b.seq_lens, shape.seq_len);
    } else if (kernel == Kernel::kV1) {
      p->v1 = std::make_unique<cuda_v1::DeviceSession>(
          backend, b.query, b.key_cache, b.value_cache, shape.num_kv_heads, b.scale(),
          b.block_tables, b.seq_lens, kBlockSize, shape.seq_len);
    } else {
      p->v2 = std::make_unique<cuda_v2::DeviceSession>(
          backend, b.query, b.key_cache, b.value_cache, shape.num_kv_heads, b.scale(),
          b.block_tables, b.seq_lens, kBlockSize, shape.seq_len,
          cuda_v2::choose_partition_size(backend, kDType, kHeadSize, kBlockSize, shape.num_seqs,
                                         shape.num_heads, shape.seq_len));
    }
    p->launch();  // also the warm-up
    p->error = p->check();
  } catch (const std::exception& e) {
    p->error = e.what();  // the starter: "not implemented yet: gqa_decode_kernel ..."
    p->gqa.reset();
    p->v1.reset();
    p->v2.reset();
  }
  slot = std::move(p);
  return *slot;
}

/// The counters every attention benchmark reports, and the bytes of K and V it read.
void report_batch(benchmark::State& state, const Prepared& p) {
  state.counters["seqs"] = p.shape.num_seqs;
  state.counters["heads"] = p.shape.num_heads;
  state.counters["kv_heads"] = p.shape.num_kv_heads;
  pa::bench::report(state, p.shape.seq_len, p.batch.kv_bytes());
}

// ---- The emulator, per tile ----------------------------------------------------------------

// One sequence of `tokens` tokens, 8 query heads over 2 kv heads: 2 * tokens / 64 tiles of
// work for thread blocks of 128 fibers; `per_tile` is what one (kv head, tile) costs.
void BM_EmulatorDecodePerTile(benchmark::State& state) {
  const BatchShape shape{1, static_cast<int>(state.range(0)), 8, 2};
  Prepared& p = prepare(Kernel::kGqa, Backend::kEmulator, shape);
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  for (auto _ : state) p.launch();
  report_batch(state, p);
  state.counters["per_tile"] = benchmark::Counter(
      static_cast<double>(shape.num_kv_heads * shape.seq_len / kTileTokens),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_EmulatorDecodePerTile)
    ->ArgNames({"tokens"})
    ->Arg(kTileTokens)
    ->Arg(4 * kTileTokens)
    ->Arg(8 * kTileTokens)
    ->Unit(benchmark::kMillisecond);

// ---- The GPU: each kernel against the read roofline over the same bytes ---------------------

BatchShape gpu_shape(const benchmark::State& state) {
  return {static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
          static_cast<int>(state.range(2)), static_cast<int>(state.range(3))};
}

/// One kernel's series: timed against its session's same-run read roofline (roofline_pct),
/// checked before and after timing.
void gpu_series(benchmark::State& state, Kernel kernel) {
  Prepared& p = prepare(kernel, Backend::kCuda, gpu_shape(state));
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  benchmark::DoNotOptimize(p.timed_launch());  // warm-up: also allocates the flush
  pa::bench::time_against_roofline(
      state, [&] { return p.timed_launch(); }, [&] { return p.timed_read_roofline(); },
      [&] { return p.check(); });
  report_batch(state, p);
  if (p.gqa) state.counters["partition"] = p.gqa->partition_size();
}

void BM_GpuGqaDecode(benchmark::State& state) {
  gpu_series(state, Kernel::kGqa);
}
void BM_GpuPagedAttentionV1(benchmark::State& state) {
  gpu_series(state, Kernel::kV1);
}

void BM_GpuPagedAttentionV2(benchmark::State& state) {
  gpu_series(state, Kernel::kV2);
}

/// The yardstick alone: a read-only kernel over the flash caches' bytes (the plot's roofline).
void BM_GpuReadRoofline(benchmark::State& state) {
  Prepared& p = prepare(Kernel::kGqa, Backend::kCuda, gpu_shape(state));
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  benchmark::DoNotOptimize(p.timed_read_roofline());
  for (auto _ : state) state.SetIterationTime(p.timed_read_roofline());
  report_batch(state, p);
}

/// {seqs, tokens, heads, kv_heads}: two large grouped-query batches (8 and 4 query heads per
/// kv head), multi-head, and one long sequence of 16k and of 64k tokens (v1 cannot hold the
/// latter's logits in shared memory: it skips with its context bound).
const std::vector<std::vector<std::int64_t>> kGpuShapes = {{64, 4096, 32, 4},
                                                           {128, 2048, 32, 8},
                                                           {16, 4096, 32, 32},
                                                           {1, 16384, 32, 8},
                                                           {1, 65536, 32, 8}};

/// [design_table]
/// The decode kernel's design on an H100 (simt::kH100), per benchmark shape, from ptxas's
/// figures for the benchmarked instantiation (float16, head size 128, block size 16): blocks
/// per SM, the default split on those slots, the grid and its waves, and the keys and values in
/// flight per SM (the ring's stages ahead of the one being multiplied, in every resident block
/// of a busy SM). A markdown table (tools/lab bench --ptxas 07 puts it in the chapter).
void print_design_table(const pa::bench::PtxasFigures& f) {
  constexpr SharedLayout layout{kHeadSize};
  const std::size_t shared = layout.bytes() + static_cast<std::size_t>(f.static_shared);
  const int blocks = simt::blocks_per_sm({kNumThreads, f.registers, shared});
  const int sms = simt::kH100.sm_count;
  // Registers and spills are the same on every row: the paragraph above the table gives them.
  std::printf(
      "| batch | shared / block | blocks / SM | partition | grid | waves | in flight / SM |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");  // numbers right-aligned
  for (const auto& s : kGpuShapes) {
    const int seqs = static_cast<int>(s[0]), tokens = static_cast<int>(s[1]);
    const int heads = static_cast<int>(s[2]), kv_heads = static_cast<int>(s[3]);
    const int partition = default_partition_size(seqs, kv_heads, tokens, blocks * sms);
    const std::int64_t grid =
        std::int64_t{kv_heads} * seqs * ((tokens + partition - 1) / partition);
    const std::int64_t resident = std::min<std::int64_t>(blocks, (grid + sms - 1) / sms);
    std::printf("| %d × %s, %d/%d | %s | %d | %s | %s | %.2f | %s |\n", seqs,
                pa::bench::grouped(tokens).c_str(), heads, kv_heads,
                pa::bench::kib(static_cast<double>(shared)).c_str(), blocks,
                pa::bench::grouped(partition).c_str(), pa::bench::grouped(grid).c_str(),
                pa::waves::waves(grid, std::int64_t{blocks} * sms),
                pa::bench::kib(static_cast<double>(resident * layout.bytes_in_flight())).c_str());
  }
}
/// [design_table]

/// Registers the GPU series when this build has the CUDA backend and a device is present.
void register_gpu_benchmarks() {
  pa::bench::register_gpu_batches(cuda_device_present(), kGpuShapes,
                                  {{"BM_GpuGqaDecode", &BM_GpuGqaDecode},
                                   {"BM_GpuPagedAttentionV1", &BM_GpuPagedAttentionV1},
                                   {"BM_GpuPagedAttentionV2", &BM_GpuPagedAttentionV2},
                                   {"BM_GpuReadRoofline", &BM_GpuReadRoofline}});
}

}  // namespace
}  // namespace pa::cuda_gqa

int main(int argc, char** argv) {
  if (const auto figures = pa::bench::design_table_arg(argc, argv); !figures.empty()) {
    pa::cuda_gqa::print_design_table(figures.front());  // gqa_decode_kernel<half, 128, 16>
    return 0;
  }
  return pa::bench::main_with_gpu_series(argc, argv,
                                         [] { pa::cuda_gqa::register_gpu_benchmarks(); });
}

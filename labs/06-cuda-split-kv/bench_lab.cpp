// Lab 06 — benchmarks: on a GPU, how close v1 (lab 05's kernel) and v2 (yours) come to the
// device's read roofline, shape by shape; on the emulator, what a partition costs.
//
//   tools/lab bench 06     (or: cmake --preset starter && cmake --build --preset starter
//                           --target lab06_bench && build/starter/lab06_bench)
//
// Built from the file LAB_IMPL picks (lab 05's and lab 06's alike), so it times your kernels
// under the starter preset; a benchmark whose kernel is still a skeleton skips with "not
// implemented yet: ...", and one whose output disagrees with the float64 reference skips with
// "wrong answer: ...".
//
// Emulator (every build):
//   BM_EmulatorPartitions      v2 on one 2048-token sequence, one head, with 512-token and
//                              64-token partitions: the emulator's cost per thread block.
// GPU (a build with the CUDA backend on a machine with a device; otherwise one line on stderr
// says they were not registered), float16, head size 128, block size 16, partitions of the
// size FA2's wave rule picks on this GPU's occupancy (choose_partition_size: 64 or 512):
//   BM_GpuReadRoofline         the yardstick: a read-only kernel (16-byte loads) over the very
//                              K and V bytes the kernels must read;
//   BM_GpuPagedAttentionV1     lab 05's kernel (skips where its shared memory cannot hold the
//                              context),
//   BM_GpuPagedAttentionV2     both v2 kernels (attention, then the reduce where needed),
//                              each with `roofline_pct`: the same-run roofline's time over its
//                              own (above 100 % fails), its answer checked before and after;
//   BM_GpuCopyD2D              cudaMemcpy device to device of the same bytes.
// Every GPU series is timed alike: CUDA events around the kernels alone (queued back to back,
// no host round trip inside the span), the L2 cache flushed before each (outside the span),
// after a warm-up.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pa/bench.hpp"
#include "pa/bench_batches.hpp"
#include "pa/testing.hpp"
#include "paged_attention_v1.hpp"  // lab 05: v1, timed beside v2
#include "paged_attention_v2.hpp"
#include "simt/occupancy.hpp"

namespace pa::cuda_v2 {
namespace {

constexpr DType kDType = DType::kFloat16;
constexpr int kHeadSize = 128;
constexpr int kBlockSize = 16;

using pa::testing::BatchShape;
using pa::testing::BenchBatch;

/// One kernel's device session and what its first launch gave: "" when the answer was right,
/// else why this kernel's benchmarks skip.
template <class Session>
struct Timed {
  std::unique_ptr<Session> session;
  std::string error;
};

/// A batch with a v1 and a v2 session, each checked against the reference and warmed up:
/// built once per (backend, shape) and kept while that shape's benchmarks run, because Google
/// Benchmark calls a benchmark function several times while it settles the iteration count,
/// and a GPU shape holds about 1 GiB of cache.
struct Prepared {
  Backend backend = Backend::kEmulator;
  BatchShape shape;
  int partition_size = kPartitionSize;
  BenchBatch batch;
  std::string batch_error;  // why every benchmark of this shape skips
  Timed<cuda_v1::DeviceSession> v1;
  Timed<DeviceSession> v2;

  /// The yardsticks time the caches of whichever session opened (both hold the same bytes).
  double timed_read_roofline() {
    return v2.session ? v2.session->timed_read_roofline() : v1.session->timed_read_roofline();
  }
  double timed_cache_copy() {
    return v2.session ? v2.session->timed_cache_copy() : v1.session->timed_cache_copy();
  }
  /// Why the yardsticks skip: "" when some session opened.
  std::string yardstick_error() const {
    if (!batch_error.empty() || v2.session || v1.session) return batch_error;
    return v2.error;
  }

  /// Downloads a session's output and checks it ("" when right).
  template <class Session>
  std::string check(const Session& session) const {
    Tensor out(kDType, {shape.num_seqs, shape.num_heads, kHeadSize});
    session.download(out);
    return pa::testing::check_bench_output(batch, out);
  }
};

/// Opens one session with `open`, launches it once (also the warm-up) and checks its answer.
template <class Session, class Open>
Timed<Session> open_checked(const Prepared& p, Open&& open) {
  Timed<Session> t;
  try {
    t.session = open();
    t.session->launch();
    t.error = p.check(*t.session);
  } catch (const std::exception& e) {
    t.error = e.what();  // the starter's "not implemented yet", or v1's context bound
    t.session.reset();
  }
  return t;
}

Prepared& prepare(Backend backend, const BatchShape& shape, int partition_size, bool with_v1) {
  static std::unique_ptr<Prepared> current;  // one shape at a time
  if (current && current->backend == backend && current->shape == shape &&
      current->partition_size == partition_size) {
    return *current;
  }
  current.reset();  // the previous shape's device memory goes first
  auto p = std::make_unique<Prepared>();
  p->backend = backend;
  p->shape = shape;
  p->partition_size = partition_size;
  try {
    p->batch = pa::testing::make_bench_batch(shape, pa::testing::KvLayout::kV0, kDType, kHeadSize,
                                             kBlockSize,
                                             6000 + static_cast<std::uint64_t>(shape.num_seqs));
  } catch (const std::exception& e) {
    p->batch_error = e.what();
    current = std::move(p);
    return *current;
  }
  const BenchBatch& b = p->batch;
  p->v2 = open_checked<DeviceSession>(*p, [&] {
    return std::make_unique<DeviceSession>(backend, b.query, b.key_cache, b.value_cache,
                                           shape.num_kv_heads, b.scale(), b.block_tables,
                                           b.seq_lens, kBlockSize, shape.seq_len, partition_size);
  });
  if (with_v1) {
    p->v1 = open_checked<cuda_v1::DeviceSession>(*p, [&] {
      return std::make_unique<cuda_v1::DeviceSession>(backend, b.query, b.key_cache, b.value_cache,
                                                      shape.num_kv_heads, b.scale(),
                                                      b.block_tables, b.seq_lens, kBlockSize,
                                                      shape.seq_len);
    });
  }
  current = std::move(p);
  return *current;
}

/// The counters every attention benchmark reports, and the bytes of K and V it read.
void report_batch(benchmark::State& state, const Prepared& p) {
  state.counters["seqs"] = p.shape.num_seqs;
  state.counters["heads"] = p.shape.num_heads;
  state.counters["kv_heads"] = p.shape.num_kv_heads;
  state.counters["partitions"] = v2_max_num_partitions(p.shape.seq_len, p.partition_size);
  pa::bench::report(state, p.shape.seq_len, p.batch.kv_bytes());
}

/// Skips the benchmark with `error` when it is not empty; returns whether it did.
bool skipped(benchmark::State& state, const std::string& error) {
  if (error.empty()) return false;
  state.SkipWithError(error.c_str());
  return true;
}

// ---- The emulator: what a partition costs ---------------------------------------------------

// One 2048-token sequence, one head: 4 thread blocks of 512 tokens, or 32 of 64, plus the
// reduce. `per_block` is the time per attention thread block.
void BM_EmulatorPartitions(benchmark::State& state) {
  const BatchShape shape{1, 2048, 1, 1};
  const int partition_size = static_cast<int>(state.range(0));
  Prepared& p = prepare(Backend::kEmulator, shape, partition_size, /*with_v1=*/false);
  if (skipped(state, p.batch_error) || skipped(state, p.v2.error)) return;
  for (auto _ : state) p.v2.session->launch();
  report_batch(state, p);
  state.counters["per_block"] = benchmark::Counter(
      v2_max_num_partitions(shape.seq_len, partition_size),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_EmulatorPartitions)
    ->ArgNames({"partition_size"})
    ->Arg(kPartitionSize)
    ->Arg(64)
    ->Unit(benchmark::kMillisecond);

// ---- The GPU: v1 and v2 against the read roofline over the same bytes ----------------------

BatchShape gpu_shape(const benchmark::State& state) {
  return {static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
          static_cast<int>(state.range(2)), static_cast<int>(state.range(3))};
}

/// The shape's partition size: FA2's wave rule on this GPU's occupancy of the attention
/// kernel (choose_partition_size), among kSupportedPartitionSizes.
Prepared& prepare_gpu(const benchmark::State& state) {
  const BatchShape shape = gpu_shape(state);
  const int partition_size =
      choose_partition_size(Backend::kCuda, kDType, kHeadSize, kBlockSize, shape.num_seqs,
                            shape.num_heads, shape.seq_len);
  return prepare(Backend::kCuda, shape, partition_size, /*with_v1=*/true);
}

/// Times `t`'s session against the same-run read roofline (roofline_pct), checked before
/// (prepare) and after timing.
template <class Session>
void time_kernel(benchmark::State& state, Prepared& p, Timed<Session>& t) {
  if (skipped(state, p.batch_error) || skipped(state, t.error)) return;
  benchmark::DoNotOptimize(t.session->timed_launch());  // warm-up: also allocates the flush
  pa::bench::time_against_roofline(
      state, [&] { return t.session->timed_launch(); },
      [&] { return p.timed_read_roofline(); },
      [&] { return p.check(*t.session); });
  report_batch(state, p);
}

/// [gpu_series]
/// Lab 05's kernel: one thread block per (head, sequence).
void BM_GpuPagedAttentionV1(benchmark::State& state) {
  Prepared& p = prepare_gpu(state);
  time_kernel(state, p, p.v1);
}

/// Both v2 kernels: one thread block per (head, sequence, partition), then the reduce.
void BM_GpuPagedAttentionV2(benchmark::State& state) {
  Prepared& p = prepare_gpu(state);
  time_kernel(state, p, p.v2);
}
/// [gpu_series]

/// The yardstick alone: a read-only kernel over the K and V bytes (the plot's roofline).
void BM_GpuReadRoofline(benchmark::State& state) {
  Prepared& p = prepare_gpu(state);
  if (skipped(state, p.yardstick_error())) return;
  benchmark::DoNotOptimize(p.timed_read_roofline());
  for (auto _ : state) state.SetIterationTime(p.timed_read_roofline());
  report_batch(state, p);
}

/// A second yardstick: cudaMemcpy device to device of the same bytes (counted as read).
void BM_GpuCopyD2D(benchmark::State& state) {
  Prepared& p = prepare_gpu(state);
  if (skipped(state, p.yardstick_error())) return;
  benchmark::DoNotOptimize(p.timed_cache_copy());  // warm-up: allocates the target
  for (auto _ : state) state.SetIterationTime(p.timed_cache_copy());
  report_batch(state, p);
}

/// {seqs, tokens, heads, kv_heads}: the shapes of lab 05's H100 run (one long sequence, a few
/// long ones, many shorter ones), a context v1 cannot hold, and grouped-query attention.
const std::vector<std::vector<std::int64_t>> kGpuShapes = {
    {1, 2048, 32, 32},  {1, 16384, 32, 32}, {4, 8192, 32, 32}, {16, 4096, 32, 32},
    {64, 1024, 32, 32}, {1, 65536, 32, 32}, {64, 4096, 32, 4}};

/// [design_table]
/// v2's design on an H100 (simt::kH100), per benchmark shape, from ptxas's figures for the
/// benchmarked instantiations (float16, head size 128, block size 16): `attention[i]` for
/// partitions of kSupportedPartitionSizes[i], then the reduce. Blocks per SM of the attention
/// kernel at kPartitionSize give the slots (as choose_partition_size does on a GPU), the wave
/// rule the partition, then the grid, its waves and the bytes in flight per busy SM. A markdown
/// table (tools/lab bench --ptxas 06 puts it in the chapter).
void print_design_table(const std::vector<pa::bench::PtxasFigures>& f) {
  const auto blocks_of = [](const pa::bench::PtxasFigures& k, std::size_t dynamic) {
    return simt::blocks_per_sm(
        {kNumThreads, k.registers, dynamic + static_cast<std::size_t>(k.static_shared)});
  };
  const int sms = simt::kH100.sm_count;
  const std::size_t sizes = kSupportedPartitionSizes.size();
  const int slots =
      blocks_of(f.at(sizes - 1), v2_shared_mem_bytes(kHeadSize, kPartitionSize)) * sms;
  // Registers and spills per partition size: the paragraph above the table gives them.
  std::printf("| batch | partition | blocks / SM | grid | waves | in flight / SM |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");  // numbers right-aligned
  for (const auto& s : kGpuShapes) {
    const int seqs = static_cast<int>(s[0]), tokens = static_cast<int>(s[1]);
    const int heads = static_cast<int>(s[2]), kv_heads = static_cast<int>(s[3]);
    const int partition = v2_partition_size(seqs, heads, tokens, slots);
    std::size_t k = 0;
    while (k + 1 < sizes && kSupportedPartitionSizes[k] != partition) ++k;
    const int blocks = blocks_of(f.at(k), v2_shared_mem_bytes(kHeadSize, partition));
    const std::int64_t grid = std::int64_t{heads} * seqs * v2_max_num_partitions(tokens, partition);
    const std::int64_t resident = std::min<std::int64_t>(blocks, (grid + sms - 1) / sms);
    std::printf("| %d × %s, %d/%d | %d | %d | %s | %.2f | %s |\n", seqs,
                pa::bench::grouped(tokens).c_str(), heads, kv_heads, partition, blocks,
                pa::bench::grouped(grid).c_str(),
                pa::waves::waves(grid, std::int64_t{blocks} * sms),
                pa::bench::kib(static_cast<double>(
                                   resident * v2_bytes_in_flight(kHeadSize, kBlockSize, 2)))
                    .c_str());
  }
  const pa::bench::PtxasFigures& reduce = f.at(sizes);
  std::printf("\nThe reduce kernel: %d registers, %d B of spills, %d blocks / SM; it loads 8 "
              "partitions' rows before it multiplies any.\n",
              reduce.registers, reduce.spill_bytes,
              blocks_of(reduce, v2_reduce_shared_mem_bytes()));
}
/// [design_table]

/// Registers the GPU series when this build has the CUDA backend and a device is present.
void register_gpu_benchmarks() {
  pa::bench::register_gpu_batches(cuda_device_present(), kGpuShapes,
                                  {{"BM_GpuReadRoofline", &BM_GpuReadRoofline},
                                   {"BM_GpuPagedAttentionV1", &BM_GpuPagedAttentionV1},
                                   {"BM_GpuPagedAttentionV2", &BM_GpuPagedAttentionV2},
                                   {"BM_GpuCopyD2D", &BM_GpuCopyD2D}});
}

}  // namespace
}  // namespace pa::cuda_v2

int main(int argc, char** argv) {
  if (const auto figures = pa::bench::design_table_arg(argc, argv); !figures.empty()) {
    pa::cuda_v2::print_design_table(figures);  // attention per partition size, then the reduce
    return 0;
  }
  return pa::bench::main_with_gpu_series(argc, argv,
                                         [] { pa::cuda_v2::register_gpu_benchmarks(); });
}

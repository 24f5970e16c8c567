// What one __syncthreads round of a 128-thread block costs on the emulator, next to two
// baselines measured in the same run: the bare fiber switches (128 fibers handing over to each
// other in turn, as the scheduler's passes do, without any bookkeeping) and 128 plain function
// calls.
//
// Run: build/<dir>/common/simt/simt_bench   Read the `round` counter: time per round.
#include <benchmark/benchmark.h>

#include <vector>

#include "simt/cuda.hpp"
#include "src/fiber.hpp"

namespace {

constexpr int kThreads = 128;
constexpr int kRounds = 1000;  // rounds per launch: enough to hide the launch's own cost

// Reports the time per round: the iteration count times kRounds, inverted into seconds each.
void report_rounds(benchmark::State& state) {
  state.counters["round"] = benchmark::Counter(
      static_cast<double>(kRounds),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

__global__ void barrier_loop_kernel(int rounds, int* sink) {
  int x = 0;
  for (int r = 0; r < rounds; ++r) {
    x += r;
    __syncthreads();
  }
  if (threadIdx.x == 0) *sink = x;
}

void BM_BarrierRound(benchmark::State& state) {
  simt::DeviceBuffer<int> sink(1);
  for (auto _ : state) {
    simt::launch(barrier_loop_kernel, dim3(1), dim3(kThreads), 0, kRounds, sink.data());
  }
  report_rounds(state);
}
BENCHMARK(BM_BarrierRound)->Unit(benchmark::kMicrosecond);

// One round = every thread of the block does one 5-step xor butterfly (a warp sum).
__global__ void shuffle_loop_kernel(int rounds, float* sink) {
  float v = static_cast<float>(threadIdx.x);
  for (int r = 0; r < rounds; ++r) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  if (threadIdx.x == 0) *sink = v;
}

void BM_WarpSumRound(benchmark::State& state) {
  simt::DeviceBuffer<float> sink(1);
  for (auto _ : state) {
    simt::launch(shuffle_loop_kernel, dim3(1), dim3(kThreads), 0, kRounds, sink.data());
  }
  report_rounds(state);
}
BENCHMARK(BM_WarpSumRound)->Unit(benchmark::kMicrosecond);

// One round = each of the block's four warps does one 16x16x16 wmma::mma_sync (the last lane to
// arrive does the 4096 multiply-adds for its warp).
__global__ void mma_loop_kernel(int rounds, const __half* tile, float* sink) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(a, tile, 16);
  wmma::load_matrix_sync(b, tile, 16);
  wmma::fill_fragment(acc, 0.0f);
  for (int r = 0; r < rounds; ++r) wmma::mma_sync(acc, a, b, acc);
  wmma::store_matrix_sync(sink + threadIdx.x / 32 * 256, acc, 16, wmma::mem_row_major);
}

void BM_WmmaMmaRound(benchmark::State& state) {
  simt::DeviceBuffer<__half> tile(256);
  simt::DeviceBuffer<float> sink(kThreads / 32 * 256);
  tile.fill_bytes(0);
  for (auto _ : state) {
    simt::launch(mma_loop_kernel, dim3(1), dim3(kThreads), 0, kRounds, tile.data(), sink.data());
  }
  report_rounds(state);
}
BENCHMARK(BM_WmmaMmaRound)->Unit(benchmark::kMicrosecond);

__global__ void empty_kernel() {}

// The fixed cost of a launch of one 128-thread block: fibers prepared, run, stacks returned.
void BM_EmptyLaunch(benchmark::State& state) {
  for (auto _ : state) simt::launch(empty_kernel, dim3(1), dim3(kThreads), 0);
}
BENCHMARK(BM_EmptyLaunch)->Unit(benchmark::kMicrosecond);

// ---- Baseline 1: the same switches without a scheduler's bookkeeping ------------------------

namespace fib = simt::emu::detail;

// A pass: the loop switches to fiber 0, each fiber to the next, the last one back to the loop.
struct Ring {
  fib::StackPool stacks{256 * 1024};
  fib::Fiber loop;
  std::vector<fib::Fiber> fibers = std::vector<fib::Fiber>(kThreads);
  std::vector<fib::Stack> fiber_stacks = std::vector<fib::Stack>(kThreads);
  int running = 0;  // which fiber runs, so that a fresh one knows who it is

  fib::Fiber& after(int i) { return i + 1 < kThreads ? fibers[i + 1] : loop; }
};

Ring* the_ring = nullptr;

void ring_entry(fib::ctx::transfer_t from) {
  fib::enter_fiber(from);
  Ring& ring = *the_ring;
  const int me = ring.running;
  for (int r = 0; r < kRounds; ++r) {
    ring.running = (me + 1) % kThreads;
    fib::switch_fiber(ring.fibers[me], ring.after(me));
  }
  ring.running = (me + 1) % kThreads;
  fib::finish_fiber(ring.fibers[me], ring.after(me));
}

void BM_BaselineFiberRingRound(benchmark::State& state) {
  Ring ring;
  the_ring = &ring;
  for (auto _ : state) {
    for (int i = 0; i < kThreads; ++i) {
      ring.fiber_stacks[i] = ring.stacks.acquire();
      fib::prepare_fiber(ring.fibers[i], ring.fiber_stacks[i], &ring_entry);
    }
    for (int pass = 0; pass <= kRounds; ++pass) {
      ring.running = 0;
      fib::switch_fiber(ring.loop, ring.fibers[0]);
    }
    for (const fib::Stack& s : ring.fiber_stacks) ring.stacks.release(s);
  }
  report_rounds(state);
}
BENCHMARK(BM_BaselineFiberRingRound)->Unit(benchmark::kMicrosecond);

// ---- Baseline 2: 128 plain calls per round -------------------------------------------------

__attribute__((noinline)) void one_call(int* x, int r) {
  *x += r;
  benchmark::ClobberMemory();
}

void BM_BaselineFunctionCallRound(benchmark::State& state) {
  int x = 0;
  for (auto _ : state) {
    for (int r = 0; r < kRounds; ++r) {
      for (int t = 0; t < kThreads; ++t) one_call(&x, r);
    }
  }
  benchmark::DoNotOptimize(x);
  report_rounds(state);
}
BENCHMARK(BM_BaselineFunctionCallRound)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

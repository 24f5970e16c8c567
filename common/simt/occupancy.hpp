// How many thread blocks of a kernel one SM holds at once, and how many SMs there are: what
// sizes a split-KV grid (pa/waves.hpp) and what the benchmarks' design tables print.
//   SmLimits            one SM's budgets: registers, shared memory, threads, blocks
//   kH100               an H100 SXM's figures (the machine the labs' targets are set on)
//   KernelResources     what one block of a kernel takes: threads, registers/thread, shared bytes
//   blocks_per_sm()     the occupancy calculator's arithmetic on those, constexpr
//   Occupancy, occupancy(kernel, ...)  the figures this backend's device gives: on CUDA
//                       cudaOccupancyMaxActiveBlocksPerMultiprocessor and the SM count; on the
//                       emulator the H100 arithmetic on the caller's design register budget
// Include after (or instead of) "simt/cuda.hpp".
#pragma once

#include <algorithm>
#include <cstddef>

#include "simt/cuda.hpp"

namespace simt {
inline namespace SIMT_BACKEND {

/// One streaming multiprocessor's budgets and their allocation granules (the figures the CUDA
/// occupancy calculator works with), and the number of SMs.
struct SmLimits {
  int sm_count;
  int registers;                       // 32-bit registers per SM
  int register_granule;                // registers are given to a warp in units of this many
  std::size_t shared_bytes;            // shared memory per SM that blocks can have
  std::size_t shared_granule;          // shared memory is given to a block in units of this
  std::size_t reserved_shared_per_block;  // the runtime's own share of each block's allocation
  int max_threads;                     // resident threads per SM
  int max_blocks;                      // resident blocks per SM
};

/// An H100 SXM (sm_90): 132 SMs, 64 K registers, 228 KiB of shared memory (1 KiB of each
/// block's kept by the runtime), 2048 threads and 32 blocks per SM.
inline constexpr SmLimits kH100{132, 64 * 1024, 256, 228 * 1024, 128, 1024, 2048, 32};

/// What one thread block of a kernel takes from its SM.
struct KernelResources {
  int threads;                 // per block
  int registers_per_thread;    // ptxas's figure (-Xptxas -v), or a design budget
  std::size_t shared_bytes;    // static + dynamic shared memory per block
};

namespace detail {
constexpr std::size_t round_up(std::size_t n, std::size_t granule) {
  return (n + granule - 1) / granule * granule;
}
}  // namespace detail

/// Returns how many blocks of a kernel using `r` fit on one SM of `sm` at once: the least of
/// what the registers, the shared memory, the threads and the block slots allow; 0 when one
/// block does not fit at all.
constexpr int blocks_per_sm(const KernelResources& r, const SmLimits& sm = kH100) {
  if (r.threads <= 0 || r.threads > sm.max_threads) return 0;
  const int warps = (r.threads + 31) / 32;
  int blocks = std::min(sm.max_blocks, sm.max_threads / r.threads);
  if (r.registers_per_thread > 0) {
    // Registers go to whole warps, rounded up to the granule; a block needs all its warps.
    const int per_warp = static_cast<int>(detail::round_up(std::size_t(r.registers_per_thread) * 32,
                                                           std::size_t(sm.register_granule)));
    blocks = std::min(blocks, (sm.registers / per_warp) / warps);
  }
  const std::size_t shared =
      detail::round_up(r.shared_bytes + sm.reserved_shared_per_block, sm.shared_granule);
  blocks = std::min(blocks, static_cast<int>(sm.shared_bytes / shared));
  return std::max(blocks, 0);
}

/// A device's capacity for one kernel configuration: blocks resident per SM and SMs; their
/// product is how many blocks run in one wave.
struct Occupancy {
  int blocks_per_sm;
  int sm_count;
  constexpr int slots() const { return blocks_per_sm * sm_count; }
};

#if defined(__CUDACC__)
/// Returns the current device's occupancy for `kernel` launched with `threads` per block and
/// `dynamic_shared_bytes`: the CUDA runtime's figure from the compiled kernel's registers and
/// shared memory. `design_registers` is the emulator's stand-in and is not used here.
template <class... Params>
Occupancy occupancy(void (*kernel)(Params...), int threads, std::size_t dynamic_shared_bytes,
                    int design_registers) {
  (void)design_registers;
  int device = 0, sms = 0, blocks = 0;
  detail::check(cudaGetDevice(&device), "simt::occupancy");
  detail::check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                "simt::occupancy");
  detail::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads,
                                                              dynamic_shared_bytes),
                "simt::occupancy");
  return {std::max(blocks, 1), std::max(sms, 1)};
}
#else
/// The emulator has no registers to count: it answers for an H100 running `kernel` with the
/// caller's design budget of `design_registers` per thread, so that a grid sized from it is
/// the grid the same call sizes on that GPU when ptxas meets the budget.
template <class... Params>
Occupancy occupancy(void (*kernel)(Params...), int threads, std::size_t dynamic_shared_bytes,
                    int design_registers) {
  (void)kernel;
  const int blocks = blocks_per_sm({threads, design_registers, dynamic_shared_bytes}, kH100);
  return {std::max(blocks, 1), kH100.sm_count};
}
#endif

}  // namespace SIMT_BACKEND
}  // namespace simt

// Lab 07, given device code: the kernels' helpers (common/pa/device_helpers.cuh: Vec<T, N>,
// to_float / from_float, ceil_div / imax / imin, WARP_SIZE, FULL_MASK, PA_TODO_KERNEL) brought
// into the kernels' namespace, pa::cuda_gqa::SIMT_BACKEND, the shared-memory tiles of the decode
// kernel as typed pointers, and the load that reads another block's partial result.
#pragma once

#include <cstdint>

#include "gqa_decode.hpp"
#include "pa/device_helpers.cuh"

namespace pa::cuda_gqa::SIMT_BACKEND {
// Every helper of pa/device_helpers.cuh (and of the launchers' pa/device_tensors.cuh) by its
// plain name. Vec by a declaration as well: the directive alone meets the host's pa::Vec (an
// Eigen vector) one namespace up, where Vec would be ambiguous.
using namespace pa::device;
using pa::device::Vec;
static_assert(WARP_SIZE == kWarpSize, "the API's warp size is the device's");
namespace {

/// [shared_tiles]
/// The decode kernel's dynamic shared memory cut into its tiles (SharedLayout in gqa_decode.hpp
/// gives the offsets and pitches). Row-major everywhere; element (r, c) of a tile with pitch ld
/// is tile[r * ld + c].
template <typename scalar_t, int HEAD_SIZE>
struct SharedTiles {
  static constexpr SharedLayout kLayout{HEAD_SIZE};
  static constexpr int kStages = kLayout.stages();
  static constexpr int kLdQ = kLayout.ld_q();
  static constexpr int kLdKV = kLayout.ld_kv();
  static constexpr int kLdS = SharedLayout::ld_s();
  static constexpr int kLdP = SharedLayout::ld_p();
  static constexpr int kLdO = kLayout.ld_o();
  static constexpr std::size_t kRingOffset = kLayout.ring_offset();  // k_offset(0)
  static constexpr std::size_t kTileBytes = kLayout.tile_bytes();
  static_assert(kLayout.v_offset(1) == kRingOffset + 3 * kTileBytes, "the ring's order");
  static_assert(sizeof(scalar_t) == SharedLayout::kElemBytes, "16-bit elements");

  unsigned char* base;  // the first 128-byte boundary of the allocation
  scalar_t* q;       // [kTileRows, kLdQ]    the group's queries, rows >= group zero
  float* s;          // [kTileRows, kLdS]    scores Q·Kᵀ of this tile (unscaled)
  scalar_t* p;       // [kTileRows, kLdP]    W: this tile's weights exp(s·scale - m), undivided
  float* o;          // [kTileRows, kLdO]    acc = sum_t w_t v_t so far, per query row, undivided
  float* row_alpha;  // [kTileRows]          exp(m_old - m_new): how much acc shrinks this tile
  int* table;        // [kMaxTableEntries]   the partition's physical block ids, in order
  int* is_last;      // [1]                  this block merges the partitions (fused merge)

  /// The first 128-byte boundary at or after `allocation`.
  __device__ static unsigned char* aligned(unsigned char* allocation) {
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(allocation);
    return allocation + (128 - address % 128) % 128;
  }

  /// Cuts the dynamic shared memory at `allocation` (16-byte aligned, SharedLayout::bytes()).
  __device__ explicit SharedTiles(unsigned char* allocation)
      : base(aligned(allocation)),
        q(reinterpret_cast<scalar_t*>(base + kLayout.q_offset())),
        s(reinterpret_cast<float*>(base + kLayout.s_offset())),
        p(reinterpret_cast<scalar_t*>(base + kLayout.p_offset())),
        o(reinterpret_cast<float*>(base + kLayout.o_offset())),
        row_alpha(reinterpret_cast<float*>(base + kLayout.alpha_offset())),
        table(reinterpret_cast<int*>(base + kLayout.table_offset())),
        is_last(reinterpret_cast<int*>(base + kLayout.flag_offset())) {}

  /// The ring: stage `stage` (< kStages) holds one tile's keys, k(stage), and values, v(stage),
  /// [kTileTokens, kLdKV] each.
  __device__ scalar_t* k(int stage) const {
    return reinterpret_cast<scalar_t*>(base + kRingOffset + std::size_t(2 * stage) * kTileBytes);
  }
  __device__ scalar_t* v(int stage) const {
    return reinterpret_cast<scalar_t*>(base + kRingOffset +
                                       std::size_t(2 * stage + 1) * kTileBytes);
  }
  /// The stage that tile `tile` of the partition occupies: tiles take the stages in turn, so
  /// tile t + kStages - 1, copied while tile t is multiplied, reuses tile t - 1's stage.
  __device__ static int stage_of(int tile) { return tile % kStages; }
};
/// [shared_tiles]

/// [stage_block_table]
/// Copies a partition's slice of its sequence's block table, slice[0, n), into `table` (shared
/// memory, n <= kMaxTableEntries), once per partition: every copy of the pipeline then finds its
/// block in shared memory instead of making a dependent trip to device memory first. Every
/// thread of the block takes part; a barrier must come before any thread reads `table`.
__device__ __forceinline__ void stage_block_table(int* table, const int* __restrict__ slice,
                                                  int n) {
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) {
    table[i] = slice[i];
  }
}
/// [stage_block_table]

/// Reads a float another thread block of this launch wrote (a partial result of the split):
/// through L2, past this SM's L1, which is not kept coherent with the other SMs' writes.
__device__ __forceinline__ float load_partial(const float* p) {
#if defined(__CUDACC__)
  return __ldcg(p);
#else
  return *p;
#endif
}

}  // namespace
}  // namespace pa::cuda_gqa::SIMT_BACKEND

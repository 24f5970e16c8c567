/// \file
/// Lab 06, given device code: lab 05's paged_attention_v1 kernel cut into the pieces v2 reuses
/// unchanged. The thread geometry (thread groups, vecs, the V lanes), the query load, one cache
/// block's q·k, one cache block's weights times V, the fold of the lanes that share a V row, and
/// the two block-wide reductions. Your kernels in starter.cpp put them together around what is
/// new in v2: the partition's bounds, its partial state, and the merge of the partials.
/// Included by given/kernel_support.cuh, after the helpers' names are in scope.
#pragma once

#include <cfloat>

namespace pa::cuda_v2::SIMT_BACKEND {
namespace {

/// [decode_geometry]
/// Lab 05's compile-time geometry for one instantiation: which thread reads which bytes.
template <typename scalar_t, int HEAD_SIZE, int BLOCK_SIZE, int NUM_THREADS>
struct DecodeGeometry {
  // q·k: a thread group of THREAD_GROUP_SIZE threads takes one token (row) of a cache block, so
  // a warp covers one cache block per step. Unlike lab 05 (16 bytes per *group*), each thread
  // loads 16 bytes at a time, a whole x-chunk of the key cache, where the head divides into
  // them (VEC_SIZE halves until it does: head 80 or 112 over 4-thread groups): the widest
  // loads, the fewest of them, and more bytes per instruction in flight.
  static constexpr int THREAD_GROUP_SIZE = imax(WARP_SIZE / BLOCK_SIZE, 1);
  static constexpr int NUM_THREAD_GROUPS = NUM_THREADS / THREAD_GROUP_SIZE;
  static constexpr int NUM_WARPS = NUM_THREADS / WARP_SIZE;
  static constexpr int x = 16 / static_cast<int>(sizeof(scalar_t));  // key_cache's last extent
  static constexpr int widest_vec() {
    int v = x;
    while (v > 1 && HEAD_SIZE % (THREAD_GROUP_SIZE * v) != 0) v /= 2;
    return v;
  }
  static constexpr int VEC_SIZE = widest_vec();
  static constexpr int NUM_ELEMS_PER_THREAD = HEAD_SIZE / THREAD_GROUP_SIZE;
  static constexpr int NUM_VECS_PER_THREAD = NUM_ELEMS_PER_THREAD / VEC_SIZE;
  // The key loop keeps the next cache block's keys in a second register buffer, loaded before
  // the current block's dot product, when the two buffers fit in 64 registers (128 bytes each):
  // fp16/bf16 at head 128 over 2-thread groups (block 16), the benchmarked shapes. Larger
  // per-thread keys (block 32, head 256, float32) load one block at a time instead of spilling.
  static constexpr bool DOUBLE_BUFFER_KEYS =
      NUM_ELEMS_PER_THREAD * static_cast<int>(sizeof(scalar_t)) <= 128;  // 32 registers each
  // weights times V: a lane reads V_VEC_SIZE tokens of one dimension (16 bytes) at a time;
  // NUM_V_VECS_PER_ROW lanes cover one row of a block, a warp NUM_ROWS_PER_ITER rows per pass,
  // and NUM_ROWS_PER_THREAD passes cover the head.
  static constexpr int V_VEC_SIZE = imin(16 / static_cast<int>(sizeof(scalar_t)), BLOCK_SIZE);
  static constexpr int NUM_V_VECS_PER_ROW = BLOCK_SIZE / V_VEC_SIZE;
  static constexpr int NUM_ROWS_PER_ITER = WARP_SIZE / NUM_V_VECS_PER_ROW;
  static constexpr int NUM_ROWS_PER_THREAD = ceil_div(HEAD_SIZE, NUM_ROWS_PER_ITER);

  using Q_vec = Vec<scalar_t, VEC_SIZE>;
  using K_vec = Vec<scalar_t, VEC_SIZE>;
  using V_vec = Vec<scalar_t, V_VEC_SIZE>;
  /// One thread's share of one token's key, in registers: [NUM_VECS_PER_THREAD] vecs.
  struct KeyVecs {
    K_vec vecs[NUM_VECS_PER_THREAD];
  };
  /// The query in shared memory, [THREAD_GROUP_SIZE, NUM_VECS_PER_THREAD]: row r holds the vecs
  /// that a group's rank-r thread multiplies (vec r, r + THREAD_GROUP_SIZE, ...).
  using QueryVecs = Q_vec[THREAD_GROUP_SIZE][NUM_VECS_PER_THREAD];

  static_assert(NUM_THREADS % WARP_SIZE == 0, "whole warps");
  static_assert(WARP_SIZE % BLOCK_SIZE == 0, "one warp covers one cache block");
  static_assert(x % VEC_SIZE == 0, "a vec never straddles two x-chunks of the key cache");
  static_assert(HEAD_SIZE % (THREAD_GROUP_SIZE * VEC_SIZE) == 0, "whole vecs per thread");
};
/// [decode_geometry]

/// [decode_thread]
/// Who this thread is in lab 05's geometry, and the per-block steps of lab 05's kernel.
template <typename scalar_t, int HEAD_SIZE, int BLOCK_SIZE, int NUM_THREADS>
struct DecodeThread : DecodeGeometry<scalar_t, HEAD_SIZE, BLOCK_SIZE, NUM_THREADS> {
  using G = DecodeGeometry<scalar_t, HEAD_SIZE, BLOCK_SIZE, NUM_THREADS>;

  int thread_idx;            // < NUM_THREADS
  int warp_idx;              // < NUM_WARPS
  int lane;                  // < WARP_SIZE
  int thread_group_idx;      // block-wide, < NUM_THREAD_GROUPS
  int thread_group_offset;   // rank inside the group, < THREAD_GROUP_SIZE
  int thread_group_in_warp;  // the row of a cache block this group takes, < BLOCK_SIZE

  __device__ DecodeThread()
      : thread_idx(static_cast<int>(threadIdx.x)),
        warp_idx(thread_idx / WARP_SIZE),
        lane(thread_idx % WARP_SIZE),
        thread_group_idx(thread_idx / G::THREAD_GROUP_SIZE),
        thread_group_offset(thread_idx % G::THREAD_GROUP_SIZE),
        thread_group_in_warp(lane / G::THREAD_GROUP_SIZE) {}

  /// Copies the query q_ptr[0, HEAD_SIZE) into q_vecs (shared memory); every thread of the
  /// block takes part, and a __syncthreads() must separate this from any read of q_vecs.
  __device__ void load_query(typename G::QueryVecs& q_vecs, const scalar_t* q_ptr) const {
    for (int i = thread_group_idx; i < G::NUM_VECS_PER_THREAD; i += G::NUM_THREAD_GROUPS) {
      const int vec_idx = thread_group_offset + i * G::THREAD_GROUP_SIZE;
      q_vecs[thread_group_offset][i] =
          *reinterpret_cast<const typename G::Q_vec*>(q_ptr + vec_idx * G::VEC_SIZE);
    }
  }

  /// Issues the loads of this thread's share of the key in row thread_group_in_warp of one
  /// cache block into `keys` and returns at once: nothing reads them until qk. k_block:
  /// key_cache[physical block, kv head], [HEAD_SIZE / x, BLOCK_SIZE, x].
  __device__ void load_keys(typename G::KeyVecs& keys, const scalar_t* k_block) const {
    const scalar_t* k_ptr = k_block + thread_group_in_warp * G::x;  // [HEAD_SIZE / x, ., x]
#pragma unroll
    for (int j = 0; j < G::NUM_VECS_PER_THREAD; ++j) {
      const int d = (thread_group_offset + j * G::THREAD_GROUP_SIZE) * G::VEC_SIZE;  // first dim
      keys.vecs[j] = *reinterpret_cast<const typename G::K_vec*>(
          k_ptr + (d / G::x) * BLOCK_SIZE * G::x + d % G::x);
    }
  }

  /// Returns scale * (q · k) for the key `keys` holds (load_keys), on every thread of the group.
  /// The row may lie past the sequence's end: masking the result is the caller's business.
  __device__ float qk(const typename G::QueryVecs& q_vecs, const typename G::KeyVecs& keys,
                      float scale) const {
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < G::NUM_VECS_PER_THREAD; ++j) {
      sum += dot(q_vecs[thread_group_offset][j], keys.vecs[j]);
    }
#pragma unroll
    for (int lane_mask = G::THREAD_GROUP_SIZE / 2; lane_mask >= 1; lane_mask >>= 1) {
      sum += __shfl_xor_sync(FULL_MASK, sum, lane_mask);
    }
    return sum * scale;
  }

  /// load_keys then qk: one cache block's logit with its loads not overlapped with anything.
  __device__ float qk(const typename G::QueryVecs& q_vecs, const scalar_t* k_block,
                      float scale) const {
    typename G::KeyVecs keys;
    load_keys(keys, k_block);
    return qk(q_vecs, keys, scale);
  }

  /// The first of the V_VEC_SIZE columns (tokens of a cache block) this lane reads.
  __device__ int v_column() const { return (lane % G::NUM_V_VECS_PER_ROW) * G::V_VEC_SIZE; }

  /// The row (head dimension) this lane reads in pass i; a row >= HEAD_SIZE does not exist.
  __device__ int v_row(int i) const {
    return lane / G::NUM_V_VECS_PER_ROW + i * G::NUM_ROWS_PER_ITER;
  }

  /// True for the one lane of each row that holds the row's sum after fold_row_lanes.
  __device__ bool v_row_leader() const { return lane % G::NUM_V_VECS_PER_ROW == 0; }

  /// accs[i] += sum_j weights[v_column() + j] * v_block[v_row(i), v_column() + j] over this
  /// lane's V_VEC_SIZE columns, for every pass i. A column >= valid_tokens counts as 0 and its
  /// value never enters the sum (its row may hold NaN, and 0 * NaN is NaN).
  /// weights: [BLOCK_SIZE] this block's weights (shared memory); v_block: value_cache[physical
  /// block, kv head], [HEAD_SIZE, BLOCK_SIZE].
  __device__ void accumulate_values(float (&accs)[G::NUM_ROWS_PER_THREAD], const float* weights,
                                    const scalar_t* v_block, int valid_tokens) const {
    const int column = v_column();
    float w[G::V_VEC_SIZE];  // [V_VEC_SIZE] the weights of this lane's columns
#pragma unroll
    for (int j = 0; j < G::V_VEC_SIZE; ++j) w[j] = weights[column + j];
#pragma unroll
    for (int i = 0; i < G::NUM_ROWS_PER_THREAD; ++i) {
      const int row = v_row(i);
      if (row < HEAD_SIZE) {
        const typename G::V_vec v =
            *reinterpret_cast<const typename G::V_vec*>(v_block + row * BLOCK_SIZE + column);
        float acc = 0.f;
#pragma unroll
        for (int j = 0; j < G::V_VEC_SIZE; ++j) {
          acc += w[j] * (column + j < valid_tokens ? to_float(v.val[j]) : 0.f);
        }
        accs[i] += acc;
      }
    }
  }

  /// Adds together the lanes that share a row (XOR shuffles): afterwards each row's leader
  /// holds its warp's sum for that row.
  __device__ void fold_row_lanes(float (&accs)[G::NUM_ROWS_PER_THREAD]) const {
#pragma unroll
    for (int i = 0; i < G::NUM_ROWS_PER_THREAD; ++i) {
#pragma unroll
      for (int lane_mask = G::NUM_V_VECS_PER_ROW / 2; lane_mask >= 1; lane_mask >>= 1) {
        accs[i] += __shfl_xor_sync(FULL_MASK, accs[i], lane_mask);
      }
    }
  }
};
/// [decode_thread]

/// [block_reductions]
/// Returns the largest `v` over the thread block, on every thread: a butterfly inside each warp,
/// lane 0 parks its warp's value in red_smem[warp], a __syncthreads(), then every warp folds
/// the NUM_WARPS values the same way. red_smem: [NUM_WARPS] shared floats of this call alone.
template <int NUM_WARPS>
__device__ __forceinline__ float block_max(float* red_smem, float v) {
  const int warp_idx = static_cast<int>(threadIdx.x) / WARP_SIZE;
  const int lane = static_cast<int>(threadIdx.x) % WARP_SIZE;
#pragma unroll
  for (int lane_mask = WARP_SIZE / 2; lane_mask >= 1; lane_mask >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, lane_mask));
  }
  if (lane == 0) red_smem[warp_idx] = v;
  __syncthreads();
  v = lane < NUM_WARPS ? red_smem[lane] : -FLT_MAX;
#pragma unroll
  for (int lane_mask = NUM_WARPS / 2; lane_mask >= 1; lane_mask >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, lane_mask));
  }
  return __shfl_sync(FULL_MASK, v, 0);
}

/// Returns the sum of `v` over the thread block, on every thread, folded in the same fixed
/// order as block_max (so the result does not depend on which thread runs first). Every write
/// to shared memory made before the call is visible to every thread after it (it passes a
/// __syncthreads()). red_smem: [NUM_WARPS] shared floats of this call alone.
template <int NUM_WARPS>
__device__ __forceinline__ float block_sum(float* red_smem, float v) {
  const int warp_idx = static_cast<int>(threadIdx.x) / WARP_SIZE;
  const int lane = static_cast<int>(threadIdx.x) % WARP_SIZE;
#pragma unroll
  for (int lane_mask = WARP_SIZE / 2; lane_mask >= 1; lane_mask >>= 1) {
    v += __shfl_xor_sync(FULL_MASK, v, lane_mask);
  }
  if (lane == 0) red_smem[warp_idx] = v;
  __syncthreads();
  v = lane < NUM_WARPS ? red_smem[lane] : 0.f;
#pragma unroll
  for (int lane_mask = NUM_WARPS / 2; lane_mask >= 1; lane_mask >>= 1) {
    v += __shfl_xor_sync(FULL_MASK, v, lane_mask);
  }
  return __shfl_sync(FULL_MASK, v, 0);
}
/// [block_reductions]

}  // namespace
}  // namespace pa::cuda_v2::SIMT_BACKEND

// Lab 05 — vLLM's paged_attention_v1 and reshape_and_cache: the reference solution, one file.
//
//   cmake --preset solution && cmake --build --preset solution --target lab05
//   ctest --preset solution -L lab05                       # emulator (and CUDA if a GPU is there)
//   SIMT_SCHEDULE=reverse ctest --preset solution -L lab05  # the emulator's warps in reverse order
//
// This file is CUDA C++ and is compiled twice: by nvcc into namespace pa::cuda_v1::cuda (the GPU
// backend, when CMake finds a CUDA compiler) and by the host compiler against the SIMT emulator
// into pa::cuda_v1::emu (always). simt/cuda.hpp supplies threadIdx, __syncthreads, the warp
// shuffles and simt::launch on both. Read it top to bottom: vector helpers, the cache writer,
// the attention kernel, the launchers.
#include <cfloat>
#include <cstdint>
#include <string>

#include "paged_attention_v1.hpp"
#include "simt/cuda.hpp"

namespace pa::cuda_v1::SIMT_BACKEND {
namespace {

// =============================================================================================
// Vector types and index helpers
// =============================================================================================

constexpr int WARP_SIZE = kWarpSize;
constexpr unsigned FULL_MASK = 0xffffffffu;

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int imax(int a, int b) { return a > b ? a : b; }
__host__ __device__ constexpr int imin(int a, int b) { return a < b ? a : b; }

/// N consecutive elements that move as one load: with N * sizeof(T) == 16 a thread fetches
/// them in a single 128-bit transaction (alignas makes the compiler emit exactly that).
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T val[N];
};

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

__device__ __forceinline__ void from_float(float& dst, float v) { dst = v; }
__device__ __forceinline__ void from_float(__half& dst, float v) { dst = __float2half_rn(v); }
__device__ __forceinline__ void from_float(__nv_bfloat16& dst, float v) {
  dst = __float2bfloat16_rn(v);
}

/// sum_i a[i] * b[i], multiplied and accumulated in float32 whatever T is.
template <typename T, int N>
__device__ __forceinline__ float dot(const Vec<T, N>& a, const Vec<T, N>& b) {
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < N; ++i) sum += to_float(a.val[i]) * to_float(b.val[i]);
  return sum;
}

// =============================================================================================
// Kernel 1: reshape_and_cache — scatter this step's K and V into the paged caches
// =============================================================================================

/// [reshape_and_cache_kernel]
// grid (num_tokens), block (min(num_kv_heads * head_size, 512)): one thread block per token, its
// threads striding over the token's num_kv_heads * head_size elements.
template <typename scalar_t>
__global__ void reshape_and_cache_kernel(
    const scalar_t* __restrict__ key,          // [num_tokens, num_kv_heads, head_size]
    const scalar_t* __restrict__ value,        // [num_tokens, num_kv_heads, head_size]
    // [num_blocks, num_kv_heads, head_size/x, block_size, x]
    scalar_t* __restrict__ key_cache,
    scalar_t* __restrict__ value_cache,        // [num_blocks, num_kv_heads, head_size, block_size]
    const std::int64_t* __restrict__ slot_mapping,  // [num_tokens]
    const int key_stride, const int value_stride, const int num_kv_heads, const int head_size,
    const int block_size, const int x) {
  const std::int64_t token_idx = blockIdx.x;
  const std::int64_t slot_idx = slot_mapping[token_idx];
  if (slot_idx < 0) return;  // a padding token: nothing to store

  const std::int64_t block_idx = slot_idx / block_size;     // physical block
  const std::int64_t block_offset = slot_idx % block_size;  // row inside it
  const int n = num_kv_heads * head_size;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int head_idx = i / head_size;
    const int head_offset = i % head_size;  // the dimension d
    const int x_idx = head_offset / x;      // which 16-byte chunk of the key
    const int x_offset = head_offset % x;   // which element of that chunk

    // key_cache[block_idx, head_idx, x_idx, block_offset, x_offset]
    const std::int64_t key_dst =
        (((block_idx * num_kv_heads + head_idx) * (head_size / x) + x_idx) * block_size +
         block_offset) * x + x_offset;
    // value_cache[block_idx, head_idx, head_offset, block_offset]
    const std::int64_t value_dst =
        ((block_idx * num_kv_heads + head_idx) * head_size + head_offset) * block_size +
        block_offset;
    key_cache[key_dst] = key[token_idx * key_stride + i];
    value_cache[value_dst] = value[token_idx * value_stride + i];
  }
}
/// [reshape_and_cache_kernel]

// =============================================================================================
// Kernel 2: paged_attention_v1 — one thread block per (query head, sequence)
// =============================================================================================

/// [block_reduce]
// The cross-warp half of a block-wide sum: every warp folds its 32 lanes with a butterfly of
// shuffles, lane 0 parks the warp's total in red_smem[warp], and after a barrier each warp
// reads the NUM_WARPS partials back and folds them the same way. Every thread gets the total.
template <int NUM_WARPS>
__device__ __forceinline__ float block_sum(float* red_smem,  // [NUM_WARPS]
                                           float sum) {
  const int warp_idx = threadIdx.x / WARP_SIZE;
  const int lane = threadIdx.x % WARP_SIZE;
#pragma unroll
  for (int lane_mask = WARP_SIZE / 2; lane_mask >= 1; lane_mask >>= 1) {
    sum += __shfl_xor_sync(FULL_MASK, sum, lane_mask);
  }
  if (lane == 0) red_smem[warp_idx] = sum;
  __syncthreads();
  sum = lane < NUM_WARPS ? red_smem[lane] : 0.f;
#pragma unroll
  for (int lane_mask = NUM_WARPS / 2; lane_mask >= 1; lane_mask >>= 1) {
    sum += __shfl_xor_sync(FULL_MASK, sum, lane_mask);
  }
  return __shfl_sync(FULL_MASK, sum, 0);
}
/// [block_reduce]

/// [paged_attention_v1_kernel]
// grid (num_heads, num_seqs), block (NUM_THREADS); dynamic shared memory: v1_shared_mem_bytes().
template <typename scalar_t, int HEAD_SIZE, int BLOCK_SIZE, int NUM_THREADS>
__global__ void __launch_bounds__(NUM_THREADS) paged_attention_v1_kernel(
    scalar_t* __restrict__ out,              // [num_seqs, num_heads, HEAD_SIZE]
    const scalar_t* __restrict__ q,          // [num_seqs, num_heads, HEAD_SIZE]
    // [num_blocks, num_kv_heads, HEAD_SIZE/x, BLOCK_SIZE, x]
    const scalar_t* __restrict__ k_cache,
    const scalar_t* __restrict__ v_cache,    // [num_blocks, num_kv_heads, HEAD_SIZE, BLOCK_SIZE]
    const int num_kv_heads, const float scale,
    const int* __restrict__ block_tables,    // [num_seqs, max_num_blocks_per_seq]
    const int* __restrict__ seq_lens,        // [num_seqs]
    const int max_num_blocks_per_seq, const int q_stride, const int kv_block_stride,
    const int kv_head_stride) {
  // ---- Step 0: the geometry (compile-time) and who this thread is ------------------------
  // A thread group is the THREAD_GROUP_SIZE threads that share one key token; a warp's thread
  // groups cover one cache block, one token each.
  constexpr int THREAD_GROUP_SIZE = imax(WARP_SIZE / BLOCK_SIZE, 1);
  constexpr int NUM_THREAD_GROUPS = NUM_THREADS / THREAD_GROUP_SIZE;
  constexpr int NUM_WARPS = NUM_THREADS / WARP_SIZE;
  // A thread group reads 16 bytes of q and of k per step: VEC_SIZE elements per thread.
  constexpr int VEC_SIZE = imax(16 / (THREAD_GROUP_SIZE * static_cast<int>(sizeof(scalar_t))), 1);
  constexpr int NUM_ELEMS_PER_THREAD = HEAD_SIZE / THREAD_GROUP_SIZE;
  constexpr int NUM_VECS_PER_THREAD = NUM_ELEMS_PER_THREAD / VEC_SIZE;
  constexpr int x = 16 / static_cast<int>(sizeof(scalar_t));  // key_cache's innermost extent
  static_assert(WARP_SIZE % BLOCK_SIZE == 0, "one warp covers one cache block");
  static_assert(x % VEC_SIZE == 0, "a vec never straddles two x-chunks of the key cache");
  static_assert(HEAD_SIZE % (THREAD_GROUP_SIZE * VEC_SIZE) == 0, "whole vecs per thread");

  const int head_idx = blockIdx.x;
  const int num_heads = gridDim.x;
  const int seq_idx = blockIdx.y;
  const int thread_idx = threadIdx.x;
  const int warp_idx = thread_idx / WARP_SIZE;
  const int lane = thread_idx % WARP_SIZE;
  const int thread_group_idx = thread_idx / THREAD_GROUP_SIZE;     // 0 .. NUM_THREAD_GROUPS-1
  const int thread_group_offset = thread_idx % THREAD_GROUP_SIZE;  // rank inside the group
  // GQA: num_heads / num_kv_heads consecutive query heads share one kv head.
  const int kv_head_idx = head_idx / (num_heads / num_kv_heads);

  const int seq_len = seq_lens[seq_idx];
  const int num_seq_blocks = ceil_div(seq_len, BLOCK_SIZE);
  const int* block_table = block_tables + seq_idx * max_num_blocks_per_seq;  // [max_num_blocks]

  // ---- Step 1: the query, once, into shared memory ---------------------------------------
  // Row r of q_vecs holds the vecs of group rank r: r, r + G, r + 2G, ... (G = group size), so
  // neighbouring threads load neighbouring 16-byte pieces of q.
  using Q_vec = Vec<scalar_t, VEC_SIZE>;
  using K_vec = Vec<scalar_t, VEC_SIZE>;
  __shared__ Q_vec q_vecs[THREAD_GROUP_SIZE][NUM_VECS_PER_THREAD];  // [G, HEAD_SIZE / (G*VEC)]
  const scalar_t* q_ptr = q + seq_idx * q_stride + head_idx * HEAD_SIZE;  // [HEAD_SIZE]
  for (int i = thread_group_idx; i < NUM_VECS_PER_THREAD; i += NUM_THREAD_GROUPS) {
    const int vec_idx = thread_group_offset + i * THREAD_GROUP_SIZE;
    q_vecs[thread_group_offset][i] = *reinterpret_cast<const Q_vec*>(q_ptr + vec_idx * VEC_SIZE);
  }
  __syncthreads();  // every thread reads every row of q_vecs below

  // ---- Step 2: q·k for every token, logits into dynamic shared memory --------------------
  SIMT_DYNAMIC_SHARED(float, shared_mem);
  float* logits = shared_mem;                   // [num_seq_blocks * BLOCK_SIZE]
  __shared__ float red_smem[2 * NUM_WARPS];     // [max partials | sum partials]

  float qk_max = -FLT_MAX;  // this thread's running max (meaningful on group rank 0)
  const int token_in_block = lane / THREAD_GROUP_SIZE;  // this group's row of each cache block
  for (int block_idx = warp_idx; block_idx < num_seq_blocks; block_idx += NUM_WARPS) {
    const std::int64_t physical_block_number = block_table[block_idx];
    const int token_idx = block_idx * BLOCK_SIZE + token_in_block;
    // key_cache[physical_block_number, kv_head_idx, :, token_in_block, :]
    const scalar_t* k_ptr = k_cache + physical_block_number * kv_block_stride +
                            kv_head_idx * kv_head_stride + token_in_block * x;
    K_vec k_vecs[NUM_VECS_PER_THREAD];
#pragma unroll
    for (int j = 0; j < NUM_VECS_PER_THREAD; ++j) {
      const int d = (thread_group_offset + j * THREAD_GROUP_SIZE) * VEC_SIZE;  // first dim
      // dims d .. d+VEC_SIZE-1 sit in x-chunk d / x, at offset d % x of this token's row
      k_vecs[j] = *reinterpret_cast<const K_vec*>(k_ptr + (d / x) * BLOCK_SIZE * x + d % x);
    }
    // Each thread holds a slice of the dot product; the group's butterfly adds the slices so
    // that every member ends with the whole q·k.
    float qk = 0.f;
#pragma unroll
    for (int j = 0; j < NUM_VECS_PER_THREAD; ++j) {
      qk += dot(q_vecs[thread_group_offset][j], k_vecs[j]);
    }
#pragma unroll
    for (int lane_mask = THREAD_GROUP_SIZE / 2; lane_mask >= 1; lane_mask >>= 1) {
      qk += __shfl_xor_sync(FULL_MASK, qk, lane_mask);
    }
    qk *= scale;
    if (thread_group_offset == 0) {
      // Rows past seq_len in the last block hold stale data (or NaN): store 0, keep the max.
      const bool past_end = token_idx >= seq_len;
      logits[token_idx] = past_end ? 0.f : qk;
      qk_max = past_end ? qk_max : fmaxf(qk_max, qk);
    }
  }

  // ---- Step 3: reduction 1, the block-wide max of the logits -----------------------------
  // Inside a warp: butterfly over the group leaders (masks below THREAD_GROUP_SIZE would only
  // fold a group into itself). Across warps: through red_smem[0 .. NUM_WARPS).
#pragma unroll
  for (int lane_mask = WARP_SIZE / 2; lane_mask >= THREAD_GROUP_SIZE; lane_mask >>= 1) {
    qk_max = fmaxf(qk_max, __shfl_xor_sync(FULL_MASK, qk_max, lane_mask));
  }
  if (lane == 0) red_smem[warp_idx] = qk_max;
  __syncthreads();  // also publishes every warp's logits to the loop below
  qk_max = lane < NUM_WARPS ? red_smem[lane] : -FLT_MAX;
#pragma unroll
  for (int lane_mask = NUM_WARPS / 2; lane_mask >= 1; lane_mask >>= 1) {
    qk_max = fmaxf(qk_max, __shfl_xor_sync(FULL_MASK, qk_max, lane_mask));
  }
  qk_max = __shfl_sync(FULL_MASK, qk_max, 0);

  // ---- Step 4: reduction 2, exponentials and their block-wide sum ------------------------
  float exp_sum = 0.f;
  for (int i = thread_idx; i < seq_len; i += NUM_THREADS) {
    const float e = __expf(logits[i] - qk_max);
    logits[i] = e;
    exp_sum += e;
  }
  exp_sum = block_sum<NUM_WARPS>(&red_smem[NUM_WARPS], exp_sum);
  const float inv_sum = __fdividef(1.f, exp_sum);
  for (int i = thread_idx; i < seq_len; i += NUM_THREADS) logits[i] *= inv_sum;
  __syncthreads();  // the V loop reads probabilities that other threads just wrote

  // ---- Step 5: probabilities times V, per warp -------------------------------------------
  // value_cache rows are dimensions, columns tokens: a thread reads V_VEC_SIZE tokens of one
  // dimension in one load. NUM_V_VECS_PER_ROW lanes cover one row of a block, so a warp covers
  // NUM_ROWS_PER_ITER rows at a time and NUM_ROWS_PER_THREAD passes cover the head.
  constexpr int V_VEC_SIZE = imin(16 / static_cast<int>(sizeof(scalar_t)), BLOCK_SIZE);
  using V_vec = Vec<scalar_t, V_VEC_SIZE>;
  constexpr int NUM_V_VECS_PER_ROW = BLOCK_SIZE / V_VEC_SIZE;
  constexpr int NUM_ROWS_PER_ITER = WARP_SIZE / NUM_V_VECS_PER_ROW;
  constexpr int NUM_ROWS_PER_THREAD = ceil_div(HEAD_SIZE, NUM_ROWS_PER_ITER);

  float accs[NUM_ROWS_PER_THREAD];  // [NUM_ROWS_PER_THREAD] partial out[row] of this thread
#pragma unroll
  for (int i = 0; i < NUM_ROWS_PER_THREAD; ++i) accs[i] = 0.f;

  const int v_token_offset = (lane % NUM_V_VECS_PER_ROW) * V_VEC_SIZE;  // first column read
  for (int block_idx = warp_idx; block_idx < num_seq_blocks; block_idx += NUM_WARPS) {
    const std::int64_t physical_block_number = block_table[block_idx];
    const int token_idx = block_idx * BLOCK_SIZE + v_token_offset;
    float probs[V_VEC_SIZE];  // [V_VEC_SIZE] softmax weights of tokens token_idx ..
#pragma unroll
    for (int j = 0; j < V_VEC_SIZE; ++j) probs[j] = logits[token_idx + j];
    // value_cache[physical_block_number, kv_head_idx, :, :]
    const scalar_t* v_ptr =
        v_cache + physical_block_number * kv_block_stride + kv_head_idx * kv_head_stride;
#pragma unroll
    for (int i = 0; i < NUM_ROWS_PER_THREAD; ++i) {
      const int row_idx = lane / NUM_V_VECS_PER_ROW + i * NUM_ROWS_PER_ITER;
      if (row_idx < HEAD_SIZE) {
        const V_vec v_vec =
            *reinterpret_cast<const V_vec*>(v_ptr + row_idx * BLOCK_SIZE + v_token_offset);
        float acc = 0.f;
#pragma unroll
        for (int j = 0; j < V_VEC_SIZE; ++j) {
          // A weight of 0 does not cancel a NaN: tokens past seq_len must not be read at all.
          const float v = token_idx + j < seq_len ? to_float(v_vec.val[j]) : 0.f;
          acc += probs[j] * v;
        }
        accs[i] += acc;
      }
    }
  }

  // ---- Step 6: fold the lanes that share a row, then the warps ---------------------------
#pragma unroll
  for (int i = 0; i < NUM_ROWS_PER_THREAD; ++i) {
    float acc = accs[i];
#pragma unroll
    for (int lane_mask = NUM_V_VECS_PER_ROW / 2; lane_mask >= 1; lane_mask >>= 1) {
      acc += __shfl_xor_sync(FULL_MASK, acc, lane_mask);
    }
    accs[i] = acc;
  }

  __syncthreads();  // every warp is done with the logits: their memory becomes out_smem
  float* out_smem = shared_mem;  // [NUM_WARPS / 2, HEAD_SIZE]
  const bool row_leader = lane % NUM_V_VECS_PER_ROW == 0;
#pragma unroll
  for (int active = NUM_WARPS; active > 1; active /= 2) {
    const int mid = active / 2;
    if (warp_idx >= mid && warp_idx < active) {  // the upper half hands its rows down
      float* dst = &out_smem[(warp_idx - mid) * HEAD_SIZE];
#pragma unroll
      for (int i = 0; i < NUM_ROWS_PER_THREAD; ++i) {
        const int row_idx = lane / NUM_V_VECS_PER_ROW + i * NUM_ROWS_PER_ITER;
        if (row_idx < HEAD_SIZE && row_leader) dst[row_idx] = accs[i];
      }
    }
    __syncthreads();
    if (warp_idx < mid) {  // the lower half adds them
      const float* src = &out_smem[warp_idx * HEAD_SIZE];
#pragma unroll
      for (int i = 0; i < NUM_ROWS_PER_THREAD; ++i) {
        const int row_idx = lane / NUM_V_VECS_PER_ROW + i * NUM_ROWS_PER_ITER;
        if (row_idx < HEAD_SIZE && row_leader) accs[i] += src[row_idx];
      }
    }
    __syncthreads();
  }

  // ---- Step 7: warp 0 writes out[seq_idx, head_idx, :] -----------------------------------
  if (warp_idx == 0) {
    scalar_t* out_ptr =
        out + (static_cast<std::int64_t>(seq_idx) * num_heads + head_idx) * HEAD_SIZE;
#pragma unroll
    for (int i = 0; i < NUM_ROWS_PER_THREAD; ++i) {
      const int row_idx = lane / NUM_V_VECS_PER_ROW + i * NUM_ROWS_PER_ITER;
      if (row_idx < HEAD_SIZE && row_leader) from_float(out_ptr[row_idx], accs[i]);
    }
  }
}
/// [paged_attention_v1_kernel]

// =============================================================================================
// The launchers: host tensors -> device buffers -> kernel -> host tensors
// =============================================================================================

template <typename T>
simt::DeviceBuffer<T> to_device(const Tensor& t) {
  simt::DeviceBuffer<T> buffer(static_cast<std::size_t>(t.numel()));
  buffer.upload(t.data_as<T>(), buffer.size());
  return buffer;
}

template <typename T>
void to_host(const simt::DeviceBuffer<T>& buffer, Tensor& t) {
  buffer.download(t.data_as<T>(), buffer.size());
}

/// Calls f(std::type_identity<scalar_t>{}) with the device type of `dtype`.
template <class F>
void with_scalar_t(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(std::type_identity<float>{});
    case DType::kFloat16: return f(std::type_identity<__half>{});
    case DType::kBFloat16: return f(std::type_identity<__nv_bfloat16>{});
    default: throw std::logic_error("with_scalar_t: not an activation dtype (checks missed it)");
  }
}

/// One instantiation of the attention kernel: element type, head size and block size.
template <typename T, int HEAD, int BLOCK>
struct V1Config {
  using scalar_t = T;
  static constexpr int head_size = HEAD;
  static constexpr int block_size = BLOCK;
};

template <typename scalar_t, int BLOCK_SIZE, class F>
void with_head_size(int head_size, F&& f) {
  switch (head_size) {
    case 64: return f(V1Config<scalar_t, 64, BLOCK_SIZE>{});
    case 80: return f(V1Config<scalar_t, 80, BLOCK_SIZE>{});
    case 96: return f(V1Config<scalar_t, 96, BLOCK_SIZE>{});
    case 112: return f(V1Config<scalar_t, 112, BLOCK_SIZE>{});
    case 128: return f(V1Config<scalar_t, 128, BLOCK_SIZE>{});
    case 256: return f(V1Config<scalar_t, 256, BLOCK_SIZE>{});
    default: throw std::logic_error("with_head_size: unsupported head size (checks missed it)");
  }
}

/// Calls f(V1Config<scalar_t, HEAD_SIZE, BLOCK_SIZE>{}) for the runtime sizes: the only place
/// that names every supported instantiation.
template <class F>
void with_v1_config(DType dtype, int head_size, int block_size, F&& f) {
  with_scalar_t(dtype, [&](auto scalar) {
    using scalar_t = typename decltype(scalar)::type;
    switch (block_size) {
      case 8: return with_head_size<scalar_t, 8>(head_size, f);
      case 16: return with_head_size<scalar_t, 16>(head_size, f);
      case 32: return with_head_size<scalar_t, 32>(head_size, f);
      default: throw std::logic_error("with_v1_config: unsupported block size (checks missed it)");
    }
  });
}

template <class Config>
constexpr auto v1_kernel() {
  return &paged_attention_v1_kernel<typename Config::scalar_t, Config::head_size,
                                    Config::block_size, kNumThreads>;
}

/// The dynamic shared memory this instantiation may use on this device, in bytes.
template <class Config>
std::size_t v1_shared_mem_limit() {
  return simt::max_dynamic_shared_bytes(v1_kernel<Config>());
}

/// The longest context whose logits (padded to whole blocks) fit in `limit_bytes`.
int tokens_within(std::size_t limit_bytes, int block_size) {
  const std::size_t floats = limit_bytes / sizeof(float);
  return static_cast<int>(floats / static_cast<std::size_t>(block_size)) * block_size;
}

}  // namespace

/// [reshape_and_cache]
void reshape_and_cache(const Tensor& key, const Tensor& value, Tensor& key_cache,
                       Tensor& value_cache, const Tensor& slot_mapping) {
  checks::reshape_and_cache(key, value, key_cache, value_cache, slot_mapping);
  const int num_tokens = static_cast<int>(key.size(0));
  const int num_kv_heads = static_cast<int>(key.size(1));
  const int head_size = static_cast<int>(key.size(2));
  const int block_size = static_cast<int>(key_cache.size(3));
  if (num_tokens == 0) return;
  with_scalar_t(key.dtype(), [&](auto scalar) {
    using scalar_t = typename decltype(scalar)::type;
    const auto d_key = to_device<scalar_t>(key);      // [num_tokens, num_kv_heads, head_size]
    const auto d_value = to_device<scalar_t>(value);  // [num_tokens, num_kv_heads, head_size]
    // [num_blocks, num_kv_heads, head_size/x, block_size, x]
    auto d_key_cache = to_device<scalar_t>(key_cache);
    // [num_blocks, num_kv_heads, head_size, block_size]
    auto d_value_cache = to_device<scalar_t>(value_cache);
    const auto d_slots = to_device<std::int64_t>(slot_mapping);  // [num_tokens]
    const int width = num_kv_heads * head_size;
    simt::launch(reshape_and_cache_kernel<scalar_t>, dim3(num_tokens), dim3(std::min(width, 512)),
                 0, d_key.data(), d_value.data(), d_key_cache.data(), d_value_cache.data(),
                 d_slots.data(), width, width, num_kv_heads, head_size, block_size,
                 x_of(key.dtype()));
    to_host(d_key_cache, key_cache);
    to_host(d_value_cache, value_cache);
  });
}
/// [reshape_and_cache]

/// [launcher]
void paged_attention_v1(Tensor& out, const Tensor& query, const Tensor& key_cache,
                        const Tensor& value_cache, int num_kv_heads, float scale,
                        const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                        int max_seq_len) {
  checks::paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, block_tables,
                             seq_lens, block_size, max_seq_len);
  const int num_seqs = static_cast<int>(query.size(0));
  const int num_heads = static_cast<int>(query.size(1));
  const int head_size = static_cast<int>(query.size(2));
  if (num_seqs == 0) return;

  with_v1_config(query.dtype(), head_size, block_size, [&](auto config) {
    using Config = decltype(config);
    using scalar_t = typename Config::scalar_t;
    const auto kernel = v1_kernel<Config>();

    // Shared memory: every logit of the longest sequence, bounded by what the device allows.
    const std::size_t shared_bytes = v1_shared_mem_bytes(head_size, block_size, max_seq_len);
    const std::size_t limit = v1_shared_mem_limit<Config>();
    checks::context_fits(max_seq_len, tokens_within(limit, block_size), limit,
                         SIMT_BACKEND_NAME);
    simt::set_max_dynamic_shared_bytes(kernel, shared_bytes);  // opt in past the 48 KiB default

    const auto d_query = to_device<scalar_t>(query);  // [num_seqs, num_heads, head_size]
    // [num_blocks, num_kv_heads, head_size/x, block_size, x]
    const auto d_key_cache = to_device<scalar_t>(key_cache);
    // [num_blocks, num_kv_heads, head_size, block_size]
    const auto d_value_cache = to_device<scalar_t>(value_cache);
    // [num_seqs, max_num_blocks_per_seq]
    const auto d_block_tables = to_device<std::int32_t>(block_tables);
    const auto d_seq_lens = to_device<std::int32_t>(seq_lens);  // [num_seqs]
    // [num_seqs, num_heads, head_size]
    simt::DeviceBuffer<scalar_t> d_out(static_cast<std::size_t>(out.numel()));
    d_out.fill_bytes(0xFF);  // NaN: an element the kernel forgets to write cannot pass

    const int kv_head_stride = head_size * block_size;
    const int kv_block_stride = num_kv_heads * kv_head_stride;
    simt::launch(kernel, dim3(num_heads, num_seqs), dim3(kNumThreads), shared_bytes,
                 d_out.data(), d_query.data(), d_key_cache.data(), d_value_cache.data(),
                 num_kv_heads, scale, d_block_tables.data(), d_seq_lens.data(),
                 static_cast<int>(block_tables.size(1)), num_heads * head_size, kv_block_stride,
                 kv_head_stride);
    to_host(d_out, out);
  });
}
/// [launcher]

int v1_max_seq_len(DType dtype, int head_size, int block_size) {
  checks::kernel_config(ArgCheck("v1_max_seq_len"), dtype, head_size, block_size);
  int tokens = 0;
  with_v1_config(dtype, head_size, block_size, [&](auto config) {
    tokens = tokens_within(v1_shared_mem_limit<decltype(config)>(), block_size);
  });
  return tokens;
}

int device_count() { return simt::cuda_device_count(); }

}  // namespace pa::cuda_v1::SIMT_BACKEND

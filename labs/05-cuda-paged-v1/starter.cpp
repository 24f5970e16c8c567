// Lab 05 — vLLM's paged_attention_v1 and reshape_and_cache. Your file: fill in the two kernel
// bodies, reshape_and_cache_kernel first, then paged_attention_v1_kernel step by step.
//
//   tools/lab grade 05                                     # build the starters and grade this lab
//   ctest --preset starter -L lab05                        # the same, by hand
//   SIMT_SCHEDULE=reverse ctest --preset starter -L lab05  # emulated threads in reverse order
//
// This file is CUDA C++ and is compiled twice: by nvcc for the GPU backend (when CMake finds a
// CUDA compiler) and by the host compiler against the SIMT emulator (always), so every test runs
// on your laptop. Everything except the two kernel bodies is given: the vector helpers, the
// not-implemented flag and the launchers. Read the chapter (README.md) first; its sections
// follow the TODO steps below one for one.
#include <cfloat>
#include <cstdint>
#include <string>
#include <utility>

#include "paged_attention_v1.hpp"
#include "pa/not_implemented.hpp"
#include "simt/cuda.hpp"

// The skeletons name parameters and variables before you use them; silence those warnings
// while the bodies are empty (delete this block once both kernels are written).
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-local-typedefs"
#if defined(__CUDACC__)
#pragma nv_diag_suppress 177  // nvcc: "variable was declared but never referenced"
#endif

namespace pa::cuda_v1::SIMT_BACKEND {
namespace {

// =============================================================================================
// Given: vector types and index helpers
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
// Given: how an unfinished kernel says so
// =============================================================================================
// A kernel cannot throw. Each skeleton below starts with PA_TODO_KERNEL(...): thread 0 of every
// block raises this device-side flag and all threads return at once. After each launch the
// launcher reads the flag back (cudaMemcpyFromSymbol on a GPU, a plain read on the emulator)
// and throws pa::NotImplemented on the host. Delete the PA_TODO_KERNEL line when you fill a body.
enum TodoKernel : int { kNoTodo = 0, kTodoReshapeAndCache = 1, kTodoPagedAttention = 2 };
__device__ int g_todo_kernel = kNoTodo;

#define PA_TODO_KERNEL(id)                        \
  do {                                            \
    if (threadIdx.x == 0) g_todo_kernel = (id);   \
    return;                                       \
  } while (0)

/// Throws pa::NotImplemented naming `kernel` if a skeleton ran since the last call.
void throw_if_todo(const char* kernel) {
  int flag = kNoTodo;
#if defined(__CUDACC__)
  const int reset = kNoTodo;
  if (cudaMemcpyFromSymbol(&flag, g_todo_kernel, sizeof flag) != cudaSuccess ||
      cudaMemcpyToSymbol(g_todo_kernel, &reset, sizeof reset) != cudaSuccess) {
    throw std::runtime_error("throw_if_todo: cannot read the device flag");
  }
#else
  flag = std::exchange(g_todo_kernel, kNoTodo);
#endif
  if (flag != kNoTodo) throw NotImplemented(kernel);
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
  PA_TODO_KERNEL(kTodoReshapeAndCache);  // delete this line when you write the body

  // TODO 1. This block's token is blockIdx.x; its slot is slot_mapping[token]. A negative slot
  //         is a padding token: return without writing anything.
  // TODO 2. The slot names physical block slot / block_size, row slot % block_size.
  // TODO 3. Stride i = threadIdx.x, threadIdx.x + blockDim.x, ... over the token's
  //         num_kv_heads * head_size elements; element i is head i / head_size, dimension
  //         d = i % head_size, and sits at key[token * key_stride + i] (value likewise).
  // TODO 4. Store it at value_cache[block, head, d, row] and at
  //         key_cache[block, head, d / x, row, d % x] — flatten both with int64 arithmetic.
}
/// [reshape_and_cache_kernel]

// =============================================================================================
// Kernel 2: paged_attention_v1 — one thread block per (query head, sequence)
// =============================================================================================

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
  PA_TODO_KERNEL(kTodoPagedAttention);  // delete this line when you write the body

  // ---- Step 0 (given): the geometry (compile-time) and who this thread is ----------------
  constexpr int THREAD_GROUP_SIZE = imax(WARP_SIZE / BLOCK_SIZE, 1);  // threads per key token
  constexpr int NUM_THREAD_GROUPS = NUM_THREADS / THREAD_GROUP_SIZE;
  constexpr int NUM_WARPS = NUM_THREADS / WARP_SIZE;
  constexpr int VEC_SIZE = imax(16 / (THREAD_GROUP_SIZE * static_cast<int>(sizeof(scalar_t))), 1);
  constexpr int NUM_ELEMS_PER_THREAD = HEAD_SIZE / THREAD_GROUP_SIZE;
  constexpr int NUM_VECS_PER_THREAD = NUM_ELEMS_PER_THREAD / VEC_SIZE;
  constexpr int x = 16 / static_cast<int>(sizeof(scalar_t));  // key_cache's innermost extent
  static_assert(WARP_SIZE % BLOCK_SIZE == 0, "one warp covers one cache block");
  static_assert(x % VEC_SIZE == 0, "a vec never straddles two x-chunks of the key cache");
  static_assert(HEAD_SIZE % (THREAD_GROUP_SIZE * VEC_SIZE) == 0, "whole vecs per thread");
  using Q_vec = Vec<scalar_t, VEC_SIZE>;
  using K_vec = Vec<scalar_t, VEC_SIZE>;

  const int head_idx = blockIdx.x;
  const int num_heads = gridDim.x;
  const int seq_idx = blockIdx.y;
  const int thread_idx = threadIdx.x;
  const int warp_idx = thread_idx / WARP_SIZE;
  const int lane = thread_idx % WARP_SIZE;
  const int thread_group_idx = thread_idx / THREAD_GROUP_SIZE;     // 0 .. NUM_THREAD_GROUPS-1
  const int thread_group_offset = thread_idx % THREAD_GROUP_SIZE;  // rank inside the group
  const int seq_len = seq_lens[seq_idx];
  const int num_seq_blocks = ceil_div(seq_len, BLOCK_SIZE);
  const int* block_table = block_tables + seq_idx * max_num_blocks_per_seq;  // [max_num_blocks]

  // TODO 0. kv_head_idx: the kv head this query head reads. num_heads / num_kv_heads
  //         consecutive query heads share one kv head (GQA; MHA is the case of 1).

  // TODO 1. The query into shared memory: __shared__ Q_vec q_vecs[THREAD_GROUP_SIZE]
  //         [NUM_VECS_PER_THREAD]. Row r holds the vecs a group's rank-r thread works on:
  //         vec r, r + THREAD_GROUP_SIZE, r + 2 * THREAD_GROUP_SIZE, ... of
  //         q[seq_idx, head_idx, :] (q_stride elements per sequence). The block's thread groups
  //         share the loading; then every thread reads every row: barrier.

  // TODO 2. q·k for every token. SIMT_DYNAMIC_SHARED(float, shared_mem); the logits live in it
  //         ([num_seq_blocks * BLOCK_SIZE] floats), and __shared__ float red_smem[2 * NUM_WARPS]
  //         holds the reductions' partials. Warp w takes logical blocks w, w + NUM_WARPS, ...;
  //         inside a block, thread group lane / THREAD_GROUP_SIZE takes that row (token).
  //         Physical block = block_table[logical block]. The group's rank-r thread loads its
  //         vecs j = 0 .. NUM_VECS_PER_THREAD-1: dimensions d = (r + j * THREAD_GROUP_SIZE) *
  //         VEC_SIZE onward, found at key_cache[block, kv_head_idx, d / x, row, d % x].
  //         Sum dot(q_vec, k_vec) over j, then add the group's partial sums together with
  //         __shfl_xor_sync (masks THREAD_GROUP_SIZE/2 .. 1), multiply by scale. Rank 0 stores
  //         the logit — 0 for rows at or past seq_len — and keeps its running qk_max of the
  //         real ones (start from -FLT_MAX).

  // TODO 3. Reduction 1, the block-wide max: a butterfly over the warp (masks 16 down to
  //         THREAD_GROUP_SIZE), lane 0 writes red_smem[warp_idx], barrier, each warp folds the
  //         NUM_WARPS partials the same way, then broadcast lane 0's value with __shfl_sync.

  // TODO 4. Reduction 2, the sum: for tokens i = thread_idx, thread_idx + NUM_THREADS, ... <
  //         seq_len replace logits[i] by __expf(logits[i] - qk_max) and add it to exp_sum; sum
  //         exp_sum over the block (as in TODO 3, through red_smem[NUM_WARPS ..]); scale every
  //         logit by 1 / exp_sum. Other threads read these probabilities next: barrier.

  // ---- Step 5 (given): the value-side geometry -------------------------------------------
  // value_cache rows are dimensions, columns tokens: a thread reads V_VEC_SIZE tokens of one
  // dimension in one load. NUM_V_VECS_PER_ROW lanes cover one row of a block, so a warp covers
  // NUM_ROWS_PER_ITER rows at a time and NUM_ROWS_PER_THREAD passes cover the head.
  constexpr int V_VEC_SIZE = imin(16 / static_cast<int>(sizeof(scalar_t)), BLOCK_SIZE);
  using V_vec = Vec<scalar_t, V_VEC_SIZE>;
  constexpr int NUM_V_VECS_PER_ROW = BLOCK_SIZE / V_VEC_SIZE;
  constexpr int NUM_ROWS_PER_ITER = WARP_SIZE / NUM_V_VECS_PER_ROW;
  constexpr int NUM_ROWS_PER_THREAD = ceil_div(HEAD_SIZE, NUM_ROWS_PER_ITER);

  // TODO 5. float accs[NUM_ROWS_PER_THREAD], zeroed. Warp w again takes logical blocks w,
  //         w + NUM_WARPS, ...; the lane reads the V_VEC_SIZE probabilities of columns
  //         (lane % NUM_V_VECS_PER_ROW) * V_VEC_SIZE onward, and for i < NUM_ROWS_PER_THREAD
  //         the row d = lane / NUM_V_VECS_PER_ROW + i * NUM_ROWS_PER_ITER (if d < HEAD_SIZE):
  //         one V_vec from value_cache[block, kv_head_idx, d, those columns]; accs[i] +=
  //         sum_j prob[j] * v[j]. A column at or past seq_len holds garbage (NaN in the
  //         tests), and 0 * NaN is NaN: use 0 for it instead of reading it into the sum.

  // TODO 6. Fold the lanes that share a row (__shfl_xor_sync, masks NUM_V_VECS_PER_ROW/2 .. 1),
  //         then the warps: barrier (the logits' memory becomes float out_smem[NUM_WARPS / 2]
  //         [HEAD_SIZE]), and halve the active warps each round — the upper half writes its
  //         rows, barrier, the lower half adds them, barrier.

  // TODO 7. Warp 0's row leaders (lane % NUM_V_VECS_PER_ROW == 0) write
  //         out[seq_idx, head_idx, d] with from_float.
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
    throw_if_todo("reshape_and_cache_kernel");
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
    throw_if_todo("paged_attention_v1_kernel");
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

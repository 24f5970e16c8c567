// Lab 07 — grouped-query decode on tensor cores over vLLM V1's flash layout: the reference
// solution. The two kernels only; the given launchers (labs/07-cuda-gqa-decode/given/
// launchers.cpp) include this file when the build's LAB_IMPL is `solution`, once per backend
// (the emulator, and nvcc's CUDA for sm_80 and sm_90).
#include <cmath>
#include <cstdint>

#include "given/kernel_support.cuh"

namespace pa::cuda_gqa::SIMT_BACKEND {
namespace {

// =============================================================================================
// Kernel 1: reshape_and_cache_flash — scatter this step's K and V into the flash-layout caches
// =============================================================================================

/// [reshape_and_cache_flash_kernel]
// grid (num_tokens), block (min(num_kv_heads * head_size, 512)): one thread block per token, its
// threads striding over the token's num_kv_heads * head_size elements.
template <typename scalar_t>
__global__ void reshape_and_cache_flash_kernel(
    const scalar_t* __restrict__ key,    // [num_tokens, num_kv_heads, head_size]
    const scalar_t* __restrict__ value,  // [num_tokens, num_kv_heads, head_size]
    scalar_t* __restrict__ key_cache,    // [num_blocks, block_size, num_kv_heads, head_size]
    scalar_t* __restrict__ value_cache,  // [num_blocks, block_size, num_kv_heads, head_size]
    const std::int64_t* __restrict__ slot_mapping,  // [num_tokens]
    const int key_stride, const int value_stride, const std::int64_t block_stride,
    const int page_stride, const int head_stride, const int num_kv_heads, const int head_size,
    const int block_size) {
  const std::int64_t token_idx = blockIdx.x;
  const std::int64_t slot_idx = slot_mapping[token_idx];
  if (slot_idx < 0) return;  // a padding token: nothing to store

  const std::int64_t block_idx = slot_idx / block_size;     // physical block
  const std::int64_t block_offset = slot_idx % block_size;  // the token's row (page) in it
  const int n = num_kv_heads * head_size;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int head_idx = i / head_size;
    const int head_offset = i % head_size;
    // cache[block_idx, block_offset, head_idx, head_offset]: the token's heads side by side
    const std::int64_t dst =
        block_idx * block_stride + block_offset * page_stride + head_idx * head_stride + head_offset;
    key_cache[dst] = key[token_idx * key_stride + i];
    value_cache[dst] = value[token_idx * value_stride + i];
  }
}
/// [reshape_and_cache_flash_kernel]

// =============================================================================================
// Kernel 2: gqa_decode — one thread block per (kv head, sequence, partition)
// =============================================================================================

/// [kv_tile]
// One [kTileTokens, HEAD_SIZE] tile of the key or value cache, copied asynchronously from
// device memory into a stage of the shared ring, never through registers: thread t copies
// 16-byte chunk t % CHUNKS_PER_ROW of the tile's rows t / CHUNKS_PER_ROW + i * ROWS_PER_PASS.
// The CHUNKS_PER_ROW threads of a row read one token's head, HEAD_SIZE contiguous elements:
// coalesced 16-byte copies (cp.async.cg on a GPU: they bypass L1 and the register file).
template <typename scalar_t, int HEAD_SIZE, int BLOCK_SIZE>
struct KvTile {
  static constexpr int VEC_SIZE = 16 / static_cast<int>(sizeof(scalar_t));  // elements per copy
  static constexpr int CHUNKS_PER_ROW = HEAD_SIZE / VEC_SIZE;
  static constexpr int ROWS_PER_PASS = kNumThreads / CHUNKS_PER_ROW;
  static constexpr int PASSES = kTileTokens / ROWS_PER_PASS;
  static_assert(kNumThreads % CHUNKS_PER_ROW == 0 && kTileTokens % ROWS_PER_PASS == 0,
                "the block's threads cover the tile in whole passes");
  using Chunk = Vec<scalar_t, VEC_SIZE>;

  // Starts the copies of tokens tile_start .. tile_start + kTileTokens - 1 of kv head
  // kv_head_idx into `stage` [kTileTokens, ld]; the caller commits them as one group. The
  // partition's blocks are table[0 ..] (shared memory), its first token partition_start. A token
  // at or past `end` is zero-filled: its 16 bytes are not read (the copy's source size is 0), and
  // the address given is a row of the partition's last block, which exists.
  __device__ static void copy(scalar_t* stage, int ld,
                              const scalar_t* __restrict__ cache,  // [blocks, BLOCK, kv, HEAD]
                              const int* table, int partition_start, int tile_start, int end,
                              int kv_head_idx, std::int64_t kv_block_stride,
                              int kv_token_stride) {
    const int chunk = threadIdx.x % CHUNKS_PER_ROW;
    const int first_row = threadIdx.x / CHUNKS_PER_ROW;
    const int last_block = (end - 1 - partition_start) / BLOCK_SIZE;  // in the table
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
      const int row = first_row + i * ROWS_PER_PASS;
      const int token = tile_start + row;
      const int block = imin((token - partition_start) / BLOCK_SIZE, last_block);
      // cache[table[block], token % BLOCK_SIZE, kv_head_idx, chunk * VEC_SIZE ...]
      const scalar_t* src = cache + std::int64_t{table[block]} * kv_block_stride +
                            (token % BLOCK_SIZE) * kv_token_stride + kv_head_idx * HEAD_SIZE +
                            chunk * VEC_SIZE;
      __pipeline_memcpy_async(stage + row * ld + chunk * VEC_SIZE, src, 16,
                              token < end ? 0 : 16);
    }
  }
};
/// [kv_tile]

/// [gqa_decode_kernel]
// grid (num_kv_heads, num_seqs, max_num_partitions), block (kNumThreads); dynamic shared memory:
// SharedLayout{HEAD_SIZE}.bytes().
template <typename scalar_t, int HEAD_SIZE, int BLOCK_SIZE>
__global__ void __launch_bounds__(kNumThreads) gqa_decode_kernel(
    scalar_t* __restrict__ out,            // [num_seqs, num_heads, HEAD_SIZE]
    float* __restrict__ exp_sums,          // [num_seqs, num_heads, max_num_partitions]
    float* __restrict__ max_logits,        // [num_seqs, num_heads, max_num_partitions]
    float* __restrict__ tmp_out,           // [num_seqs, num_heads, max_num_partitions, HEAD_SIZE]
    int* __restrict__ arrivals,            // [num_seqs, num_kv_heads], 0 between launches
    const scalar_t* __restrict__ q,        // [num_seqs, num_heads, HEAD_SIZE]
    const scalar_t* __restrict__ k_cache,  // [num_blocks, BLOCK_SIZE, num_kv_heads, HEAD_SIZE]
    const scalar_t* __restrict__ v_cache,  // [num_blocks, BLOCK_SIZE, num_kv_heads, HEAD_SIZE]
    const int num_heads, const float scale,
    const int* __restrict__ block_tables,  // [num_seqs, max_num_blocks_per_seq]
    const int* __restrict__ seq_lens,      // [num_seqs]
    const int max_num_blocks_per_seq, const int partition_size, const int q_stride,
    const std::int64_t kv_block_stride, const int kv_token_stride) {
  using namespace nvcuda;
  // ---- Step 0: the geometry (compile-time) and who this thread is ------------------------
  using Tiles = SharedTiles<scalar_t, HEAD_SIZE>;
  using Tile = KvTile<scalar_t, HEAD_SIZE, BLOCK_SIZE>;
  using Chunk = typename Tile::Chunk;
  constexpr int VEC_SIZE = Tile::VEC_SIZE;
  constexpr int QK_STEPS = HEAD_SIZE / kWmmaTile;     // Q·Kᵀ: 16-wide steps over the head
  constexpr int PV_STEPS = kTileTokens / kWmmaTile;   // W·V: 16-token steps over the tile
  constexpr int O_TILES_PER_WARP = HEAD_SIZE / kWmmaTile / kNumWarps;  // W·V: columns per warp
  constexpr int O_COLS_PER_WARP = O_TILES_PER_WARP * kWmmaTile;
  constexpr int ROW_THREADS = kNumThreads / kTileRows;       // threads sharing one row: 8
  constexpr int COLS_PER_THREAD = kTileTokens / ROW_THREADS;  // scores of a row per thread
  static_assert(HEAD_SIZE % (kWmmaTile * kNumWarps) == 0, "each warp owns whole output tiles");
  static_assert(ROW_THREADS <= WARP_SIZE && WARP_SIZE % ROW_THREADS == 0,
                "a row's threads are neighbouring lanes of one warp");

  const int kv_head_idx = blockIdx.x;
  const int num_kv_heads = gridDim.x;
  const int seq_idx = blockIdx.y;
  const int partition_idx = blockIdx.z;
  const int max_num_partitions = gridDim.z;
  const int thread_idx = threadIdx.x;
  const int warp_idx = thread_idx / WARP_SIZE;
  const int lane = thread_idx % WARP_SIZE;
  const int row = thread_idx / ROW_THREADS;       // the row of S, W and acc this thread serves
  const int row_lane = thread_idx % ROW_THREADS;  // its rank among that row's threads
  const int seq_len = seq_lens[seq_idx];
  const int* block_table = block_tables + seq_idx * max_num_blocks_per_seq;  // [max_blocks]

  // ---- Step 1: the group and the partition -----------------------------------------------
  const int group_size = num_heads / num_kv_heads;  // query heads per kv head, <= kTileRows
  const int first_head = kv_head_idx * group_size;  // the group: heads first_head + 0 .. G-1
  const int start = partition_idx * partition_size;
  if (start >= seq_len) return;  // the sequence is shorter: this block has nothing to read
  const int end = imin(start + partition_size, seq_len);
  const int num_partitions = ceil_div(seq_len, partition_size);
  const int num_tiles = ceil_div(end - start, kTileTokens);

  SIMT_DYNAMIC_SHARED(unsigned char, shared_mem);
  const Tiles tiles(shared_mem);

  // ---- Step 2: the queries (zero padding rows), acc = 0, the partition's block table -----
  // q[seq_idx, first_head .. first_head + G - 1, :] is one contiguous [G, HEAD_SIZE] slab.
  const scalar_t* q_group = q + seq_idx * q_stride + first_head * HEAD_SIZE;
  constexpr int Q_CHUNKS_PER_ROW = HEAD_SIZE / VEC_SIZE;
  for (int i = thread_idx; i < kTileRows * Q_CHUNKS_PER_ROW; i += kNumThreads) {
    const int r = i / Q_CHUNKS_PER_ROW;
    const int c = (i % Q_CHUNKS_PER_ROW) * VEC_SIZE;
    Chunk chunk;
    if (r < group_size) {
      chunk = *reinterpret_cast<const Chunk*>(q_group + r * HEAD_SIZE + c);
    } else {
      for (int j = 0; j < VEC_SIZE; ++j) from_float(chunk.val[j], 0.f);  // a padding row
    }
    *reinterpret_cast<Chunk*>(tiles.q + r * Tiles::kLdQ + c) = chunk;
  }
  for (int i = thread_idx; i < kTileRows * HEAD_SIZE; i += kNumThreads) {
    tiles.o[(i / HEAD_SIZE) * Tiles::kLdO + i % HEAD_SIZE] = 0.f;
  }
  // The partition's slice of the block table, once: every copy below looks its block up here.
  // Partitions start on tile (and so block) edges: the slice begins at block start / BLOCK_SIZE.
  stage_block_table(tiles.table, block_table + start / BLOCK_SIZE, ceil_div(end - start, BLOCK_SIZE));
  __syncthreads();  // q, acc and the table are visible to every thread

  // ---- Step 3: the pipeline. Tile t's keys and values are copy groups 2t and 2t + 1 of every
  // thread; kStages - 1 tiles are on their way before the first product. -------------------
  constexpr int kStages = Tiles::kStages;
  const auto copy_tile = [&](int t) {  // tile t's keys, then its values: two groups
    const int stage = Tiles::stage_of(t);
    if (t < num_tiles) {
      Tile::copy(tiles.k(stage), Tiles::kLdKV, k_cache, tiles.table, start,
                 start + t * kTileTokens, end, kv_head_idx, kv_block_stride, kv_token_stride);
    }
    __pipeline_commit();  // an empty group past the last tile keeps the counts below uniform
    if (t < num_tiles) {
      Tile::copy(tiles.v(stage), Tiles::kLdKV, v_cache, tiles.table, start,
                 start + t * kTileTokens, end, kv_head_idx, kv_block_stride, kv_token_stride);
    }
    __pipeline_commit();
  };
  for (int t = 0; t < kStages - 1; ++t) copy_tile(t);

  // This row's running max and sum of exp(score - max), the same in each of its 8 threads.
  float m_run = -INFINITY;
  float l_run = 0.f;

  for (int tile = 0; tile < num_tiles; ++tile) {
    const int tile_start = start + tile * kTileTokens;
    const int stage = Tiles::stage_of(tile);
    // ---- Step 3a: tile + kStages - 1 starts its trip into the stage tile - 1 left (C) ------
    copy_tile(tile + kStages - 1);
    // Groups after this tile's keys: its values and the 2 (kStages - 1) of the tiles ahead.
    __pipeline_wait_prior(2 * kStages - 1);
    __syncthreads();  // (K) every thread's copies of the keys have landed

    // ---- Step 3b: S = Q·Kᵀ; warp w computes the score columns (tokens) 16w .. 16w + 15 ----
    {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> s_frag;
      wmma::fill_fragment(s_frag, 0.f);
      for (int k = 0; k < QK_STEPS; ++k) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, scalar_t, wmma::row_major> q_frag;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, scalar_t, wmma::col_major> k_frag;
        wmma::load_matrix_sync(q_frag, tiles.q + k * kWmmaTile, Tiles::kLdQ);
        // Kᵀ[d, t] = K[t, d]: the key tile read column by column is its transpose.
        wmma::load_matrix_sync(k_frag, tiles.k(stage) + warp_idx * kWmmaTile * Tiles::kLdKV + k * kWmmaTile,
                               Tiles::kLdKV);
        wmma::mma_sync(s_frag, q_frag, k_frag, s_frag);
      }
      wmma::store_matrix_sync(tiles.s + warp_idx * kWmmaTile, s_frag, Tiles::kLdS,
                              wmma::mem_row_major);
    }
    __syncthreads();  // (A) the softmax reads the columns of every warp

    // ---- Step 3c: the online softmax, row by row: 8 threads per row, 8 scores each --------
    {
      float s[COLS_PER_THREAD];  // [COLS_PER_THREAD] this thread's scaled scores of its row
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < COLS_PER_THREAD; ++j) {
        const int col = row_lane + j * ROW_THREADS;
        // Tokens past the end are zero rows of K: mask them, a score of 0 is still a score.
        s[j] = tile_start + col < end ? tiles.s[row * Tiles::kLdS + col] * scale : -INFINITY;
        tile_max = fmaxf(tile_max, s[j]);
      }
#pragma unroll
      for (int mask = ROW_THREADS / 2; mask >= 1; mask /= 2) {
        tile_max = fmaxf(tile_max, __shfl_xor_sync(FULL_MASK, tile_max, mask));
      }
      const float m_new = fmaxf(m_run, tile_max);  // this row's max: never another row's
      const float alpha = __expf(m_run - m_new);    // 0 on the first tile (m_run = -inf)
      float tile_sum = 0.f;
#pragma unroll
      for (int j = 0; j < COLS_PER_THREAD; ++j) {
        const float p = __expf(s[j] - m_new);  // 0 for a masked token
        tile_sum += p;
        from_float(tiles.p[row * Tiles::kLdP + row_lane + j * ROW_THREADS], p);
      }
#pragma unroll
      for (int mask = ROW_THREADS / 2; mask >= 1; mask /= 2) {
        tile_sum += __shfl_xor_sync(FULL_MASK, tile_sum, mask);
      }
      l_run = l_run * alpha + tile_sum;
      m_run = m_new;
      if (row_lane == 0) tiles.row_alpha[row] = alpha;
    }

    // ---- Step 3d: this tile's values have landed too ------------------------------------
    __pipeline_wait_prior(2 * kStages - 2);
    __syncthreads();  // (B) W, row_alpha and every thread's copies of V are visible

    // ---- Step 3e: acc = diag(corr) acc + W·V; warp w owns the output columns of its tiles --
    {
      const int col0 = warp_idx * O_COLS_PER_WARP;
      // Row r of acc shrinks by row_alpha[r]. Which lane holds which element of a fragment is not
      // specified, so the per-row factor is applied here, in shared memory, not on x[].
      for (int i = lane; i < kTileRows * O_COLS_PER_WARP; i += WARP_SIZE) {
        const int r = i / O_COLS_PER_WARP;
        tiles.o[r * Tiles::kLdO + col0 + i % O_COLS_PER_WARP] *= tiles.row_alpha[r];
      }
      __syncwarp();  // the warp's rescaled columns are in place before its wmma loads
      for (int n = 0; n < O_TILES_PER_WARP; ++n) {
        float* o_tile = tiles.o + col0 + n * kWmmaTile;  // [16, 16] of acc, pitch kLdO
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> o_frag;
        wmma::load_matrix_sync(o_frag, o_tile, Tiles::kLdO, wmma::mem_row_major);
        for (int k = 0; k < PV_STEPS; ++k) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, scalar_t, wmma::row_major> p_frag;
          wmma::fragment<wmma::matrix_b, 16, 16, 16, scalar_t, wmma::row_major> v_frag;
          wmma::load_matrix_sync(p_frag, tiles.p + k * kWmmaTile, Tiles::kLdP);
          wmma::load_matrix_sync(v_frag, tiles.v(stage) + k * kWmmaTile * Tiles::kLdKV + col0 + n * kWmmaTile,
                                 Tiles::kLdKV);
          wmma::mma_sync(o_frag, p_frag, v_frag, o_frag);
        }
        wmma::store_matrix_sync(o_tile, o_frag, Tiles::kLdO, wmma::mem_row_major);
      }
    }
    __syncthreads();  // (C) every warp is done with this stage (refilled next) and with acc
  }

  // ---- Step 4: a sequence of one partition writes its rows; no merge ---------------------
  const std::int64_t head = std::int64_t{seq_idx} * num_heads + first_head + row;  // row's head
  if (num_partitions == 1) {
    if (row < group_size) {  // padding rows hold attention of a zero query: never written
      const float inv_l = __fdividef(1.f, l_run);
      scalar_t* out_row = out + head * HEAD_SIZE;  // [HEAD_SIZE]
      for (int d = row_lane; d < HEAD_SIZE; d += ROW_THREADS) {
        from_float(out_row[d], tiles.o[row * Tiles::kLdO + d] * inv_l);
      }
    }
    return;
  }

  // ---- Step 5: this partition's result: the normalized rows, their max and sum -----------
  if (row < group_size) {
    const std::int64_t slot = head * max_num_partitions + partition_idx;
    const float inv_l = __fdividef(1.f, l_run);
    float* tmp_row = tmp_out + slot * HEAD_SIZE;  // [HEAD_SIZE]
    for (int d = row_lane; d < HEAD_SIZE; d += ROW_THREADS) {
      tmp_row[d] = tiles.o[row * Tiles::kLdO + d] * inv_l;
    }
    if (row_lane == 0) {
      max_logits[slot] = m_run;
      exp_sums[slot] = l_run;
    }
  }

  // ---- Step 6: the fused merge: the last of the sequence's partitions to finish merges ----
  __syncthreads();  // every thread's partials are written (block scope) ...
  if (thread_idx == 0) {
    // ... and thread 0's fence makes them, with everything the block wrote, visible at device
    // scope before the block is counted: one fence per block, not one per thread.
    __threadfence();
    int* arrived = arrivals + seq_idx * num_kv_heads + kv_head_idx;
    const int last = atomicAdd(arrived, 1) == num_partitions - 1;
    if (last) {
      atomicExch(arrived, 0);  // every partition has counted: ready for the next launch
      __threadfence();  // the others' partials are read only after seeing them counted
    }
    *tiles.is_last = last;
  }
  __syncthreads();
  if (*tiles.is_last == 0) return;

  // Every thread of the last block merges. First the weights: row r's 8 threads fold the
  // partitions' maxima into the global one M and sum the rescaled sums into the total; then
  // partition p weighs w[r][p] = denom_p e^(m_p - M) / total (lab 03's merge, normalized once).
  float* weights = tiles.s;  // [kTileRows, kLdS] this chunk's w[r][p], kLdS >= kMergeChunk
  constexpr int kMergeChunk = kTileTokens;  // partitions whose weights are staged at a time
  static_assert(kMergeChunk <= Tiles::kLdS, "a chunk of weights fits a row of the score tile");
  const float* row_max = max_logits + head * max_num_partitions;  // [max_num_partitions]
  const float* row_sum = exp_sums + head * max_num_partitions;    // [max_num_partitions]
  float global_max = -INFINITY;
  float total = 0.f;
  if (row < group_size) {
    for (int p = row_lane; p < num_partitions; p += ROW_THREADS) {
      global_max = fmaxf(global_max, load_partial(row_max + p));
    }
  }
#pragma unroll
  for (int mask = ROW_THREADS / 2; mask >= 1; mask /= 2) {
    global_max = fmaxf(global_max, __shfl_xor_sync(FULL_MASK, global_max, mask));
  }
  if (row < group_size) {
    for (int p = row_lane; p < num_partitions; p += ROW_THREADS) {
      total += load_partial(row_sum + p) * __expf(load_partial(row_max + p) - global_max);
    }
  }
#pragma unroll
  for (int mask = ROW_THREADS / 2; mask >= 1; mask /= 2) {
    total += __shfl_xor_sync(FULL_MASK, total, mask);
  }
  // total >= 1 on a real row: the max's partition has e^0 * denom >= 1. Padding rows: unused.
  const float inv_total = row < group_size ? __fdividef(1.f, total) : 0.f;

  // Then the rows: thread t owns elements e = t, t + kNumThreads, ... of the group's
  // [group_size, HEAD_SIZE] output (consecutive threads, consecutive dims: coalesced), and
  // loads kInFlight partitions' values of each before it multiplies any.
  constexpr int kInFlight = 8;
  constexpr int ELEMS_PER_THREAD = kTileRows * HEAD_SIZE / kNumThreads;
  static_assert(kTileRows * HEAD_SIZE % kNumThreads == 0, "whole elements per thread");
  const float* parts = tmp_out + (std::int64_t{seq_idx} * num_heads + first_head) *
                                     max_num_partitions * HEAD_SIZE;  // [G, parts, HEAD]
  float acc[ELEMS_PER_THREAD];  // [ELEMS_PER_THREAD]
#pragma unroll
  for (int i = 0; i < ELEMS_PER_THREAD; ++i) acc[i] = 0.f;
  for (int chunk = 0; chunk < num_partitions; chunk += kMergeChunk) {
    const int count = imin(kMergeChunk, num_partitions - chunk);
    if (row < group_size) {
      for (int j = row_lane; j < count; j += ROW_THREADS) {
        const int p = chunk + j;
        weights[row * Tiles::kLdS + j] =
            load_partial(row_sum + p) * __expf(load_partial(row_max + p) - global_max) * inv_total;
      }
    }
    __syncthreads();  // the chunk's weights are visible to every thread
#pragma unroll
    for (int i = 0; i < ELEMS_PER_THREAD; ++i) {
      const int e = thread_idx + i * kNumThreads;
      const int r = e / HEAD_SIZE;
      const int d = e % HEAD_SIZE;
      if (r >= group_size) continue;  // padding rows: nothing to merge, never written
      const float* part = parts + std::int64_t{r} * max_num_partitions * HEAD_SIZE + d;
      for (int j0 = 0; j0 < count; j0 += kInFlight) {
        float v[kInFlight];  // [kInFlight] this element of kInFlight partitions
#pragma unroll
        for (int jj = 0; jj < kInFlight; ++jj) {
          // a partition past the chunk is not read (it may not exist): 0, weighted by 0
          v[jj] = j0 + jj < count
                      ? load_partial(part + std::int64_t{chunk + j0 + jj} * HEAD_SIZE)
                      : 0.f;
        }
#pragma unroll
        for (int jj = 0; jj < kInFlight; ++jj) {
          const float w = j0 + jj < count ? weights[r * Tiles::kLdS + j0 + jj] : 0.f;
          acc[i] += w * v[jj];
        }
      }
    }
    __syncthreads();  // every thread is done with the chunk's weights before the next
  }
  scalar_t* out_group = out + (std::int64_t{seq_idx} * num_heads + first_head) * HEAD_SIZE;
#pragma unroll
  for (int i = 0; i < ELEMS_PER_THREAD; ++i) {
    const int e = thread_idx + i * kNumThreads;
    if (e / HEAD_SIZE < group_size) from_float(out_group[e], acc[i]);  // [G, HEAD_SIZE] rows
  }
}
/// [gqa_decode_kernel]

}  // namespace
}  // namespace pa::cuda_gqa::SIMT_BACKEND

// Lab 07 — grouped-query decode on tensor cores over vLLM V1's flash layout. Your file: the
// cache writer reshape_and_cache_flash_kernel, the tile copy KvTile::copy, and gqa_decode_kernel
// step by step; the chapter's sections follow the TODO steps one for one.
//
//   tools/lab watch 07     # rebuild and grade on every save
//   tools/lab grade 07     # the same, once
//
// CUDA C++. The given launchers (given/launchers.cpp) #include this file and are compiled
// twice: against the SIMT emulator (always, so every test runs on your laptop) and by nvcc
// when CMake finds it. given/kernel_support.cuh has Vec<T, N>, to_float / from_float,
// ceil_div / imin, WARP_SIZE, FULL_MASK, SharedTiles (with the ring's stage_of, k and v),
// stage_block_table, load_partial and PA_TODO_KERNEL; nvcuda::wmma and the asynchronous copies
// (__pipeline_memcpy_async, __pipeline_commit, __pipeline_wait_prior) come with simt/cuda.hpp.
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
  PA_TODO_KERNEL();  // delete this line when you write the body

  // TODO 1. Which token, and whether it is stored at all: a padding token (negative slot in
  //         slot_mapping [num_tokens]) writes nothing, and no address is computed from its slot.
  // TODO 2. Where the slot lives: its physical block and its row (page) in that block.
  // TODO 3. The block's threads share the token's num_kv_heads * head_size elements of key and
  //         value ([num_tokens, num_kv_heads, head_size], key_stride / value_stride per token);
  //         each element is copied exactly once, whatever blockDim.x is.
  // TODO 4. Each element lands at [block, row, kv head, dimension] of key_cache / value_cache
  //         [num_blocks, block_size, num_kv_heads, head_size], through the strides the launcher
  //         passes (block_stride, page_stride, head_stride), in int64 (§ vLLM V1's cache layout
  //         against V0's). Stuck? tools/lab hint 07 reshape
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
    // TODO. Goal: this thread's share of the tile's copies: the chunks the comment above gives
    //         it, of tokens tile_start .. tile_start + kTileTokens - 1 of kv head kv_head_idx,
    //         from cache [blocks, BLOCK_SIZE, kv_heads, HEAD_SIZE] (kv_block_stride elements
    //         per block, kv_token_stride per row, int64) through the partition's block table
    //         `table` [its blocks], into the same row and chunk of `stage` [kTileTokens, ld],
    //         with __pipeline_memcpy_async. Invariants: a token at or past `end` becomes a row
    //         of zeros and nothing of it is read, and every address given is one of the
    //         partition's own blocks, which exist (§ The pipeline: asynchronous copies
    //         into a ring). Stuck? tools/lab hint 07 kv_tile
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
  PA_TODO_KERNEL();  // delete this line when you write the body

  using namespace nvcuda;
  // ---- Step 0 (given): the geometry (compile-time) and who this thread is ----------------
  using Tiles = SharedTiles<scalar_t, HEAD_SIZE>;
  using Tile = KvTile<scalar_t, HEAD_SIZE, BLOCK_SIZE>;
  using Chunk = typename Tile::Chunk;
  constexpr int VEC_SIZE = Tile::VEC_SIZE;
  constexpr int kStages = Tiles::kStages;  // the ring: tile t lives in stage Tiles::stage_of(t)
  constexpr int QK_STEPS = HEAD_SIZE / kWmmaTile;     // Q·Kᵀ: 16-wide steps over the head
  constexpr int PV_STEPS = kTileTokens / kWmmaTile;   // W·V: 16-token steps over the tile
  constexpr int O_TILES_PER_WARP = HEAD_SIZE / kWmmaTile / kNumWarps;  // W·V: columns per warp
  constexpr int O_COLS_PER_WARP = O_TILES_PER_WARP * kWmmaTile;
  constexpr int ROW_THREADS = kNumThreads / kTileRows;       // threads sharing one row: 8
  constexpr int COLS_PER_THREAD = kTileTokens / ROW_THREADS;  // scores of a row per thread
  static_assert(HEAD_SIZE % (kWmmaTile * kNumWarps) == 0, "each warp owns whole output tiles");

  const int kv_head_idx = blockIdx.x;
  const int num_kv_heads = gridDim.x;
  const int seq_idx = blockIdx.y;
  const int partition_idx = blockIdx.z;
  const int max_num_partitions = gridDim.z;
  const int thread_idx = threadIdx.x;
  const int warp_idx = thread_idx / WARP_SIZE;
  const int lane = thread_idx % WARP_SIZE;
  const int row = thread_idx / ROW_THREADS;       // the row of S, W and O this thread serves
  const int row_lane = thread_idx % ROW_THREADS;  // its rank among that row's threads
  const int seq_len = seq_lens[seq_idx];
  const int* block_table = block_tables + seq_idx * max_num_blocks_per_seq;  // [max_blocks]

  // TODO 1. Goal: what this block serves. Out: the group — the num_heads / num_kv_heads query
  //         heads that share this kv head, from first_head on — and its tokens [start, end):
  //         partition partition_idx of partition_size tokens, the last one shorter; the
  //         sequence's own num_partitions; the number of kTileTokens tiles; the shared tiles
  //         (const Tiles tiles(shared_mem) over SIMT_DYNAMIC_SHARED(unsigned char, shared_mem)).
  //         Invariant: a block whose partition starts at or past seq_len returns before any
  //         barrier (§ Split-KV: each partition's result).

  // TODO 2. Goal: everything the loop starts from. Out: tiles.q [kTileRows, Tiles::kLdQ], row
  //         r < group_size the query of head first_head + r (q is [num_seqs, num_heads,
  //         HEAD_SIZE], q_stride per sequence), the rows past the group zero; acc
  //         (tiles.o [kTileRows, Tiles::kLdO]) zero; the partition's slice of the block table in
  //         tiles.table (given: stage_block_table); the first kStages - 1 tiles' keys and
  //         values on their way into their stages of the ring (each tile two commit groups of
  //         every thread, keys then values — also for a tile past the end, which copies
  //         nothing); each thread's running max and sum of its row as before lab 02's first
  //         block. Invariant after the barrier: every warp sees q, acc and the table
  //         (§ The tiles: who holds which rows).

  // TODO 3. Goal: acc, m and denom over every tile of the partition. For each tile (tile_start on,
  //         in stage Tiles::stage_of(tile)):
  //   a. the tile kStages - 1 ahead starts its trip into the stage the previous tile left;
  //      this tile's keys have landed (the groups after them may stay in flight) and are
  //      visible to every thread (a barrier: a wait lands this thread's copies only);
  //   b. S = Q·Kᵀ on tensor cores into tiles.s [kTileRows, Tiles::kLdS]: warp w owns score
  //      columns (tokens) 16w .. 16w + 15; the key tile is [tokens, dims], and S needs its
  //      transpose (§ wmma: the API, and what the emulator checks). Barrier (A);
  //   c. the online softmax of each row — one query head per row, ROW_THREADS threads each:
  //      the row's new max and sum, the weight tile W = tiles.p [kTileRows, Tiles::kLdP] =
  //      e^(s - new max), unnormalized (0 for a token at or past end), tiles.row_alpha[row]
  //      = the factor the old acc and denom shrink by.
  //      Invariant: no max or sum crosses rows (§ The online softmax, one row per query head);
  //   d. this tile's values have landed, and W, row_alpha and the values are visible to every
  //      warp. Barrier (B);
  //   e. acc = diag(corr) acc + W·V: warp w owns a band of O_COLS_PER_WARP output columns; the
  //      rescale is done in shared memory (which lane holds which fragment element is
  //      unspecified), then the product on tensor cores. Barrier (C): the stage is free.
  //      Invariant after each tile: acc / denom is each row's attention over the tokens so far.

  // TODO 4. Goal: a sequence of one partition is finished here: out [num_seqs, num_heads,
  //         HEAD_SIZE] gets acc / denom for the group's rows only (a padding row belongs to no
  //         head), and the block returns.

  // TODO 5. Goal: otherwise the partition's result for the merge, per group row r, at entry
  //         (seq_idx, first_head + r, partition_idx) of the scratch (partition extent
  //         max_num_partitions): tmp_out [.., HEAD_SIZE] the normalized row, max_logits and
  //         exp_sums its max and sum (§ Split-KV: each partition's result).

  // TODO 6. Goal: the fused merge. The last of the sequence's partition blocks of this kv head
  //         to finish — counted in arrivals [num_seqs, num_kv_heads], which is 0 again after —
  //         merges each group row's num_partitions partials into out, each weighted by its sum
  //         rescaled to the global max (read with load_partial; tiles.s is free to hold the
  //         weights). Invariant: it reads the partials only after every partition's writes are
  //         visible to it (§ The fused merge).
  //         Stuck on a step? tools/lab hint 07 lists them; tools/lab hint 07 attention.N
}
/// [gqa_decode_kernel]

}  // namespace
}  // namespace pa::cuda_gqa::SIMT_BACKEND

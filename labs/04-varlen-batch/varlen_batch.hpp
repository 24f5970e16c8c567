/// \file
/// Lab 04 — one attention call for a whole mixed batch. Each step the scheduler names the
/// requests that run together, some decoding one token and some prefilling a chunk; this lab
/// turns that list into the metadata every paged attention kernel takes (cu_seqlens_q, seq_lens_kv,
/// block_table, plus the write map slot_mapping), scatters the new K/V rows into the pool, and
/// runs attention for every new token of every request at once: causal inside a sequence,
/// blind across sequences. All float64, all on the CPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pa/checks.hpp"
#include "pa/types.hpp"

namespace pa::varlen_batch {

/// [api]
/// An int32 row-major matrix: the block table, one row per sequence, as engines store it.
using IMat = Eigen::Matrix<int, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// One request's share of this engine step, as the scheduler decided it.
struct SeqStep {
  std::vector<int> blocks;  // its physical blocks, in logical order
  int num_cached;           // tokens already in the cache
  int num_new;              // tokens scheduled this step (1 for decode, a chunk for prefill)
};

/// Everything attention needs to know about where a batch's tokens live.
struct ForwardMeta {
  IVec cu_seqlens_q;  // [num_seqs + 1] prefix sum of num_new, starting at 0
  IVec seq_lens_kv;   // [num_seqs] num_cached + num_new
  IMat block_table;   // [num_seqs, max_blocks_per_seq], right-padded with -1
  IVec slot_mapping;  // [total_new] flat slot of every new token, sequence by sequence
  IVec positions;     // [total_new] position of every new token in its sequence
  int block_size;
};

/// Builds the step's metadata from the scheduler's list: new tokens are numbered sequence by
/// sequence, token j of sequence s sits at position num_cached + j and is written to slot
/// blocks[p / block_size] * block_size + p % block_size (p its position); row s of block_table is
/// batch[s].blocks verbatim, right-padded with -1 to the longest list in the batch.
ForwardMeta build_forward_meta(const std::vector<SeqStep>& batch, int block_size);

/// Copies row i of k / v into row slot_mapping[i] of k_pool / v_pool and touches nothing else.
/// k_pool, v_pool: [num_blocks * block_size, num_kv_heads * head_dim];
/// k, v: [total_new, num_kv_heads * head_dim]; slot_mapping: [total_new].
void set_kv(Mat& k_pool, Mat& v_pool, const IVec& slot_mapping, const Mat& k, const Mat& v);

/// Returns softmax(q K^T / sqrt(head_dim)) V for every new token of every sequence, reading each
/// sequence's keys through its block_table row: query token i of sequence s (at position
/// seq_lens_kv[s] - q_len + i, q_len = cu_seqlens_q[s + 1] - cu_seqlens_q[s]) attends keys
/// 0 .. seq_lens_kv[s] - q_len + i of sequence s only; query head h reads kv head
/// h / (num_heads / num_kv_heads).
/// q: [total_new, num_heads * head_dim], token-major;
/// k_pool, v_pool: [num_blocks * block_size, num_kv_heads * head_dim]
/// -> [total_new, num_heads * head_dim], token-major (row t = token t's heads side by side).
Mat attn_paged(const Mat& q, const Mat& k_pool, const Mat& v_pool, const ForwardMeta& meta,
               int num_heads, int num_kv_heads);
/// [api]

// ---------------------------------------------------------------------------------------------
// Given code: the argument checks. The starter and the solution both call these first, so the
// tests of bad input (ctest label `checks`) pass before you write anything; your work is the
// algorithm. Each throws std::invalid_argument naming the argument, the expected and the actual.
// ---------------------------------------------------------------------------------------------
namespace checks {

/// Checks block_size > 0 and, for every request, num_cached >= 0, num_new >= 1, enough blocks
/// for num_cached + num_new tokens, and no negative id among the blocks those tokens occupy.
inline void build_forward_meta(const std::vector<SeqStep>& batch, int block_size) {
  const ArgCheck check("build_forward_meta");
  check.positive("block_size", block_size);
  for (std::size_t s = 0; s < batch.size(); ++s) {
    const SeqStep& seq = batch[s];
    const std::string name = "batch[" + std::to_string(s) + "]";
    check.non_negative(name + ".num_cached", seq.num_cached);
    check.that(seq.num_new >= 1, name + ".num_new", ">= 1", std::to_string(seq.num_new));
    const std::int64_t seq_len = std::int64_t{seq.num_cached} + seq.num_new;
    const std::int64_t needed = (seq_len + block_size - 1) / block_size;
    check.that(std::int64_t(seq.blocks.size()) >= needed, name + ".blocks.size()",
               ">= " + std::to_string(needed) + " (ceil((num_cached + num_new) / block_size))",
               std::to_string(seq.blocks.size()));
    for (std::int64_t b = 0; b < needed; ++b) {
      check.that(seq.blocks[b] >= 0, name + ".blocks[" + std::to_string(b) + "]",
                 "a physical block id >= 0", std::to_string(seq.blocks[b]));
    }
  }
}

/// Checks that both pools have one shape, that k / v have one row per slot and the pools'
/// width, and that every slot is a row of the pool.
inline void set_kv(const Mat& k_pool, const Mat& v_pool, const IVec& slot_mapping, const Mat& k,
                   const Mat& v) {
  const ArgCheck check("set_kv");
  check.same_shape("v_pool", v_pool, "k_pool", k_pool);
  check.rows("k", k, slot_mapping.size(), "slot_mapping.size()");
  check.cols("k", k, k_pool.cols(), "k_pool.cols()");
  check.same_shape("v", v, "k", k);
  check.ids_in_range("slot_mapping", slot_mapping, slot_mapping.size(), 0, k_pool.rows(),
                     "rows of k_pool");
}

/// Checks the head counts and widths, the pool shapes, and the metadata: cu_seqlens_q starts at
/// 0, never decreases and ends at q.rows(); one seq_lens_kv entry and one block_table row per
/// sequence; every seq_lens_kv[s] covers that sequence's queries and fits its table row; every
/// block a sequence reads is a block of the pool.
inline void attn_paged(const Mat& q, const Mat& k_pool, const Mat& v_pool,
                       const ForwardMeta& meta, int num_heads, int num_kv_heads) {
  const ArgCheck check("attn_paged");
  check.positive("num_heads", num_heads);
  check.positive("num_kv_heads", num_kv_heads);
  check.multiple_of("num_heads", num_heads, num_kv_heads, "num_kv_heads");
  check.positive("q.cols()", q.cols());
  check.multiple_of("q.cols()", q.cols(), num_heads, "num_heads");
  const std::int64_t head_dim = q.cols() / num_heads;
  check.same_shape("v_pool", v_pool, "k_pool", k_pool);
  check.cols("k_pool", k_pool, std::int64_t{num_kv_heads} * head_dim,
             "num_kv_heads * head_dim");
  check.positive("meta.block_size", meta.block_size);
  check.multiple_of("k_pool.rows()", k_pool.rows(), meta.block_size, "meta.block_size");
  const std::int64_t num_blocks = k_pool.rows() / meta.block_size;

  const IVec& cu = meta.cu_seqlens_q;
  check.positive("meta.cu_seqlens_q.size()", cu.size());
  check.equal("meta.cu_seqlens_q[0]", cu[0], 0, "every batch starts at token 0");
  for (Eigen::Index s = 1; s < cu.size(); ++s) {
    check.that(cu[s] >= cu[s - 1], "meta.cu_seqlens_q[" + std::to_string(s) + "]",
               ">= " + std::to_string(cu[s - 1]) + " (cu_seqlens_q[" + std::to_string(s - 1) +
                   "]; a prefix sum never decreases)",
               std::to_string(cu[s]));
  }
  const Eigen::Index num_seqs = cu.size() - 1;
  check.rows("q", q, cu[num_seqs], "meta.cu_seqlens_q[num_seqs]");
  check.equal("meta.seq_lens_kv.size()", meta.seq_lens_kv.size(), num_seqs,
              "num_seqs = cu_seqlens_q.size() - 1");
  check.rows("meta.block_table", meta.block_table, num_seqs, "num_seqs");
  const std::int64_t capacity = std::int64_t{meta.block_table.cols()} * meta.block_size;
  for (Eigen::Index s = 0; s < num_seqs; ++s) {
    const std::string index = std::string("[").append(std::to_string(s)).append("]");
    const int q_len = cu[s + 1] - cu[s];
    check.that(meta.seq_lens_kv[s] >= q_len, "meta.seq_lens_kv" + index,
               ">= " + std::to_string(q_len) + " (the sequence's query length)",
               std::to_string(meta.seq_lens_kv[s]));
    check.at_most("meta.seq_lens_kv" + index, meta.seq_lens_kv[s], capacity,
                  "block_table.cols() * block_size");
    const std::int64_t blocks_read =
        (std::int64_t{meta.seq_lens_kv[s]} + meta.block_size - 1) / meta.block_size;
    for (Eigen::Index b = 0; b < blocks_read; ++b) {
      const int id = meta.block_table(s, b);
      check.that(id >= 0 && id < num_blocks,
                 "meta.block_table(" + std::to_string(s) + ", " + std::to_string(b) + ")",
                 "an id in [0, " + std::to_string(num_blocks) + ") (blocks in the pool)",
                 std::to_string(id));
    }
  }
}

}  // namespace checks

}  // namespace pa::varlen_batch

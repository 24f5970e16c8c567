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
/// sequence, new token u of sequence b sits at position pos = num_cached + u and is written to slot
/// blocks[pos / block_size] * block_size + pos % block_size; row b of block_table is
/// batch[b].blocks verbatim, right-padded with -1 to the longest list in the batch.
ForwardMeta build_forward_meta(const std::vector<SeqStep>& batch, int block_size);

/// Copies row i of k / v into row slot_mapping[i] of k_pool / v_pool and touches nothing else.
/// k_pool, v_pool: [num_blocks * block_size, num_kv_heads * head_dim];
/// k, v: [total_new, num_kv_heads * head_dim]; slot_mapping: [total_new].
void set_kv(Mat& k_pool, Mat& v_pool, const IVec& slot_mapping, const Mat& k, const Mat& v);

/// Returns softmax(q K^T / sqrt(head_dim)) V for every new token of every sequence, reading each
/// sequence's keys through its block_table row: query token u of sequence b (at position
/// seq_lens_kv[b] - q_len + u, q_len = cu_seqlens_q[b + 1] - cu_seqlens_q[b]) attends keys
/// 0 .. seq_lens_kv[b] - q_len + u of sequence b only; query head h reads kv head
/// h / (num_heads / num_kv_heads).
/// q: [total_new, num_heads * head_dim], token-major;
/// k_pool, v_pool: [num_blocks * block_size, num_kv_heads * head_dim]
/// -> [total_new, num_heads * head_dim], token-major (row t = token t's heads side by side).
Mat attn_paged(const Mat& q, const Mat& k_pool, const Mat& v_pool, const ForwardMeta& meta,
               int num_heads, int num_kv_heads);
/// [api]

}  // namespace pa::varlen_batch

// Lab 04 — one attention call for a mixed batch. Your file: fill in the three functions below,
// in order.
//
//   tools/lab grade 04          # build the starters and grade this lab
//
// Each function starts with the given argument checks; write your code after them and delete
// the `throw`. Read the chapter (README.md) first: it works the metadata out for every scenario
// the tests use.
#include "varlen_batch.hpp"

#include "given/checks.hpp"

#include <cmath>
#include <limits>

#include "pa/not_implemented.hpp"

namespace pa::varlen_batch {

/// [build_forward_meta]
// The scheduler's list -> the metadata tensors.
//   cu_seqlens_q: [num_seqs + 1]  0, n0, n0 + n1, ...        (n = num_new)
//   seq_lens_kv:  [num_seqs]      num_cached + num_new
//   block_table:  [num_seqs, max_blocks_per_seq]  each request's blocks, then -1
//   positions:    [total_new]     num_cached, num_cached + 1, ... for each request in turn
//   slot_mapping: [total_new]     blocks[p / block_size] * block_size + p % block_size
// Hint: a new token's position starts at num_cached, not at 0 — the cached tokens already own
// the slots before it.
ForwardMeta build_forward_meta(const std::vector<SeqStep>& batch, int block_size) {
  checks::build_forward_meta(batch, block_size);
  throw NotImplemented("build_forward_meta");
}
/// [build_forward_meta]

/// [set_kv]
// The write: row i of k goes to row slot_mapping[i] of k_pool (and the same for v).
// k_pool, v_pool: [num_blocks * block_size, num_kv_heads * head_dim]
// k, v:           [total_new, num_kv_heads * head_dim]
// Hint: one line each with Eigen 3.4's index-vector rows, pool(slot_mapping, Eigen::all).
void set_kv(Mat& k_pool, Mat& v_pool, const IVec& slot_mapping, const Mat& k, const Mat& v) {
  checks::set_kv(k_pool, v_pool, slot_mapping, k, v);
  throw NotImplemented("set_kv");
}
/// [set_kv]

/// [attn_paged]
// One call for the batch. For each sequence s:
//   rows q_start = cu_seqlens_q[s] .. cu_seqlens_q[s + 1] - 1 of q are its queries (q_len of them)
//   its keys are tokens 0 .. seq_lens_kv[s] - 1, found through block_table row s
//   query i (position seq_lens_kv[s] - q_len + i) sees keys 0 .. seq_lens_kv[s] - q_len + i
// q, returned: [total_new, num_heads * head_dim]; head h of token t is columns h * head_dim ..
// (h + 1) * head_dim - 1 of row t. Keep it that way: token-major in, token-major out.
// Hint: set a masked score to -infinity before you take the row max, so a masked key
// contributes exactly nothing.
Mat attn_paged(const Mat& q, const Mat& k_pool, const Mat& v_pool, const ForwardMeta& meta,
               int num_heads, int num_kv_heads) {
  checks::attn_paged(q, k_pool, v_pool, meta, num_heads, num_kv_heads);
  throw NotImplemented("attn_paged");
}
/// [attn_paged]

}  // namespace pa::varlen_batch

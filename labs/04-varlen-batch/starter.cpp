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
// Goal: the scheduler's list of requests -> the five metadata tensors one attention call needs.
// In:  batch[b] = {num_cached, num_new, blocks} for request b; block_size.
// Out: cu_seqlens_q [num_seqs + 1], seq_lens_kv [num_seqs],
//      block_table [num_seqs, max_blocks_per_seq], positions [total_new], slot_mapping [total_new].
// Invariants after it: the rows of request b in q are cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1
// (its new tokens only); seq_lens_kv[b] counts every token it attends to; a new token's position
// continues the cached ones, and its slot is where that position lives in the request's blocks
// (§ The write map and the read map); a block_table row holds the request's blocks, then -1.
// Stuck? tools/lab hint 04 build_forward_meta
ForwardMeta build_forward_meta(const std::vector<SeqStep>& batch, int block_size) {
  checks::build_forward_meta(batch, block_size);
  throw NotImplemented("build_forward_meta");
}
/// [build_forward_meta]

/// [set_kv]
// Goal: the write. Each new token's key and value row goes to its slot in the pools.
// In:  k, v [total_new, num_kv_heads * head_dim]; slot_mapping [total_new].
// Out: k_pool, v_pool [num_blocks * block_size, num_kv_heads * head_dim], changed in place.
// Invariant after it: pool row slot_mapping[i] equals row i of k (of v), and no other row moved.
// Stuck? tools/lab hint 04 set_kv
void set_kv(Mat& k_pool, Mat& v_pool, const IVec& slot_mapping, const Mat& k, const Mat& v) {
  checks::set_kv(k_pool, v_pool, slot_mapping, k, v);
  throw NotImplemented("set_kv");
}
/// [set_kv]

/// [attn_paged]
// Goal: causal attention for every sequence of the batch, in one call.
// In:  q [total_new, num_heads * head_dim] (head h of token t: columns h * head_dim onward);
//      k_pool, v_pool as set_kv left them; meta from build_forward_meta.
// Out: [total_new, num_heads * head_dim], laid out like q (token-major).
// Invariants: each query row attends only to its own sequence's keys, found through its
// block_table row, and only to the keys at or before its own position (§ Causal attention, one
// sequence at a time); a masked key contributes exactly nothing; query head h reads the kv head
// its group shares.
// Stuck? tools/lab hint 04 attn_paged
Mat attn_paged(const Mat& q, const Mat& k_pool, const Mat& v_pool, const ForwardMeta& meta,
               int num_heads, int num_kv_heads) {
  checks::attn_paged(q, k_pool, v_pool, meta, num_heads, num_kv_heads);
  throw NotImplemented("attn_paged");
}
/// [attn_paged]

}  // namespace pa::varlen_batch

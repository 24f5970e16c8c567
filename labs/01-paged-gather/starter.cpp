// Lab 01 — paged gather. Your file: fill in the three functions below, in order.
//
//   tools/lab grade 01          # build the starters and grade this lab
//
// Each function starts with the given argument checks; write your code after them and delete
// the `throw`. Read the chapter (README.md) first: it derives every formula used here.
#include "paged_gather.hpp"

#include "given/checks.hpp"

#include <cmath>

#include "pa/not_implemented.hpp"

namespace pa::paged_gather {

/// [build_slot_mapping]
// The write map: the flat cache row of each token t in [start, start + num_tokens).
// block_table: [num_logical_blocks] -> [num_tokens]
//   slot(t) = block_table[t / block_size] * block_size + t % block_size
// Stuck? tools/lab hint 01 build_slot_mapping (the Eigen that lists the tokens is in level 3).
IVec build_slot_mapping(const IVec& block_table, int block_size, int start, int num_tokens) {
  checks::build_slot_mapping(block_table, block_size, start, num_tokens);
  throw NotImplemented("build_slot_mapping");
}
/// [build_slot_mapping]

/// [write_kv]
// The scatter: row i of new_k goes to row slot_mapping[i] of k_cache (and the same for V).
// k_cache, v_cache: [num_slots, num_kv_heads * head_dim]
// new_k, new_v:     [num_tokens, num_kv_heads * head_dim]
// Invariant after it: row slot_mapping[i] of each cache is row i of the new keys (values), and
// no other row changed. Stuck? tools/lab hint 01 write_kv
void write_kv(Mat& k_cache, Mat& v_cache, const Mat& new_k, const Mat& new_v,
              const IVec& slot_mapping) {
  checks::write_kv(k_cache, v_cache, new_k, new_v, slot_mapping);
  throw NotImplemented("write_kv");
}
/// [write_kv]

/// [paged_attention]
// The gather and the attention, for one decode query per head.
// q: [num_heads, head_dim]; k_cache, v_cache: [num_slots, num_kv_heads * head_dim]
// -> [num_heads, head_dim]
// Steps: the slots of tokens 0 .. seq_len-1 (exactly seq_len rows: never a whole last block),
// gather K and V through them, then per query head h with kv head h / (num_heads / num_kv_heads):
//   scores = K_h q_h / sqrt(head_dim), weights = softmax(scores - max(scores)), out_h = weights V_h
Mat paged_attention(const Mat& q, const Mat& k_cache, const Mat& v_cache,
                    const IVec& block_table, int seq_len, int block_size) {
  checks::paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size);
  throw NotImplemented("paged_attention");
}
/// [paged_attention]

}  // namespace pa::paged_gather

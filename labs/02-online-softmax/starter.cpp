// Lab 02 — paged attention with online softmax. Your file: fill in the two functions below,
// dense_attention first (it is the easy one, and writing it settles the formula in your head).
//
//   tools/lab grade 02          # build the starters and grade this lab
//
// Each function starts with the given argument checks; write your code after them and delete
// the `throw`. Read the chapter (README.md) first: it derives the recurrence used here.
#include "online_softmax.hpp"

#include "given/checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "pa/not_implemented.hpp"

namespace pa::online_softmax {

/// [dense_attention]
// The whole score row at once.
// q: [d], K: [n, d], V: [n, dv] -> [dv]
//   scores = K q / sqrt(d)                       // [n]
//   w      = exp(scores - max(scores))           // [n], every entry in (0, 1]
//   out    = V^T w / sum(w)                      // [dv]
// Stuck? tools/lab hint 02 dense_attention
Vec dense_attention(const Vec& q, const Mat& K, const Mat& V) {
  checks::dense_attention(q, K, V);
  throw NotImplemented("dense_attention");
}
/// [dense_attention]

/// [paged_online_attention]
// One pass over the logical blocks 0 .. ceil(seq_len / block_size) - 1, carrying
//   m     = the largest score so far           (start at -infinity)
//   denom = sum of exp(s - m) so far           (start at 0)
//   acc   = sum of exp(s - m) * v so far, [dv] (start at zeros)
// and returning acc / denom at the end.
// q: [d]; k_cache: [num_blocks * block_size, d]; v_cache: [num_blocks * block_size, dv] -> [dv]
// Logical block j lives in rows [block_table[j] * block_size, ...) of both caches; it holds
// min(block_size, seq_len - j * block_size) valid rows. Read exactly those: k_cache.middleRows().
// Two places that bite: the first block (m is still -infinity: what is exp(m - m_new) then,
// and what if m_new is -infinity too?) and the last block (usually partial).
Vec paged_online_attention(const Vec& q, const Mat& k_cache, const Mat& v_cache,
                           const IVec& block_table, int seq_len, int block_size) {
  checks::paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size);
  throw NotImplemented("paged_online_attention");
}
/// [paged_online_attention]

}  // namespace pa::online_softmax

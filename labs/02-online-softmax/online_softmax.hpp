/// \file
/// Lab 02 — attention over a paged KV cache in one streaming pass: the keys are visited one
/// physical block at a time, in the order the block table lists them, while a running maximum,
/// a running normalizer and a running weighted sum of values are kept exact by rescaling.
/// One query, one head, float64, CPU.
#pragma once

#include <cstdint>
#include <string>

#include "pa/checks.hpp"
#include "pa/types.hpp"

namespace pa::online_softmax {

/// [api]
/// Returns softmax(K q / sqrt(d)) V, computed over the whole score row at once (the slow oracle).
/// q: [d], K: [n, d], V: [n, dv] -> [dv]; needs n >= 1.
Vec dense_attention(const Vec& q, const Mat& K, const Mat& V);

/// Returns the same attention over the first seq_len tokens of a paged sequence, streaming one
/// block at a time with the online-softmax state (m, denom, acc) and never forming the score row.
/// q: [d]; k_cache: [num_blocks * block_size, d]; v_cache: [num_blocks * block_size, dv];
/// block_table: [>= ceil(seq_len / block_size)] physical ids; physical block b is cache rows
/// [b * block_size, (b + 1) * block_size) -> [dv].
Vec paged_online_attention(const Vec& q, const Mat& k_cache, const Mat& v_cache,
                           const IVec& block_table, int seq_len, int block_size);
/// [api]

// ---------------------------------------------------------------------------------------------
// Given code: the argument checks. The starter and the solution both call these first, so the
// tests of bad input (ctest label `checks`) pass before you write anything; your work is the
// algorithm. Each throws std::invalid_argument naming the argument, the expected and the actual.
// ---------------------------------------------------------------------------------------------
namespace checks {

/// [checks]
/// Checks d >= 1, that K has d columns and V one row per key, and that there is at least one
/// key (softmax over an empty row has no value).
inline void dense_attention(const Vec& q, const Mat& K, const Mat& V) {
  const ArgCheck check("dense_attention");
  check.positive("q.size() (head_dim)", q.size());
  check.cols("K", K, q.size(), "q.size()");
  check.rows("V", V, K.rows(), "K.rows()");
  check.positive("K.rows() (number of keys)", K.rows());
}

/// Checks d >= 1, the cache shapes, block_size >= 1, 1 <= seq_len <= the table's capacity, and
/// that every block id the sequence actually reads names a block of the cache (entries past
/// the last block read are padding and are not looked at).
inline void paged_online_attention(const Vec& q, const Mat& k_cache, const Mat& v_cache,
                                   const IVec& block_table, int seq_len, int block_size) {
  const ArgCheck check("paged_online_attention");
  check.positive("block_size", block_size);
  check.positive("q.size() (head_dim)", q.size());
  check.cols("k_cache", k_cache, q.size(), "q.size()");
  check.rows("v_cache", v_cache, k_cache.rows(), "k_cache.rows()");
  check.multiple_of("k_cache.rows()", k_cache.rows(), block_size, "block_size");
  check.positive("seq_len", seq_len);
  check.at_most("seq_len", seq_len, std::int64_t{block_table.size()} * block_size,
                "block_table.size() * block_size");
  const Eigen::Index blocks_read = (Eigen::Index{seq_len} + block_size - 1) / block_size;
  check.ids_in_range("block_table", block_table, blocks_read, 0, k_cache.rows() / block_size,
                     "physical blocks in the cache");
}
/// [checks]

}  // namespace checks

}  // namespace pa::online_softmax

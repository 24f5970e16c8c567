// Lab 02, given: the argument checks (the conventions chapter says what they promise).
#pragma once

#include <cstdint>
#include <string>

#include "online_softmax.hpp"
#include "pa/checks.hpp"

namespace pa::online_softmax {

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

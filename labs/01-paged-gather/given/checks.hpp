// Lab 01, given: the argument checks (the conventions chapter says what they promise).
#pragma once

#include <cstdint>
#include <string>

#include "paged_gather.hpp"
#include "pa/checks.hpp"

namespace pa::paged_gather {

namespace checks {

/// [checks]
/// Checks block_size > 0, start >= 0, num_tokens >= 0, that the range fits in the table, and
/// that the ids it will read are not negative.
inline void build_slot_mapping(const IVec& block_table, int block_size, int start,
                               int num_tokens) {
  const ArgCheck check("build_slot_mapping");
  check.positive("block_size", block_size);
  check.non_negative("start", start);
  check.non_negative("num_tokens", num_tokens);
  const std::int64_t capacity = std::int64_t{block_table.size()} * block_size;
  check.at_most("start + num_tokens", std::int64_t{start} + num_tokens, capacity,
                "block_table.size() * block_size");
  const Eigen::Index first_block = start / block_size;
  const Eigen::Index end_block = (std::int64_t{start} + num_tokens + block_size - 1) / block_size;
  for (Eigen::Index b = first_block; b < end_block; ++b) {
    check.that(block_table[b] >= 0, "block_table[" + std::to_string(b) + "]",
               "a physical block id >= 0", std::to_string(block_table[b]));
  }
}

/// Checks that both caches have one shape, that new_k / new_v have one row per slot and the
/// caches' width, and that every slot is a row of the cache.
inline void write_kv(const Mat& k_cache, const Mat& v_cache, const Mat& new_k, const Mat& new_v,
                     const IVec& slot_mapping) {
  const ArgCheck check("write_kv");
  check.same_shape("v_cache", v_cache, "k_cache", k_cache);
  check.rows("new_k", new_k, slot_mapping.size(), "slot_mapping.size()");
  check.cols("new_k", new_k, k_cache.cols(), "k_cache.cols()");
  check.same_shape("new_v", new_v, "new_k", new_k);
  check.ids_in_range("slot_mapping", slot_mapping, slot_mapping.size(), 0, k_cache.rows(),
                     "rows of k_cache");
}

/// Checks the head counts, the cache shapes, 1 <= seq_len <= capacity of the table, and that
/// every block id the sequence reads names a block of the cache.
inline void paged_attention(const Mat& q, const Mat& k_cache, const Mat& v_cache,
                            const IVec& block_table, int seq_len, int block_size) {
  const ArgCheck check("paged_attention");
  check.positive("block_size", block_size);
  check.positive("q.cols() (head_dim)", q.cols());
  check.positive("q.rows() (num_heads)", q.rows());
  check.same_shape("v_cache", v_cache, "k_cache", k_cache);
  check.multiple_of("k_cache.cols()", k_cache.cols(), q.cols(), "head_dim");
  const Eigen::Index num_kv_heads = k_cache.cols() / q.cols();
  check.positive("num_kv_heads (k_cache.cols() / head_dim)", num_kv_heads);
  check.multiple_of("num_heads (q.rows())", q.rows(), num_kv_heads, "num_kv_heads");
  check.multiple_of("k_cache.rows()", k_cache.rows(), block_size, "block_size");
  check.positive("seq_len", seq_len);
  check.at_most("seq_len", seq_len, std::int64_t{block_table.size()} * block_size,
                "block_table.size() * block_size");
  const Eigen::Index blocks_read = (seq_len + block_size - 1) / block_size;
  check.ids_in_range("block_table", block_table, blocks_read, 0, k_cache.rows() / block_size,
                     "physical blocks in the cache");
}
/// [checks]

}  // namespace checks

}  // namespace pa::paged_gather

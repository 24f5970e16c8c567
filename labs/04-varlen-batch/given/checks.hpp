// Lab 04, given: the argument checks (the conventions chapter says what they promise).
#pragma once

#include <cstdint>
#include <string>

#include "varlen_batch.hpp"
#include "pa/checks.hpp"

namespace pa::varlen_batch {

namespace checks {

/// [checks]
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
/// sequence; every seq_lens_kv[b] covers that sequence's queries and fits its table row; every
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
/// [checks]

}  // namespace checks

}  // namespace pa::varlen_batch

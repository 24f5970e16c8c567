// Lab 01 — paged gather: the reference solution (instructors only; a student release has no
// solutions/ folder). Built instead of labs/01-paged-gather/starter.cpp when LAB_IMPL=solution.
#include "paged_gather.hpp"

#include "given/checks.hpp"

#include <cmath>

namespace pa::paged_gather {

/// [build_slot_mapping]
IVec build_slot_mapping(const IVec& block_table, int block_size, int start, int num_tokens) {
  checks::build_slot_mapping(block_table, block_size, start, num_tokens);
  // tokens: [num_tokens] logical positions start .. start + num_tokens - 1
  const IVec tokens = IVec::LinSpaced(num_tokens, start, start + num_tokens - 1);
  const IVec logical_block = tokens / block_size;                   // [num_tokens]
  const IVec offset = tokens - logical_block * block_size;          // [num_tokens] t % block_size
  const IVec physical_block = block_table(logical_block);           // [num_tokens]
  return physical_block * block_size + offset;
}
/// [build_slot_mapping]

/// [write_kv]
void write_kv(Mat& k_cache, Mat& v_cache, const Mat& new_k, const Mat& new_v,
              const IVec& slot_mapping) {
  checks::write_kv(k_cache, v_cache, new_k, new_v, slot_mapping);
  k_cache(slot_mapping, Eigen::all) = new_k;  // [num_tokens, num_kv_heads * head_dim] scattered
  v_cache(slot_mapping, Eigen::all) = new_v;
}
/// [write_kv]

/// [paged_attention]
Mat paged_attention(const Mat& q, const Mat& k_cache, const Mat& v_cache,
                    const IVec& block_table, int seq_len, int block_size) {
  checks::paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size);
  const Eigen::Index num_heads = q.rows(), head_dim = q.cols();
  const Eigen::Index group = num_heads / (k_cache.cols() / head_dim);  // query heads per kv head

  // The read map is the write map over the whole sequence: exactly seq_len slots.
  const IVec slots = build_slot_mapping(block_table, block_size, 0, seq_len);  // [seq_len]
  const Mat keys = k_cache(slots, Eigen::all);    // [seq_len, num_kv_heads * head_dim]
  const Mat values = v_cache(slots, Eigen::all);  // [seq_len, num_kv_heads * head_dim]

  Mat out(num_heads, head_dim);  // [num_heads, head_dim]
  for (Eigen::Index h = 0; h < num_heads; ++h) {
    const Eigen::Index kv_col = (h / group) * head_dim;
    const auto k_head = keys.middleCols(kv_col, head_dim);    // [seq_len, head_dim]
    const auto v_head = values.middleCols(kv_col, head_dim);  // [seq_len, head_dim]
    const Vec scores = k_head * q.row(h).transpose() / std::sqrt(double(head_dim));  // [seq_len]
    Vec weights = (scores.array() - scores.maxCoeff()).exp().matrix();              // [seq_len]
    weights /= weights.sum();
    out.row(h) = weights.transpose() * v_head;  // [1, head_dim]
  }
  return out;
}
/// [paged_attention]

}  // namespace pa::paged_gather

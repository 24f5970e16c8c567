// Mutant: the read covers the last block whole
// Bug: keys are gathered for ceil(seq_len / block_size) * block_size tokens, so the unused tail
// of the last block (poison) reaches every query the causal mask leaves open to the end.
// Chapter: \ref lab_04_maps
// Caught by: AttnPaged.SingleDecodeStepSeesTheWholeCache, AttnPaged.ThreeSequencesWithPaddedBlockTable, AttnPaged.UnusedSlotsNeverEnterTheSoftmax, ChunkedPrefill.ChunksOfSixteenEqualOnePrefillOfForty

// Lab 04 — one attention call for a mixed batch: the reference solution (instructors only; a
// student release has no solutions/ folder). Built instead of labs/04-varlen-batch/starter.cpp
// when LAB_IMPL=solution.
#include "varlen_batch.hpp"

#include "given/checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pa::varlen_batch {
namespace {

/// The flat pool row of each position in `positions`, for a sequence whose blocks are `table`:
/// table[p / block_size] * block_size + p % block_size.
/// table: [num_logical_blocks]; positions: [n] -> [n].
template <class Table>
IVec slots_of(const Table& table, const IVec& positions, int block_size) {
  const IVec logical_block = positions / block_size;             // [n]
  const IVec offset = positions - logical_block * block_size;    // [n] p % block_size
  const IVec physical_block = table(logical_block);               // [n]
  return physical_block * block_size + offset;
}

}  // namespace

/// [build_forward_meta]
ForwardMeta build_forward_meta(const std::vector<SeqStep>& batch, int block_size) {
  checks::build_forward_meta(batch, block_size);
  const Eigen::Index num_seqs = static_cast<Eigen::Index>(batch.size());
  std::size_t max_blocks_per_seq = 0;
  for (const SeqStep& seq : batch) max_blocks_per_seq = std::max(max_blocks_per_seq, seq.blocks.size());

  ForwardMeta meta;
  meta.block_size = block_size;
  meta.cu_seqlens_q = IVec::Zero(num_seqs + 1);                                  // [num_seqs + 1]
  meta.seq_lens_kv.resize(num_seqs);                                               // [num_seqs]
  meta.block_table = IMat::Constant(num_seqs, Eigen::Index(max_blocks_per_seq), -1);  // padded
  for (Eigen::Index s = 0; s < num_seqs; ++s) {
    const SeqStep& seq = batch[s];
    meta.cu_seqlens_q[s + 1] = meta.cu_seqlens_q[s] + seq.num_new;  // counts new tokens only
    meta.seq_lens_kv[s] = seq.num_cached + seq.num_new;
    meta.block_table.row(s).head(Eigen::Index(seq.blocks.size())) =
        Eigen::Map<const IVec>(seq.blocks.data(), Eigen::Index(seq.blocks.size())).transpose();
  }

  const Eigen::Index total_new = meta.cu_seqlens_q[num_seqs];
  meta.positions.resize(total_new);     // [total_new]
  meta.slot_mapping.resize(total_new);  // [total_new]
  for (Eigen::Index s = 0; s < num_seqs; ++s) {
    const SeqStep& seq = batch[s];
    // The new tokens continue the sequence: positions num_cached .. num_cached + num_new - 1.
    const IVec positions =
        IVec::LinSpaced(seq.num_new, seq.num_cached, seq.num_cached + seq.num_new - 1);
    const Eigen::Map<const IVec> table(seq.blocks.data(), Eigen::Index(seq.blocks.size()));
    meta.positions.segment(meta.cu_seqlens_q[s], seq.num_new) = positions;
    meta.slot_mapping.segment(meta.cu_seqlens_q[s], seq.num_new) =
        slots_of(table, positions, block_size);
  }
  return meta;
}
/// [build_forward_meta]

/// [set_kv]
void set_kv(Mat& k_pool, Mat& v_pool, const IVec& slot_mapping, const Mat& k, const Mat& v) {
  checks::set_kv(k_pool, v_pool, slot_mapping, k, v);
  // The pool seen as [num_slots, num_kv_heads * head_dim]: one row per token, so the write is a
  // row scatter. (As [num_blocks, block_size * num_kv_heads * head_dim] it is the same bytes.)
  k_pool(slot_mapping, Eigen::all) = k;  // [total_new, num_kv_heads * head_dim] scattered
  v_pool(slot_mapping, Eigen::all) = v;
}
/// [set_kv]

/// [attn_paged]
Mat attn_paged(const Mat& q, const Mat& k_pool, const Mat& v_pool, const ForwardMeta& meta,
               int num_heads, int num_kv_heads) {
  checks::attn_paged(q, k_pool, v_pool, meta, num_heads, num_kv_heads);
  const Eigen::Index head_dim = q.cols() / num_heads;
  const Eigen::Index group = num_heads / num_kv_heads;  // query heads per kv head
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  constexpr double kMasked = -std::numeric_limits<double>::infinity();

  Mat out(q.rows(), q.cols());  // [total_new, num_heads * head_dim], token-major like q
  for (Eigen::Index s = 0; s + 1 < meta.cu_seqlens_q.size(); ++s) {
    const Eigen::Index q_start = meta.cu_seqlens_q[s];
    const Eigen::Index q_len = meta.cu_seqlens_q[s + 1] - q_start;
    const Eigen::Index kv_len =  // whole blocks, the last one's unused tail included
        (meta.seq_lens_kv[s] + meta.block_size - 1) / meta.block_size * meta.block_size;
    if (q_len == 0) continue;
    const Eigen::Index context = meta.seq_lens_kv[s] - q_len;  // tokens cached before this step

    // The read map: block_table row s turns tokens 0 .. kv_len - 1 into pool rows.
    const IVec tokens = IVec::LinSpaced(kv_len, 0, int(kv_len) - 1);        // [kv_len]
    const IVec table = meta.block_table.row(s).transpose();                  // [max_blocks]
    const IVec slots = slots_of(table, tokens, meta.block_size);             // [kv_len]
    const Mat keys = k_pool(slots, Eigen::all);    // [kv_len, num_kv_heads * head_dim]
    const Mat values = v_pool(slots, Eigen::all);  // [kv_len, num_kv_heads * head_dim]

    for (Eigen::Index h = 0; h < num_heads; ++h) {
      const Eigen::Index kv_col = (h / group) * head_dim;
      const auto q_head = q.block(q_start, h * head_dim, q_len, head_dim);  // [q_len, head_dim]
      const auto k_head = keys.middleCols(kv_col, head_dim);                // [kv_len, head_dim]
      const auto v_head = values.middleCols(kv_col, head_dim);              // [kv_len, head_dim]

      Mat scores = (q_head * k_head.transpose()) * scale;  // [q_len, kv_len]
      // Causal within the sequence: query i sits at position context + i and sees keys
      // 0 .. context + i; the rest of its row is masked before the max is taken.
      for (Eigen::Index i = 0; i + 1 < q_len; ++i) {
        scores.row(i).tail(kv_len - (context + i + 1)).setConstant(kMasked);
      }
      const Vec row_max = scores.rowwise().maxCoeff();                         // [q_len]
      Mat weights = (scores.colwise() - row_max).array().exp().matrix();       // [q_len, kv_len]
      weights.array().colwise() /= weights.rowwise().sum().array();
      out.block(q_start, h * head_dim, q_len, head_dim) = weights * v_head;   // [q_len, head_dim]
    }
  }
  return out;
}
/// [attn_paged]

}  // namespace pa::varlen_batch

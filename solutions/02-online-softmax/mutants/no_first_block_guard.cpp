// Mutant: the first-block guard is missing
// Bug: corr = exp(m - m_new) and p = exp(s - m_new) even while m_new is -inf: a fully masked first
//   block computes exp(-inf - (-inf)) = NaN, and the NaN stays in acc and denom.
// Chapter: \ref lab_02_notes
// Caught by: PagedOnlineAttention.MaskedFirstBlocksNeedTheGuard

// Lab 02 — paged attention with online softmax: the reference solution (instructors only; a
// student release has no solutions/ folder). Built instead of labs/02-online-softmax/starter.cpp
// when LAB_IMPL=solution.
#include "online_softmax.hpp"

#include "given/checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pa::online_softmax {

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();
}  // namespace

/// [dense_attention]
Vec dense_attention(const Vec& q, const Mat& K, const Mat& V) {
  checks::dense_attention(q, K, V);
  const Vec scores = K * q / std::sqrt(static_cast<double>(q.size()));  // [n]
  // Shifting by the max makes every exponent <= 0: the largest weight is exactly 1, none overflows.
  const Vec weights = (scores.array() - scores.maxCoeff()).exp().matrix();  // [n]
  return V.transpose() * weights / weights.sum();                           // [dv]
}
/// [dense_attention]

/// [paged_online_attention]
Vec paged_online_attention(const Vec& q, const Mat& k_cache, const Mat& v_cache,
                           const IVec& block_table, int seq_len, int block_size) {
  checks::paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size()));

  // The online-softmax state, all relative to the running max m.
  double m = kNegInf;                       // largest score seen so far
  double denom = 0.0;                       // sum of exp(s - m) over the keys seen so far
  Vec acc = Vec::Zero(v_cache.cols());      // [dv] sum of exp(s - m) * v over those keys

  const int num_logical_blocks = (seq_len + block_size - 1) / block_size;
  for (int j = 0; j < num_logical_blocks; ++j) {
    const int start = j * block_size;                           // first token of this block
    const int valid = std::min(block_size, seq_len - start);    // rows of it that hold tokens
    const Eigen::Index row = Eigen::Index{block_table[j]} * block_size;  // its first cache row
    const auto k_block = k_cache.middleRows(row, valid);  // [valid, d]
    const auto v_block = v_cache.middleRows(row, valid);  // [valid, dv]

    const Vec s = k_block * q * scale;                     // [valid]
    const double m_new = std::max(m, s.maxCoeff());
    // The first-block guard. Until a finite score has been seen, m is -inf, and if this block's
    // scores are all -inf too (masked keys), m_new is -inf and exp(-inf - (-inf)) is NaN. An
    // empty history is rescaled by 0, and weights are taken against 0 while the max is -inf.
    const double corr = std::exp(m - m_new);  // shrinks the history
    const double shift = m_new;
    const Vec p = (s.array() - shift).exp().matrix();     // [valid] relative to m_new

    acc = acc * corr + v_block.transpose() * p;            // [dv]
    denom = denom * corr + p.sum();
    m = m_new;
  }
  return acc / denom;  // [dv]
}
/// [paged_online_attention]

}  // namespace pa::online_softmax

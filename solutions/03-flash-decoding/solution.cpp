// Lab 03 — flash-decoding: the reference solution (instructors only; a student release has no
// solutions/ folder). Built instead of labs/03-flash-decoding/starter.cpp when LAB_IMPL=solution.
#include "flash_decoding.hpp"

#include <cmath>
#include <limits>

namespace pa::flash_decoding {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Returns e^(m - m_star), the factor that moves a summary taken relative to m onto the scale
/// m_star >= m; an empty summary (m = -inf) gets exactly 0, even when m_star is -inf too
/// (where the plain formula would compute e^(-inf + inf) = e^NaN).
double rescale(double m, double m_star) { return m == kNegInf ? 0.0 : std::exp(m - m_star); }

}  // namespace

/// [attend_partial]
Partial attend_partial(const Vec& q, const Mat& K, const Mat& V) {
  checks::attend_partial(q, K, V);
  if (K.rows() == 0) return {kNegInf, 0.0, Vec::Zero(V.cols())};  // acc: [dv]
  const Vec s = K * q / std::sqrt(static_cast<double>(q.size()));  // [n]
  const double m = s.maxCoeff();
  const Vec p = (s.array() - m).exp().matrix();  // [n], each in (0, 1], the max key gives 1
  return {m, p.sum(), V.transpose() * p};        // acc: [dv] = [dv, n] x [n]
}
/// [attend_partial]

/// [merge]
Partial merge(const Partial& a, const Partial& b) {
  checks::merge(a, b);
  const double m_star = std::max(a.m, b.m);
  const double wa = rescale(a.m, m_star);  // 1 for the side that holds the max
  const double wb = rescale(b.m, m_star);
  return {m_star, a.denom * wa + b.denom * wb, a.acc * wa + b.acc * wb};  // acc: [dv]
}
/// [merge]

/// [merge_partials]
Vec merge_partials(const std::vector<Partial>& partials) {
  checks::merge_partials(partials);
  Partial total = partials.front();  // acc: [dv]
  for (size_t i = 1; i < partials.size(); ++i) total = merge(total, partials[i]);
  return total.acc / total.denom;  // [dv]; denom >= 1 because some partial holds a key
}
/// [merge_partials]

/// [partitioned_attention]
Vec partitioned_attention(const Vec& q, const Mat& K, const Mat& V, int num_partitions) {
  checks::partitioned_attention(q, K, V, num_partitions);
  const Eigen::Index n = K.rows();
  const Eigen::Index base = n / num_partitions;   // rows in every range
  const Eigen::Index extra = n % num_partitions;  // the first `extra` ranges get one more
  std::vector<Partial> partials;
  partials.reserve(static_cast<size_t>(num_partitions));
  Eigen::Index start = 0;
  for (Eigen::Index i = 0; i < num_partitions; ++i) {
    const Eigen::Index rows = base + (i < extra ? 1 : 0);
    // On a GPU each range is one thread block reading the cache in place; here attend_partial
    // takes a Mat, so each range is copied: K.middleRows: [rows, d], V.middleRows: [rows, dv].
    partials.push_back(attend_partial(q, K.middleRows(start, rows), V.middleRows(start, rows)));
    start += rows;
  }
  return merge_partials(partials);  // [dv]
}
/// [partitioned_attention]

}  // namespace pa::flash_decoding

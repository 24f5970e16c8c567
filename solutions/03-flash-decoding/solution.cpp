// Lab 03 — flash-decoding: the reference solution (instructors only; a student release has no
// solutions/ folder). Built instead of labs/03-flash-decoding/starter.cpp when LAB_IMPL=solution.
#include "flash_decoding.hpp"

#include "given/checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

namespace pa::flash_decoding {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Returns e^(m - m_star), the factor that moves a summary taken relative to m onto the scale
/// m_star >= m; an empty summary (m = -inf) gets exactly 0, even when m_star is -inf too
/// (where the plain formula would compute e^(-inf + inf) = e^NaN).
double rescale(double m, double m_star) { return m == kNegInf ? 0.0 : std::exp(m - m_star); }

}  // namespace

/// [attend_partial]
Partial attend_partial(const Vec& q, const RowsView& K, const RowsView& V) {
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
Vec partitioned_attention(const Vec& q, const Mat& K, const Mat& V, int num_partitions,
                          int num_threads) {
  checks::partitioned_attention(q, K, V, num_partitions, num_threads);
  // The array_split ranges: range i is rows [starts[i], starts[i + 1]) of K and V.
  const Eigen::Index n = K.rows();
  const Eigen::Index base = n / num_partitions;   // rows in every range
  const Eigen::Index extra = n % num_partitions;  // the first `extra` ranges get one more
  std::vector<Eigen::Index> starts(static_cast<size_t>(num_partitions) + 1, 0);  // [p + 1]
  for (int i = 0; i < num_partitions; ++i) starts[i + 1] = starts[i] + base + (i < extra ? 1 : 0);

  // One slot per range, written by exactly one thread: no locks, and the slot order is the
  // range order whichever thread finishes first.
  std::vector<Partial> partials(static_cast<size_t>(num_partitions));
  const auto attend_ranges = [&](int first, int last) {  // ranges [first, last)
    for (int i = first; i < last; ++i) {
      const Eigen::Index rows = starts[i + 1] - starts[i];
      // Views, not copies, as a GPU thread block reads its range of the cache in place:
      // K.middleRows: [rows, d], V.middleRows: [rows, dv].
      partials[i] = attend_partial(q, K.middleRows(starts[i], rows), V.middleRows(starts[i], rows));
    }
  };

  // The ranges are dealt out to the threads array_split style too, as contiguous runs. A
  // thread with no range would only cost its start-up, so there are at most num_partitions.
  const int workers = std::min(num_threads, num_partitions);
  const int run = num_partitions / workers, longer_runs = num_partitions % workers;
  std::vector<std::jthread> threads;  // a jthread also joins when destroyed, e.g. on a throw
  int first = 0;
  for (int t = 0; t < workers; ++t) {
    const int last = first + run + (t < longer_runs ? 1 : 0);
    if (t == workers - 1) {
      attend_ranges(first, last);  // the calling thread works too: one thread starts none
    } else {
      threads.emplace_back(attend_ranges, first, last);
    }
    first = last;
  }
  for (std::jthread& thread : threads) thread.join();  // every slot is written past this line

  // The same left fold in range order for every num_threads: the same additions in the same
  // order, so the same bits.
  return merge_partials(partials);  // [dv]
}
/// [partitioned_attention]

}  // namespace pa::flash_decoding

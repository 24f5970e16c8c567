// Lab 03 — flash-decoding. Your file: fill in the four functions below, in order.
//
//   tools/lab grade 03          # build the starters and grade this lab
//
// Each function starts with the given argument checks; write your code after them and delete
// the `throw`. Read the chapter (README.md) first: it derives the merge formulas used here.
#include "flash_decoding.hpp"

#include "given/checks.hpp"

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "pa/not_implemented.hpp"

namespace pa::flash_decoding {

/// [attend_partial]
// The summary of one key range, NOT divided through: the caller may still merge it.
// q: [d]; K: [n, d]; V: [n, dv] -> {m, denom, acc: [dv]}
//   s = K q / sqrt(d)   [n]      m = max(s)      p = exp(s - m)   [n]
//   denom = sum(p)               acc = V^T p     [dv]
// Zero keys (n = 0) is allowed: return {-inf, 0, zeros(dv)} before touching s (the max of an
// empty vector does not exist). Keep the check first: one graded test holds a range's thread
// back through it (the hook in given/checks.hpp).
Partial attend_partial(const Vec& q, const RowsView& K, const RowsView& V) {
  checks::attend_partial(q, K, V);
  throw NotImplemented("attend_partial");
}
/// [attend_partial]

/// [merge]
// Two summaries of disjoint key sets -> the summary of their union.
// a.acc, b.acc: [dv] -> acc: [dv]
//   M = max(a.m, b.m)
//   denom = a.denom e^(a.m - M) + b.denom e^(b.m - M)        (acc the same way)
// Hint: when a side is empty (m = -inf) its factor must be exactly 0. Work out what
// e^(a.m - M) evaluates to when BOTH sides are empty before you trust it.
Partial merge(const Partial& a, const Partial& b) {
  checks::merge(a, b);
  throw NotImplemented("merge");
}
/// [merge]

/// [merge_partials]
// Combine every summary, then divide once, at the very end.
// partials[i].acc: [dv] -> [dv]
Vec merge_partials(const std::vector<Partial>& partials) {
  checks::merge_partials(partials);
  throw NotImplemented("merge_partials");
}
/// [merge_partials]

/// [partitioned_attention]
// Split the n keys into num_partitions (N_p) contiguous ranges like numpy.array_split (the first
// n % N_p ranges have n / N_p + 1 rows, the others n / N_p; empty ranges are fine), attend each
// range, merge.
// q: [d]; K: [n, d]; V: [n, dv] -> [dv]
// A key range binds to attend_partial's RowsView without a copy (Eigen's middleRows).
// Stuck? tools/lab hint 03 partitioned_attention
//
// TODO, in this order:
//   1. Work out where every range starts (a vector of num_partitions + 1 offsets is handy).
//   2. Make a std::vector<Partial> with one entry per range. Write a lambda that attends the
//      ranges [first, last) into their own entries, and check it with one call over all ranges.
//   3. Now the threads: deal the ranges out as contiguous runs to at most num_threads threads
//      (std::thread or std::jthread; more threads than ranges must work) and join them all.
//      Each thread writes only its own entries, so nothing needs a lock.
//   4. merge_partials over the entries, in range order. Ask yourself why merging in the order
//      the threads happen to finish would make the result's last bits change between runs.
Vec partitioned_attention(const Vec& q, const Mat& K, const Mat& V, int num_partitions,
                          int num_threads) {
  checks::partitioned_attention(q, K, V, num_partitions, num_threads);
  throw NotImplemented("partitioned_attention");
}
/// [partitioned_attention]

}  // namespace pa::flash_decoding

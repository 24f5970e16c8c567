// Lab 03 — flash-decoding. Your file: fill in the four functions below, in order.
//
//   tools/lab grade 03          # build the starters and grade this lab
//
// Each function starts with the given argument checks; write your code after them and delete
// the `throw`. Read the chapter (README.md) first: it derives the merge formulas used here.
#include "flash_decoding.hpp"

#include <cmath>
#include <limits>

#include "pa/not_implemented.hpp"

namespace pa::flash_decoding {

/// [attend_partial]
// The summary of one key range, NOT divided through: the caller may still merge it.
// q: [d]; K: [n, d]; V: [n, dv] -> {m, denom, acc: [dv]}
//   s = K q / sqrt(d)   [n]      m = max(s)      p = exp(s - m)   [n]
//   denom = sum(p)               acc = V^T p     [dv]
// Zero keys (n = 0) is allowed: return {-inf, 0, zeros(dv)} before touching s (the max of an
// empty vector does not exist).
Partial attend_partial(const Vec& q, const Mat& K, const Mat& V) {
  checks::attend_partial(q, K, V);
  throw NotImplemented("attend_partial");
}
/// [attend_partial]

/// [merge]
// Two summaries of disjoint key sets -> the summary of their union.
// a.acc, b.acc: [dv] -> acc: [dv]
//   m* = max(a.m, b.m)
//   denom* = a.denom e^(a.m - m*) + b.denom e^(b.m - m*)      (acc* the same way)
// Hint: when a side is empty (m = -inf) its factor must be exactly 0. Work out what
// e^(a.m - m*) evaluates to when BOTH sides are empty before you trust it.
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
// Split the n keys into num_partitions contiguous ranges like numpy.array_split (the first
// n % p ranges have n / p + 1 rows, the others n / p; empty ranges are fine), attend each
// range, merge.
// q: [d]; K: [n, d]; V: [n, dv] -> [dv]
// Hint: K.middleRows(start, rows) is the key range [start, start + rows).
Vec partitioned_attention(const Vec& q, const Mat& K, const Mat& V, int num_partitions) {
  checks::partitioned_attention(q, K, V, num_partitions);
  throw NotImplemented("partitioned_attention");
}
/// [partitioned_attention]

}  // namespace pa::flash_decoding

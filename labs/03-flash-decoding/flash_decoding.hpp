/// \file
/// Lab 03 — flash-decoding: one decode query attends each key partition on its own, every
/// partition is summarised by an unnormalised triple (m, denom, acc), and the triples merge
/// exactly into the dense answer in any order and any tree shape. All float64, all on the CPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "pa/checks.hpp"
#include "pa/types.hpp"

namespace pa::flash_decoding {

/// [api]
/// A read-only view of a row-major float64 matrix, or of consecutive rows of one such as
/// K.middleRows(start, rows): it binds without copying, so a key range is read in place.
using RowsView = Eigen::Ref<const Mat>;

/// The softmax-attention summary of one query over one set of keys, never divided through:
///   m     = max_i s_i                       (s_i = k_i · q / sqrt(d))
///   denom = sum_i exp(s_i - m)
///   acc   = sum_i exp(s_i - m) v_i          acc: [dv]
/// The summary over no keys is the empty partial {-inf, 0, zeros(dv)}.
struct Partial {
  double m;
  double denom;
  Vec acc;  // [dv]
};

/// Returns the unnormalised summary (m, denom, acc) of attention by q over the keys K and
/// values V; K may have zero rows, which gives the empty partial {-inf, 0, zeros(dv)}.
/// q: [d]; K: [n, d]; V: [n, dv] -> Partial with acc: [dv].
Partial attend_partial(const Vec& q, const RowsView& K, const RowsView& V);

/// Returns the summary of the union of two disjoint key sets, given the summary of each:
/// both sides are rescaled to m* = max(a.m, b.m) and added; an empty side adds exactly zero.
/// a.acc, b.acc: [dv] -> acc: [dv].
Partial merge(const Partial& a, const Partial& b);

/// Returns the attention output acc / denom of the merge of all `partials`; at least one of
/// them must cover one key or more. partials[i].acc: [dv] -> [dv].
Vec merge_partials(const std::vector<Partial>& partials);

/// Returns softmax(K q / sqrt(d)) V computed flash-decoding style: the n keys are split into
/// num_partitions contiguous ranges the way numpy.array_split does (the first n % p ranges
/// get n / p + 1 rows, the rest n / p, so some are empty when p > n), the ranges are attended
/// with attend_partial on num_threads threads (each a contiguous run of ranges), and the
/// partials are merged in range order, so the result has the same bits for every num_threads.
/// q: [d]; K: [n, d]; V: [n, dv] -> [dv].
Vec partitioned_attention(const Vec& q, const Mat& K, const Mat& V, int num_partitions,
                          int num_threads = 1);
/// [api]

// ---------------------------------------------------------------------------------------------
// Given code: the argument checks. The starter and the solution both call these first, so the
// tests of bad input (ctest label `checks`) pass before you write anything; your work is the
// algorithm. Each throws std::invalid_argument naming the argument, the expected and the actual.
// ---------------------------------------------------------------------------------------------
namespace checks {

/// Checks head_dim = q.size() > 0, that K has one column per query element, and that V has
/// one row per key. Zero keys are allowed.
inline void attend_partial(const Vec& q, const RowsView& K, const RowsView& V) {
  const ArgCheck check("attend_partial");
  check.positive("q.size() (head_dim)", q.size());
  check.cols("K", K, q.size(), "q.size()");
  check.rows("V", V, K.rows(), "K.rows()");
}

/// Checks that both accumulators have one length.
inline void merge(const Partial& a, const Partial& b) {
  const ArgCheck check("merge");
  check.equal("b.acc.size()", b.acc.size(), a.acc.size(), "a.acc.size()");
}

/// Checks that the list is not empty, that every accumulator has the first one's length, and
/// that at least one partial is not the empty partial (otherwise there is nothing to divide by).
inline void merge_partials(const std::vector<Partial>& partials) {
  const ArgCheck check("merge_partials");
  check.positive("partials.size()", static_cast<std::int64_t>(partials.size()));
  for (size_t i = 1; i < partials.size(); ++i) {
    check.equal("partials[" + std::to_string(i) + "].acc.size()", partials[i].acc.size(),
                partials[0].acc.size(), "partials[0].acc.size()");
  }
  const bool any_keys = std::any_of(partials.begin(), partials.end(), [](const Partial& p) {
    return p.m > -std::numeric_limits<double>::infinity();
  });
  check.that(any_keys, "partials", "at least one partial over one or more keys (m > -inf)",
             std::to_string(partials.size()) + " partials, all empty (m = -inf)");
}

/// Checks num_partitions > 0, num_threads > 0, the shapes attend_partial needs, and at least
/// one key.
inline void partitioned_attention(const Vec& q, const Mat& K, const Mat& V, int num_partitions,
                                  int num_threads) {
  const ArgCheck check("partitioned_attention");
  check.positive("num_partitions", num_partitions);
  check.positive("num_threads", num_threads);
  check.positive("q.size() (head_dim)", q.size());
  check.cols("K", K, q.size(), "q.size()");
  check.rows("V", V, K.rows(), "K.rows()");
  check.positive("K.rows() (number of keys)", K.rows());
}

}  // namespace checks

}  // namespace pa::flash_decoding

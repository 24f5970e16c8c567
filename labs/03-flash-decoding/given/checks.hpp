// Lab 03, given: the argument checks (the conventions chapter says what they promise).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "flash_decoding.hpp"
#include "pa/checks.hpp"

namespace pa::flash_decoding {

namespace checks {

/// A graded test's way into attend_partial, not a check: while a test has set it, the check at
/// the top of attend_partial calls it with the range's keys, on whichever thread attends that
/// range. PartitionedAttention.FirstRangeFinishingLastIsStillMergedFirst uses it to hold back
/// the thread of the first range. At all other times it is empty, and calling the check costs
/// one test of an empty std::function more.
inline std::function<void(const RowsView& K)>& attend_partial_test_hook() {
  static std::function<void(const RowsView& K)> hook;
  return hook;
}

/// [checks]
/// Checks head_dim = q.size() > 0, that K has one column per query element, and that V has
/// one row per key. Zero keys are allowed.
inline void attend_partial(const Vec& q, const RowsView& K, const RowsView& V) {
  const ArgCheck check("attend_partial");
  check.positive("q.size() (head_dim)", q.size());
  check.cols("K", K, q.size(), "q.size()");
  check.rows("V", V, K.rows(), "K.rows()");
  if (const auto& hook = attend_partial_test_hook()) hook(K);  // set by one graded test only
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
/// [checks]

}  // namespace checks

}  // namespace pa::flash_decoding

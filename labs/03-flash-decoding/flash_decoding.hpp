/// \file
/// Lab 03 — flash-decoding: one decode query attends each key partition on its own, every
/// partition is summarised by an unnormalized triple (m, denom, acc), and the triples merge
/// exactly into the dense answer in any order and any tree shape. All float64, all on the CPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

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

/// Returns the unnormalized summary (m, denom, acc) of attention by q over the keys K and
/// values V; K may have zero rows, which gives the empty partial {-inf, 0, zeros(dv)}.
/// q: [d]; K: [n, d]; V: [n, dv] -> Partial with acc: [dv].
Partial attend_partial(const Vec& q, const RowsView& K, const RowsView& V);

/// Returns the summary of the union of two disjoint key sets, given the summary of each:
/// both sides are rescaled to M = max(a.m, b.m) and added; an empty side adds exactly zero.
/// a.acc, b.acc: [dv] -> acc: [dv].
Partial merge(const Partial& a, const Partial& b);

/// Returns the attention output acc / denom of the merge of all `partials`; at least one of
/// them must cover one key or more. partials[i].acc: [dv] -> [dv].
Vec merge_partials(const std::vector<Partial>& partials);

/// Returns softmax(K q / sqrt(d)) V computed flash-decoding style: the n keys are split into
/// num_partitions (N_p) contiguous ranges the way numpy.array_split does (the first n % N_p ranges
/// get n / N_p + 1 rows, the rest n / N_p, so some are empty when N_p > n), the ranges are attended
/// with attend_partial on num_threads threads (each a contiguous run of ranges), and the
/// partials are merged in range order, so the result has the same bits for every num_threads.
/// q: [d]; K: [n, d]; V: [n, dv] -> [dv].
Vec partitioned_attention(const Vec& q, const Mat& K, const Mat& V, int num_partitions,
                          int num_threads = 1);
/// [api]

}  // namespace pa::flash_decoding

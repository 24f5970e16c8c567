// Lab 03 — the graded tests. Run: tools/lab grade 03   (or ctest --preset starter -L lab03)
//
// Ground truth is pa::testing::reference_attention (long double, plain loops, all keys at once).
// The key ranges are computed here, independently of partitioned_attention, wherever a test
// feeds attend_partial / merge / merge_partials directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "flash_decoding.hpp"
#include "given/checks.hpp"
#include "pa/testing.hpp"

namespace pa::flash_decoding {
namespace {

using pa::testing::AllClose;
using pa::testing::BitIdentical;
using pa::testing::FarFromUniform;
using pa::testing::Rng;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = std::numeric_limits<double>::epsilon();

// Splitting the keys only changes the order of float64 additions; the reference runs in long
// double and outputs are O(1), so rounding stays near 1e-14: 1e-12 leaves room for summation
// order and none for a wrong weight (a dropped rescale is off by O(0.1)).
constexpr double kExactTol = 1e-12;

// A running max is a score: |s| ~ 10 computed by a 16-term float64 dot product is off by about
// 1e-14 however it is evaluated, so 1e-12 separates rounding from a wrong max.
constexpr double kScoreTol = 1e-12;

// The logits in these tests have standard deviation ~kLogitSpread, so the softmax is peaked.
constexpr double kLogitSpread = 4.0;

// A key count that no partition count used here divides: every split is ragged.
constexpr int kRaggedKeys = 1037;

/// One decode query and the keys and values it attends.
struct Problem {
  Vec q;  // [d]
  Mat K;  // [n, d]
  Mat V;  // [n, dv]
};

Problem make_problem(Rng& rng, int n, int d = 16, int dv = 12) {
  // score std = std(q) * std(k) * sqrt(d) / sqrt(d) = kLogitSpread
  return {rng.normal_vec(d, kLogitSpread), rng.normal(n, d), rng.normal(n, dv)};
}

Vec dense_truth(const Problem& p) { return pa::testing::reference_attention(p.q, p.K, p.V); }

/// Asserts on the test's own data that the softmax is far from uniform.
void expect_spread(const Problem& p, double factor = 10.0) {
  EXPECT_TRUE(FarFromUniform(pa::testing::scores(p.q, p.K), factor));
}

/// numpy.array_split's sizes for n items in p parts: the first n % p get n / p + 1.
std::vector<Eigen::Index> array_split_sizes(Eigen::Index n, Eigen::Index p) {
  std::vector<Eigen::Index> sizes;
  for (Eigen::Index i = 0; i < p; ++i) sizes.push_back(n / p + (i < n % p ? 1 : 0));
  return sizes;
}

/// The student's attend_partial over each of `num_partitions` array_split ranges, in order.
std::vector<Partial> attend_ranges(const Problem& p, int num_partitions) {
  std::vector<Partial> partials;
  Eigen::Index start = 0;
  for (const Eigen::Index rows : array_split_sizes(p.K.rows(), num_partitions)) {
    partials.push_back(
        attend_partial(p.q, Mat(p.K.middleRows(start, rows)), Mat(p.V.middleRows(start, rows))));
    start += rows;
  }
  return partials;
}

Partial empty_partial(Eigen::Index dv) { return {-kInf, 0.0, Vec::Zero(dv)}; }

Vec normalized(const Partial& p) { return p.acc / p.denom; }

Partial left_fold(const std::vector<Partial>& partials) {
  Partial total = partials.front();
  for (size_t i = 1; i < partials.size(); ++i) total = merge(total, partials[i]);
  return total;
}

Partial right_fold(const std::vector<Partial>& partials) {
  Partial total = partials.back();
  for (size_t i = partials.size() - 1; i-- > 0;) total = merge(partials[i], total);
  return total;
}

/// Pairwise rounds, as a GPU reduction runs: (0 1) (2 3) ... then the pairs of pairs; an odd
/// one out is carried up unchanged.
Partial tree_merge(std::vector<Partial> level) {
  while (level.size() > 1) {
    std::vector<Partial> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(merge(level[i], level[i + 1]));
    if (level.size() % 2 == 1) next.push_back(level.back());
    level = std::move(next);
  }
  return level.front();
}

/// Expects two summaries of the same key set to agree: m to kScoreTol, denom and acc to
/// kExactTol relative to their size (both grow with the number of keys).
void expect_same_summary(const Partial& expected, const Partial& actual) {
  EXPECT_NEAR(expected.m, actual.m, kScoreTol);
  EXPECT_NEAR(expected.denom, actual.denom, kExactTol * expected.denom);
  EXPECT_TRUE(AllClose(expected.acc, actual.acc, kExactTol * expected.denom, kExactTol));
}

// ---- attend_partial -----------------------------------------------------------------------

/// [test_unnormalized_triple]
TEST(AttendPartial, ReturnsTheUnnormalizedTriple) {
  Rng rng(301);
  const Problem p = make_problem(rng, 45);
  expect_spread(p);

  // The triple, computed here in long double with plain loops.
  const Eigen::Index n = p.K.rows(), d = p.K.cols(), dv = p.V.cols();
  std::vector<long double> s(n);
  long double m = -kInf;
  for (Eigen::Index i = 0; i < n; ++i) {
    long double dot = 0;
    for (Eigen::Index j = 0; j < d; ++j) dot += static_cast<long double>(p.K(i, j)) * p.q[j];
    s[i] = dot / std::sqrt(static_cast<long double>(d));
    m = std::max(m, s[i]);
  }
  long double denom = 0;
  std::vector<long double> acc(dv, 0.0L);
  for (Eigen::Index i = 0; i < n; ++i) {
    const long double w = std::exp(s[i] - m);
    denom += w;
    for (Eigen::Index j = 0; j < dv; ++j) acc[j] += w * p.V(i, j);
  }
  Vec acc_expected(dv);  // [dv]
  for (Eigen::Index j = 0; j < dv; ++j) acc_expected[j] = static_cast<double>(acc[j]);
  ASSERT_GT(denom, 1.5L) << "test data: the weights must sum well past 1";

  const Partial got = attend_partial(p.q, p.K, p.V);
  EXPECT_NEAR(static_cast<double>(m), got.m, kScoreTol) << "m is the largest score";
  EXPECT_GT(got.denom, 1.5) << "denom is the sum of the weights e^(s - m), not 1: a partial "
                               "is never normalized";
  EXPECT_NEAR(static_cast<double>(denom), got.denom, kExactTol * static_cast<double>(denom));
  EXPECT_TRUE(AllClose(acc_expected, got.acc, kExactTol, kExactTol))
      << "acc = sum_i e^(s_i - m) v_i, not divided by denom";
}
/// [test_unnormalized_triple]

TEST(AttendPartial, ZeroKeysGiveTheEmptyPartial) {
  // No keys, so no logits to spread: the output is fixed by definition.
  const Vec q = Vec::Ones(8);
  const Partial got = attend_partial(q, Mat(0, 8), Mat(0, 5));
  EXPECT_EQ(got.m, -kInf);
  EXPECT_EQ(got.denom, 0.0);
  EXPECT_TRUE(BitIdentical(Vec::Zero(5), got.acc)) << "acc must be zeros(dv), dv = V.cols() = 5";
}

// ---- merge --------------------------------------------------------------------------------

/// [test_merge_identity]
TEST(Merge, EmptyPartialIsAnIdentityOnBothSides) {
  Rng rng(311);
  const Problem p = make_problem(rng, 37);
  expect_spread(p);
  const Partial x = attend_partial(p.q, p.K, p.V);
  // x's factor is e^0 = 1 exactly and the empty side adds 0 * 0, so nothing is rounded: the
  // result must be x to the bit, whatever the compiler does with multiply-adds.
  for (const Partial& got : {merge(empty_partial(12), x), merge(x, empty_partial(12))}) {
    EXPECT_EQ(x.m, got.m);
    EXPECT_EQ(x.denom, got.denom);
    EXPECT_TRUE(BitIdentical(x.acc, got.acc));
  }
}
/// [test_merge_identity]

TEST(Merge, TwoEmptyPartialsMergeToTheEmptyPartial) {
  // max(-inf, -inf) = -inf, and e^(-inf - (-inf)) is e^NaN: the factor of an empty side must be
  // 0 by a guard, not by the formula.
  const Partial got = merge(empty_partial(6), empty_partial(6));
  EXPECT_EQ(got.m, -kInf);
  EXPECT_EQ(got.denom, 0.0);
  EXPECT_TRUE(BitIdentical(Vec::Zero(6), got.acc));

  // The same thing inside a list: the empties at the front must not poison what follows.
  Rng rng(312);
  const Problem p = make_problem(rng, 29, 16, 6);
  expect_spread(p);
  const Vec out =
      merge_partials({empty_partial(6), empty_partial(6), attend_partial(p.q, p.K, p.V)});
  EXPECT_TRUE(AllClose(dense_truth(p), out, kExactTol));
}

/// [test_merge_commutes]
TEST(Merge, Commutes) {
  // Two key ranges whose maxima differ by several units, so both factors matter.
  Rng rng(313);
  const Problem p = make_problem(rng, 60);
  expect_spread(p);
  const Partial a = attend_partial(p.q, Mat(p.K.topRows(25)), Mat(p.V.topRows(25)));
  const double d = static_cast<double>(p.q.size());
  Mat k_low = p.K.bottomRows(35);  // [35, d]; k - c q lowers k·q/sqrt(d) by c |q|^2 / sqrt(d) = 6
  k_low.rowwise() -= (6.0 * std::sqrt(d) / p.q.squaredNorm()) * p.q.transpose();
  const double top_a = pa::testing::scores(p.q, p.K.topRows(25)).maxCoeff();
  ASSERT_GT(std::abs(top_a - pa::testing::scores(p.q, k_low).maxCoeff()), 2.0)
      << "test data: the maxima must differ";
  const Partial b = attend_partial(p.q, k_low, Mat(p.V.bottomRows(35)));

  const Partial ab = merge(a, b), ba = merge(b, a);
  EXPECT_EQ(ab.m, ba.m) << "max is exact, so M cannot depend on the order";
  // The formula is symmetric and IEEE-754 + and * are commutative, so without fused
  // multiply-adds the two orders are bit-identical. A compiler may fuse one product of
  // x*wa + y*wb into an FMA (clang on ARM does); that moves one rounding, at most an ulp or two
  // of the terms' size, so the bound is 4 eps times the sum of the magnitudes of the terms.
  const double m_star = std::max(a.m, b.m);
  const double wa = std::exp(a.m - m_star), wb = std::exp(b.m - m_star);
  EXPECT_LE(std::abs(ab.denom - ba.denom), 4 * kEps * (a.denom * wa + b.denom * wb));
  const Vec bound = 4 * kEps * (a.acc.cwiseAbs() * wa + b.acc.cwiseAbs() * wb);  // [dv]
  EXPECT_TRUE(((ab.acc - ba.acc).cwiseAbs().array() <= bound.array()).all())
      << "merge(a, b).acc = " << ab.acc.transpose() << "\nmerge(b, a).acc = " << ba.acc.transpose();
  Mat k_all(60, p.K.cols());  // [60, d], the keys the two partials cover
  k_all << p.K.topRows(25), k_low;
  EXPECT_TRUE(AllClose(pa::testing::reference_attention(p.q, k_all, p.V), normalized(ab),
                       kExactTol));
}
/// [test_merge_commutes]

TEST(Merge, MergedTripleIsTheTripleOfTheUnion) {
  // Merging the summaries of two halves gives the summary attend_partial computes over all the
  // keys at once: the same m, denom and acc, not just the same output after dividing.
  Rng rng(314);
  const Problem p = make_problem(rng, 54);
  expect_spread(p);
  const Partial first = attend_partial(p.q, Mat(p.K.topRows(23)), Mat(p.V.topRows(23)));
  const Partial second = attend_partial(p.q, Mat(p.K.bottomRows(31)), Mat(p.V.bottomRows(31)));
  expect_same_summary(attend_partial(p.q, p.K, p.V), merge(first, second));
}

/// [test_tree_equals_fold]
TEST(Merge, TreeOfMergesEqualsLeftFold) {
  // Associativity: 11 ragged ranges merged as a left fold, a right fold and a pairwise tree
  // give one summary, and that summary divides out to dense attention.
  Rng rng(315);
  const Problem p = make_problem(rng, 203);
  expect_spread(p);
  const std::vector<Partial> partials = attend_ranges(p, 11);
  const Partial left = left_fold(partials);
  const Partial right = right_fold(partials);
  const Partial tree = tree_merge(partials);
  EXPECT_EQ(left.m, right.m) << "max is exact, so every shape finds the same m";
  EXPECT_EQ(left.m, tree.m);
  expect_same_summary(left, right);
  expect_same_summary(left, tree);
  EXPECT_TRUE(AllClose(dense_truth(p), normalized(tree), kExactTol));
  EXPECT_TRUE(AllClose(dense_truth(p), normalized(left), kExactTol));
}
/// [test_tree_equals_fold]

// ---- merge_partials -----------------------------------------------------------------------

TEST(MergePartials, OnePartitionRoundTrips) {
  Rng rng(321);
  const Problem p = make_problem(rng, 77);
  expect_spread(p);
  EXPECT_TRUE(AllClose(dense_truth(p), merge_partials({attend_partial(p.q, p.K, p.V)}),
                       kExactTol));
  EXPECT_TRUE(AllClose(dense_truth(p), partitioned_attention(p.q, p.K, p.V, 1), kExactTol));
}

TEST(MergePartials, ReversedListGivesTheSameOutput) {
  // On a GPU the partitions finish in no fixed order; the merge must not care.
  Rng rng(322);
  const Problem p = make_problem(rng, kRaggedKeys);
  expect_spread(p);
  std::vector<Partial> partials = attend_ranges(p, 7);
  const Vec forward = merge_partials(partials);
  std::reverse(partials.begin(), partials.end());
  const Vec backward = merge_partials(partials);
  EXPECT_TRUE(AllClose(dense_truth(p), forward, kExactTol));
  EXPECT_TRUE(AllClose(dense_truth(p), backward, kExactTol));
  EXPECT_TRUE(AllClose(forward, backward, kExactTol));
}

TEST(MergePartials, ShuffledListGivesTheSameOutput) {
  Rng rng(323);
  const Problem p = make_problem(rng, kRaggedKeys);
  expect_spread(p);
  std::vector<Partial> partials = attend_ranges(p, 32);
  const Vec truth = dense_truth(p);
  for (int round = 0; round < 5; ++round) {
    std::shuffle(partials.begin(), partials.end(), rng.engine());
    EXPECT_TRUE(AllClose(truth, merge_partials(partials), kExactTol)) << "shuffle " << round;
  }
}

// ---- partitioned_attention ----------------------------------------------------------------

/// [test_any_partition_count]
/// Expects partitioned_attention over 1037 keys in `num_partitions` ranges to equal dense
/// attention. 1037 is not a multiple of any count used, so every split is ragged; partitioning
/// is exact, not an approximation, so the tolerance is rounding only.
void expect_matches_dense(int num_partitions) {
  Rng rng(330 + num_partitions);
  const Problem p = make_problem(rng, kRaggedKeys);
  expect_spread(p);
  EXPECT_TRUE(AllClose(dense_truth(p), partitioned_attention(p.q, p.K, p.V, num_partitions),
                       kExactTol));
}

TEST(PartitionedAttention, TwoPartitionsMatchDense) { expect_matches_dense(2); }
TEST(PartitionedAttention, ThreePartitionsMatchDense) { expect_matches_dense(3); }
TEST(PartitionedAttention, SevenPartitionsMatchDense) { expect_matches_dense(7); }
TEST(PartitionedAttention, ThirtyTwoPartitionsMatchDense) { expect_matches_dense(32); }
TEST(PartitionedAttention, HundredPartitionsMatchDense) { expect_matches_dense(100); }
/// [test_any_partition_count]

TEST(PartitionedAttention, MorePartitionsThanKeys) {
  // 13 keys in 32 partitions: the first 13 ranges hold one key, the last 19 are empty, as a GPU
  // grid sized for the longest sequence leaves idle blocks for a short one.
  Rng rng(341);
  const Problem p = make_problem(rng, 13);
  // With 13 keys a weight of 1 is only 13x uniform: ask for 4x (a top weight >= 0.31).
  expect_spread(p, 4.0);
  EXPECT_TRUE(AllClose(dense_truth(p), partitioned_attention(p.q, p.K, p.V, 32), kExactTol));

  // The same partials with the empty ones first.
  std::vector<Partial> partials = attend_ranges(p, 32);
  std::reverse(partials.begin(), partials.end());
  EXPECT_TRUE(AllClose(dense_truth(p), merge_partials(partials), kExactTol));

  // One key in three partitions: the output is that key's value row.
  const Problem one = make_problem(rng, 1);
  EXPECT_TRUE(AllClose(Vec(one.V.row(0).transpose()), partitioned_attention(one.q, one.K, one.V, 3),
                       kExactTol));
}

/// [test_extreme_logit]
TEST(PartitionedAttention, ExtremeLogitNear200InOnePartition) {
  // One key scores 200 (in partition 2 of 6), another 197 (in partition 5); the other 298 are
  // ordinary. e^200 overflows float32 (limit ~e^88.7) and fp16 long before; float64 survives
  // it, so this test is about the rescale: partition 2's m is ~190 above most others, whose
  // factors e^(m - M) are ~1e-83 and must neither vanish into NaN nor be skipped.
  Rng rng(342);
  Problem p = make_problem(rng, 300);
  const double d = static_cast<double>(p.q.size());
  const auto aim = [&](Eigen::Index row, double score) {  // k = q * score * sqrt(d) / |q|^2
    p.K.row(row) = (score * std::sqrt(d) / p.q.squaredNorm()) * p.q.transpose();
  };
  aim(137, 200.0);
  aim(251, 197.0);
  const Vec s = pa::testing::scores(p.q, p.K);  // [300]
  ASSERT_NEAR(s[137], 200.0, 1e-9) << "test data: the outlier really scores ~200";
  ASSERT_NEAR(s[251], 197.0, 1e-9);
  Vec others = s;
  others[137] = others[251] = 0.0;
  ASSERT_LT(others.maxCoeff(), 50.0) << "test data: the other keys are ordinary";
  expect_spread(p);

  // Scores of ~200 carry ~200x the absolute rounding of scores of ~1, and exp() passes it on
  // to the weights: 1e-11 is rounding, a wrong factor is off by O(0.01) or more.
  constexpr double kLargeLogitTol = 1e-11;
  EXPECT_TRUE(AllClose(dense_truth(p), partitioned_attention(p.q, p.K, p.V, 6), kLargeLogitTol));
}
/// [test_extreme_logit]

TEST(PartitionedAttention, LogitsPastTheFloat64ExpLimit) {
  // Top score 1000 in a float64 world: e^1000 is inf (the limit is ~e^709.8), so only a partial
  // that subtracts its own max before exp() stays finite.
  Rng rng(343);
  Problem p = make_problem(rng, 97);
  const double top = pa::testing::scores(p.q, p.K).maxCoeff();
  ASSERT_GT(top, 0.0);
  p.q *= 1000.0 / top;
  ASSERT_NEAR(pa::testing::scores(p.q, p.K).maxCoeff(), 1000.0, 1e-9);
  expect_spread(p);
  // Scores of ~1000 carry ~1000x the rounding of scores of ~1, passed on by exp(): the reference
  // solution lands within 1e-13. 1e-11, the bound labs 01, 02 and 04 use for the same case, is
  // far below what a wrong rescale or an overflow produces.
  constexpr double kHugeLogitTol = 1e-11;
  EXPECT_TRUE(AllClose(dense_truth(p), partitioned_attention(p.q, p.K, p.V, 5), kHugeLogitTol));
}

/// [test_threads_same_bits]
TEST(PartitionedAttention, ThreadsGiveTheSameBits) {
  // 1037 keys in 7 ragged ranges on 1, 2, 3 and 8 threads, and in 3 ranges on the same counts
  // (8 threads for 7 or 3 ranges: more threads than ranges must work). Threads only change who
  // attends a range, never the arithmetic or the merge order, so every output must have the
  // bits of the one-thread output, and that output is dense attention.
  Rng rng(344);
  const Problem p = make_problem(rng, kRaggedKeys);
  expect_spread(p);
  const Vec truth = dense_truth(p);
  for (const int num_partitions : {7, 3}) {
    const Vec one_thread = partitioned_attention(p.q, p.K, p.V, num_partitions, 1);
    EXPECT_TRUE(AllClose(truth, one_thread, kExactTol)) << num_partitions << " partitions";
    for (const int num_threads : {2, 3, 8}) {
      EXPECT_TRUE(BitIdentical(one_thread,
                               partitioned_attention(p.q, p.K, p.V, num_partitions, num_threads),
                               {{}, "one thread", std::to_string(num_threads) + " threads"}))
          << num_partitions << " partitions on " << num_threads << " threads";
    }
  }
}
/// [test_threads_same_bits]

/// [test_finishing_order]
TEST(PartitionedAttention, FirstRangeFinishingLastIsStillMergedFirst) {
  // Three keys in three ranges on three threads, all scoring 1, so every factor is e^0 = 1 and
  // a merge only adds. Column 0 of V holds 1e17, -1e17 and 1: in range order (1e17 - 1e17) + 1
  // is 1, but -1e17 + 1 rounds back to -1e17 (doubles near 1e17 are 16 apart), so a merge that
  // takes range 0 last loses the 1 and gives 0 instead of 1/3. Column 1 is ordinary.
  const Vec q = Vec::Unit(4, 0);  // [4]
  Mat K(3, 4);                    // [3, 4]; k · q / sqrt(4) = 1 for each key
  K << 2, 0, 0, 0,                // K(i, 1) = i tells the ranges apart in the hook below
      2, 1, 0, 0,
      2, 2, 0, 0;
  Mat V(3, 2);  // [3, 2]
  V << 1e17, 1,
      -1e17, 2,
      1, 3;
  const Vec one_thread = partitioned_attention(q, K, V, 3, 1);

  // The given hook runs at the top of attend_partial on the thread attending each range; range
  // 0's waits until ranges 1 and 2 have begun, then 100 ms more, so its thread finishes last.
  std::mutex mutex;
  std::condition_variable begun;
  int others_begun = 0;
  auto& hook = checks::attend_partial_test_hook();
  hook = [&](const RowsView& keys) {
    if (keys.rows() != 1) return;
    std::unique_lock lock(mutex);
    if (keys(0, 1) != 0.0) {
      ++others_begun;
      begun.notify_all();
      return;
    }
    // Bounded, so a design that attends range 0 before starting the other threads only waits.
    begun.wait_for(lock, std::chrono::seconds(2), [&] { return others_begun == 2; });
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  };
  struct Unhook {  // clears the hook however this test ends
    std::function<void(const RowsView&)>& hook;
    ~Unhook() { hook = nullptr; }
  } unhook{hook};
  EXPECT_TRUE(BitIdentical(one_thread, partitioned_attention(q, K, V, 3, 3),
                           {{}, "one thread", "3 threads, range 0 finishing last"}))
      << "the entries must be merged in range order after the joins, not as threads finish";
}
/// [test_finishing_order]

}  // namespace
}  // namespace pa::flash_decoding

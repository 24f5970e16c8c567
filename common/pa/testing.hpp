/// \file
/// Test helpers shared by every lab's test_lab.cpp: closeness assertions that report the worst
/// element and fail on any NaN/Inf, poison fills for padding, seeded random data, and a float64
/// reference attention written as plain loops (independent of anything a student writes).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <limits>
#include <random>

#include "pa/types.hpp"

namespace pa::testing {

/// [poison]
/// The value unused cache slots are filled with: any read of it turns the output into NaN.
inline constexpr double kPoison = std::numeric_limits<double>::quiet_NaN();

/// A finite but huge value for padding: a read of it swamps the softmax instead of NaN-ing it.
inline constexpr double kHugePoison = 1e6;
/// [poison]

/// How a failure message names an element and the two sides of a comparison: by default
/// "[r, c]", "expected" and "actual"; a lab's tests can say "sequence 1, head 3, dimension 62"
/// and "reference" / "one-shot run".
struct Labels {
  std::function<std::string(Eigen::Index, Eigen::Index)> where;  // empty: "[r, c]"
  std::string expected = "expected";
  std::string actual = "actual";
};

/// [all_close]
/// Passes when `actual` has the shape of `expected`, holds no NaN/Inf, and every element
/// satisfies |actual - expected| <= atol + rtol * |expected|; otherwise the message names the
/// worst element (index, expected, actual, difference, tolerance) or the first non-finite one.
::testing::AssertionResult AllCloseImpl(const Eigen::MatrixXd& expected,
                                        const Eigen::MatrixXd& actual, double atol, double rtol,
                                        const Labels& labels = {});

/// AllCloseImpl for any two Eigen expressions (vectors, row-major matrices, blocks).
template <class A, class B>
::testing::AssertionResult AllClose(const Eigen::DenseBase<A>& expected,
                                    const Eigen::DenseBase<B>& actual, double atol,
                                    double rtol = 0.0, const Labels& labels = {}) {
  return AllCloseImpl(expected.derived().template cast<double>(),
                      actual.derived().template cast<double>(), atol, rtol, labels);
}
/// [all_close]

/// Passes when both have the same shape and every element has the same bits; a NaN or Inf on
/// either side fails as such ("<side> holds NaN at ..."), before any comparison.
::testing::AssertionResult BitIdenticalImpl(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                            const Labels& labels = {});

/// BitIdenticalImpl for any two Eigen expressions (labels.expected names a, labels.actual b).
template <class A, class B>
::testing::AssertionResult BitIdentical(const Eigen::DenseBase<A>& a,
                                        const Eigen::DenseBase<B>& b, const Labels& labels = {}) {
  return BitIdenticalImpl(a.derived().template cast<double>(), b.derived().template cast<double>(),
                          labels);
}

/// [far_from_uniform]
/// Passes when the softmax of `scores` is far from uniform: its largest weight is at least
/// `factor` times 1/n, so an implementation that averages values can never pass on this data.
::testing::AssertionResult FarFromUniform(const Vec& scores, double factor = 10.0);
/// [far_from_uniform]

/// The attention scores k_i·q / sqrt(d) for every row k_i of K: [n].
Vec scores(const Vec& q, const Mat& K);

/// Softmax attention of one query, computed in long double with explicit loops:
/// q: [d], K: [n, d], V: [n, dv] -> [dv]. The tests' ground truth.
Vec reference_attention(const Vec& q, const Mat& K, const Mat& V);

/// Multi-head reference over contiguous K/V: query head h attends kv head
/// h / (num_heads / num_kv_heads). q: [num_heads, head_dim];
/// K, V: [n, num_kv_heads * head_dim] -> [num_heads, head_dim].
Mat reference_attention_heads(const Mat& q, const Mat& K, const Mat& V);

/// Passes when `call` throws std::invalid_argument whose message contains every one of
/// `fragments` (the argument's name, the expected value, the actual value ...).
::testing::AssertionResult ThrowsInvalidArgument(const std::function<void()>& call,
                                                 std::initializer_list<std::string_view> fragments);

/// The cache row of logical token t of a sequence whose blocks `block_table` lists:
/// block_table[t / block_size] * block_size + t % block_size, in plain integer arithmetic, so
/// tests never rely on student code to place their data.
Eigen::Index slot_of(const IVec& block_table, int t, int block_size);

/// A [num_blocks * block_size, rows.cols()] cache holding row t of `rows` at slot_of(t) and
/// `poison` in every other row: the sequence in its blocks, and every unused row loud.
Mat paged_cache(const Mat& rows, const IVec& block_table, int block_size, int num_blocks,
                double poison = kPoison);

/// Fills every element of `m` with `value` (NaN by default).
void poison(Mat& m, double value = kPoison);

/// A seeded generator, so every test's data is the same on every run and machine.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  /// A [rows, cols] matrix of independent N(0, stddev^2) draws.
  Mat normal(Eigen::Index rows, Eigen::Index cols, double stddev = 1.0);

  /// An [n] vector of independent N(0, stddev^2) draws.
  Vec normal_vec(Eigen::Index n, double stddev = 1.0);

  /// An integer drawn uniformly from [lo, hi].
  int uniform_int(int lo, int hi);

  /// A random permutation of 0 .. n-1.
  IVec permutation(int n);

  /// `count` distinct ids drawn from 0 .. n-1, in random order (a random block table).
  IVec distinct_ids(int count, int n);

  /// The underlying engine, for std::shuffle and friends.
  std::mt19937_64& engine() { return engine_; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace pa::testing

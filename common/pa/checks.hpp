/// \file
/// Argument checks shared by every lab: each failed check throws std::invalid_argument whose
/// message names the function, the argument, what was expected and what was passed; for example
///   paged_attention: block_size — expected > 0, got 0
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "pa/types.hpp"

namespace pa {

/// Builds the one-line message every failed check uses: "<function>: <argument> — expected
/// <expected>, got <actual>".
std::string argument_error_message(std::string_view function, std::string_view argument,
                                   std::string_view expected, std::string_view actual);

/// [arg_check]
/// Checks the arguments of one public function; `function` prefixes every message it throws.
class ArgCheck {
 public:
  explicit ArgCheck(std::string_view function) : function_(function) {}

  /// Throws std::invalid_argument for `argument` unless `ok`; `expected` and `actual` are
  /// the human-readable halves of the message.
  void that(bool ok, std::string_view argument, std::string_view expected,
            std::string_view actual) const {
    if (!ok) fail(argument, expected, actual);
  }

  /// Requires value > 0.
  void positive(std::string_view argument, std::int64_t value) const {
    that(value > 0, argument, "> 0", std::to_string(value));
  }

  /// Requires value >= 0.
  void non_negative(std::string_view argument, std::int64_t value) const {
    that(value >= 0, argument, ">= 0", std::to_string(value));
  }

  /// Requires value <= limit; `limit_name` says where the limit comes from.
  void at_most(std::string_view argument, std::int64_t value, std::int64_t limit,
               std::string_view limit_name) const {
    that(value <= limit, argument,
         "<= " + std::to_string(limit) + " (" + std::string(limit_name) + ")",
         std::to_string(value));
  }
  /// [arg_check]

  /// Requires actual == expected; `expected_name` says where the expected value comes from.
  void equal(std::string_view argument, std::int64_t actual, std::int64_t expected,
             std::string_view expected_name) const {
    that(actual == expected, argument,
         std::to_string(expected) + " (" + std::string(expected_name) + ")",
         std::to_string(actual));
  }

  /// Requires `divisor` > 0 and `value` % `divisor` == 0.
  void multiple_of(std::string_view argument, std::int64_t value, std::int64_t divisor,
                   std::string_view divisor_name) const {
    that(divisor > 0 && value % divisor == 0, argument,
         "a multiple of " + std::string(divisor_name) + " = " + std::to_string(divisor),
         std::to_string(value));
  }

  /// Requires every one of the first `count` entries of `ids` to lie in [lo, hi); the message
  /// names the first entry that does not.
  void ids_in_range(std::string_view argument, const IVec& ids, Eigen::Index count,
                    std::int64_t lo, std::int64_t hi, std::string_view range_name) const;

  /// Requires `m` to have `rows` rows; `rows_name` says where that number comes from.
  template <class Derived>
  void rows(std::string_view argument, const Eigen::EigenBase<Derived>& m, Eigen::Index rows,
            std::string_view rows_name) const {
    that(m.rows() == rows, std::string(argument) + ".rows()",
         std::to_string(rows) + " (" + std::string(rows_name) + ")", std::to_string(m.rows()));
  }

  /// Requires `m` to have `cols` columns; `cols_name` says where that number comes from.
  template <class Derived>
  void cols(std::string_view argument, const Eigen::EigenBase<Derived>& m, Eigen::Index cols,
            std::string_view cols_name) const {
    that(m.cols() == cols, std::string(argument) + ".cols()",
         std::to_string(cols) + " (" + std::string(cols_name) + ")", std::to_string(m.cols()));
  }

  /// Requires `m` to have the same shape as `like`, named `like_name`.
  template <class A, class B>
  void same_shape(std::string_view argument, const Eigen::EigenBase<A>& m,
                  std::string_view like_name, const Eigen::EigenBase<B>& like) const {
    that(m.rows() == like.rows() && m.cols() == like.cols(), argument,
         shape(like.rows(), like.cols()) + " (the shape of " + std::string(like_name) + ")",
         shape(m.rows(), m.cols()));
  }

  /// "[rows, cols]", the shape notation the messages and the book use.
  static std::string shape(Eigen::Index rows, Eigen::Index cols);

  /// Throws std::invalid_argument with the standard message.
  [[noreturn]] void fail(std::string_view argument, std::string_view expected,
                         std::string_view actual) const;

 private:
  std::string function_;
};

}  // namespace pa

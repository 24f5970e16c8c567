#include "pa/testing.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace pa::testing {
namespace {

/// "[r]" for a vector, "[r, c]" for a matrix, or what `labels.where` says.
std::string where(const Labels& labels, const Eigen::MatrixXd& m, Eigen::Index r, Eigen::Index c) {
  if (labels.where) return labels.where(r, c);
  std::ostringstream out;
  if (m.cols() == 1) {
    out << "[" << r << "]";
  } else {
    out << "[" << r << ", " << c << "]";
  }
  return out.str();
}

/// A tolerance as a person writes it: 1e-12, not 9.9999999999999998e-13.
std::string short_number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

::testing::AssertionResult AllCloseImpl(const Eigen::MatrixXd& expected,
                                        const Eigen::MatrixXd& actual, double atol, double rtol,
                                        const Labels& labels) {
  if (expected.rows() != actual.rows() || expected.cols() != actual.cols()) {
    return ::testing::AssertionFailure()
           << "shape mismatch: " << labels.expected << " [" << expected.rows() << ", "
           << expected.cols() << "], " << labels.actual << " [" << actual.rows() << ", "
           << actual.cols() << "]";
  }
  double worst_excess = -1.0;
  Eigen::Index worst_r = 0, worst_c = 0;
  for (Eigen::Index r = 0; r < actual.rows(); ++r) {
    for (Eigen::Index c = 0; c < actual.cols(); ++c) {
      const double a = actual(r, c), e = expected(r, c);
      if (!std::isfinite(a)) {
        std::ostringstream msg;
        msg.precision(17);
        msg << labels.actual << " holds " << a << " at " << where(labels, actual, r, c) << " ("
            << labels.expected << " " << e << ")";
        return ::testing::AssertionFailure() << msg.str();
      }
      const double tol = atol + rtol * std::abs(e);
      const double excess = std::abs(a - e) - tol;
      if (excess > worst_excess || (r == 0 && c == 0)) {
        worst_excess = excess;
        worst_r = r;
        worst_c = c;
      }
    }
  }
  const double e = actual.size() ? expected(worst_r, worst_c) : 0.0;
  const double a = actual.size() ? actual(worst_r, worst_c) : 0.0;
  const double tol = atol + rtol * std::abs(e);
  std::ostringstream msg;
  msg.precision(17);
  msg << "worst element " << where(labels, actual, worst_r, worst_c) << ": " << labels.expected
      << " " << e << ", " << labels.actual << " " << a << ", |diff| " << std::abs(a - e)
      << ", tolerance " << short_number(tol) << " (atol " << short_number(atol) << ", rtol "
      << short_number(rtol) << ")";
  if (actual.size() == 0 || std::abs(a - e) <= tol) {
    return ::testing::AssertionSuccess() << msg.str();
  }
  return ::testing::AssertionFailure() << msg.str();
}

::testing::AssertionResult BitIdenticalImpl(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                            const Labels& labels) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) {
    return ::testing::AssertionFailure()
           << "shape mismatch: " << labels.expected << " [" << a.rows() << ", " << a.cols()
           << "] vs " << labels.actual << " [" << b.rows() << ", " << b.cols() << "]";
  }
  for (const auto& [m, name] :
       {std::pair<const Eigen::MatrixXd&, const std::string&>{a, labels.expected},
        {b, labels.actual}}) {
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
      for (Eigen::Index c = 0; c < m.cols(); ++c) {
        if (!std::isfinite(m(r, c))) {
          return ::testing::AssertionFailure()
                 << name << " holds " << m(r, c) << " at " << where(labels, m, r, c)
                 << " (first non-finite element)";
        }
      }
    }
  }
  for (Eigen::Index r = 0; r < a.rows(); ++r) {
    for (Eigen::Index c = 0; c < a.cols(); ++c) {
      const double x = a(r, c), y = b(r, c);
      if (std::memcmp(&x, &y, sizeof x) != 0) {
        std::ostringstream msg;
        msg.precision(17);
        msg << "first difference at " << where(labels, a, r, c) << ": " << labels.expected << " "
            << x << " vs " << labels.actual << " " << y;
        return ::testing::AssertionFailure() << msg.str();
      }
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult FarFromUniform(const Vec& scores, double factor) {
  if (scores.size() == 0) return ::testing::AssertionFailure() << "no scores";
  const Vec w = (scores.array() - scores.maxCoeff()).exp().matrix();
  const double largest = w.maxCoeff() / w.sum();
  const double uniform = 1.0 / static_cast<double>(scores.size());
  if (largest >= factor * uniform) {
    return ::testing::AssertionSuccess()
           << "largest softmax weight " << largest << " >= " << factor << " x 1/" << scores.size();
  }
  return ::testing::AssertionFailure()
         << "test data too tame: largest softmax weight " << largest << " < " << factor << " x 1/"
         << scores.size() << "; spread the logits so a wrong softmax is loud";
}

Vec scores(const Vec& q, const Mat& K) {
  return (K * q) / std::sqrt(static_cast<double>(q.size()));
}

Vec reference_attention(const Vec& q, const Mat& K, const Mat& V) {
  const Eigen::Index n = K.rows(), d = K.cols(), dv = V.cols();
  std::vector<long double> s(static_cast<size_t>(n));
  long double m = -std::numeric_limits<long double>::infinity();
  for (Eigen::Index i = 0; i < n; ++i) {
    long double dot = 0;
    for (Eigen::Index j = 0; j < d; ++j) dot += static_cast<long double>(K(i, j)) * q[j];
    s[i] = dot / std::sqrt(static_cast<long double>(d));
    m = std::max(m, s[i]);
  }
  long double denom = 0;
  std::vector<long double> acc(static_cast<size_t>(dv), 0.0L);
  for (Eigen::Index i = 0; i < n; ++i) {
    const long double p = std::exp(s[i] - m);
    denom += p;
    for (Eigen::Index j = 0; j < dv; ++j) acc[j] += p * V(i, j);
  }
  Vec out(dv);
  for (Eigen::Index j = 0; j < dv; ++j) out[j] = static_cast<double>(acc[j] / denom);
  return out;
}

Mat reference_attention_heads(const Mat& q, const Mat& K, const Mat& V) {
  const Eigen::Index num_heads = q.rows(), head_dim = q.cols();
  const Eigen::Index group = num_heads / (K.cols() / head_dim);
  Mat out(num_heads, head_dim);  // [num_heads, head_dim]
  for (Eigen::Index h = 0; h < num_heads; ++h) {
    const Eigen::Index col = (h / group) * head_dim;
    out.row(h) = reference_attention(q.row(h).transpose(), K.middleCols(col, head_dim),
                                     V.middleCols(col, head_dim))
                     .transpose();
  }
  return out;
}

::testing::AssertionResult ThrowsInvalidArgument(
    const std::function<void()>& call, std::initializer_list<std::string_view> fragments) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    const std::string_view what = e.what();
    for (std::string_view f : fragments) {
      if (what.find(f) == std::string_view::npos) {
        return ::testing::AssertionFailure()
               << "the message \"" << what << "\" does not mention \"" << f << "\"";
      }
    }
    return ::testing::AssertionSuccess() << e.what();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure()
           << "threw something other than std::invalid_argument: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw std::invalid_argument";
}

Eigen::Index slot_of(const IVec& block_table, int t, int block_size) {
  return Eigen::Index{block_table[t / block_size]} * block_size + t % block_size;
}

Mat paged_cache(const Mat& rows, const IVec& block_table, int block_size, int num_blocks,
                double poison) {
  Mat cache = Mat::Constant(Eigen::Index{num_blocks} * block_size, rows.cols(), poison);
  for (int t = 0; t < rows.rows(); ++t)
    cache.row(slot_of(block_table, t, block_size)) = rows.row(t);
  return cache;
}

void poison(Mat& m, double value) {
  m.setConstant(value);
}

Mat Rng::normal(Eigen::Index rows, Eigen::Index cols, double stddev) {
  std::normal_distribution<double> dist(0.0, stddev);
  Mat m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = dist(engine_);
  return m;
}

Vec Rng::normal_vec(Eigen::Index n, double stddev) {
  return normal(n, 1, stddev).col(0);
}

int Rng::uniform_int(int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(engine_);
}

IVec Rng::permutation(int n) {
  IVec p(n);
  std::iota(p.begin(), p.end(), 0);
  std::shuffle(p.begin(), p.end(), engine_);
  return p;
}

IVec Rng::distinct_ids(int count, int n) {
  return permutation(n).head(count);
}

}  // namespace pa::testing

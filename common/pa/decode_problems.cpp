#include "pa/decode_problems.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "pa/elements.hpp"

namespace pa::testing {

// ---- New tokens written through slot_mapping ---------------------------------------------------

TokenBatch make_token_batch(DType dtype, int num_kv_heads, int head_size, const Mat& key_rows,
                            const Mat& value_rows, const std::vector<std::int64_t>& slots) {
  const std::int64_t n = static_cast<std::int64_t>(slots.size());
  if (key_rows.rows() != n || value_rows.rows() != n) {
    throw std::invalid_argument("make_token_batch: " + std::to_string(n) + " slots for " +
                                std::to_string(key_rows.rows()) + " key rows and " +
                                std::to_string(value_rows.rows()) + " value rows");
  }
  TokenBatch batch{to_tensor(dtype, key_rows, {n, num_kv_heads, head_size}),  // Mat is row-major
                   to_tensor(dtype, value_rows, {n, num_kv_heads, head_size}),
                   Tensor(DType::kInt64, {n})};
  std::copy(slots.begin(), slots.end(), batch.slot_mapping.data_as<std::int64_t>());
  return batch;
}

TokenBatch step_token_batch(DType dtype, int num_kv_heads, int head_size, int block_size,
                            const std::vector<Mat>& k, const std::vector<Mat>& v,
                            const std::vector<std::vector<int>>& blocks,
                            const std::vector<int>& first, const std::vector<int>& last) {
  for (const std::size_t size : {v.size(), blocks.size(), first.size(), last.size()}) {
    if (size != k.size()) {
      throw std::invalid_argument("step_token_batch: k holds " + std::to_string(k.size()) +
                                  " sequences, but v, blocks, first and last hold " +
                                  std::to_string(v.size()) + ", " + std::to_string(blocks.size()) +
                                  ", " + std::to_string(first.size()) + " and " +
                                  std::to_string(last.size()));
    }
  }
  Eigen::Index n = 0;
  for (std::size_t s = 0; s < k.size(); ++s) n += last[s] - first[s] + 1;  // + its padding token
  const Eigen::Index width = Eigen::Index{num_kv_heads} * head_size;
  Mat key_rows = Mat::Constant(n, width, 7.0), value_rows = key_rows;  // padding rows stay 7s
  std::vector<std::int64_t> slots;
  for (std::size_t s = 0; s < k.size(); ++s) {
    for (int t = first[s]; t < last[s]; ++t) {
      const auto row = static_cast<Eigen::Index>(slots.size());
      key_rows.row(row) = k[s].row(t);
      value_rows.row(row) = v[s].row(t);
      const std::int64_t block = blocks[s][static_cast<std::size_t>(t / block_size)];
      slots.push_back(block * block_size + t % block_size);
    }
    slots.push_back(-1);
  }
  return make_token_batch(dtype, num_kv_heads, head_size, key_rows, value_rows, slots);
}

void reference_reshape_and_cache(KvLayout layout, const Tensor& key, const Tensor& value,
                                 Tensor& key_cache, Tensor& value_cache,
                                 const std::vector<std::int64_t>& slots) {
  const std::int64_t width = key.size(1) * key.size(2);
  const std::int64_t block_size = block_size_of(layout, value_cache);
  const Mat k = to_mat(key, key.size(0), width), v = to_mat(value, value.size(0), width);
  for (std::size_t t = 0; t < slots.size(); ++t) {
    if (slots[t] < 0) continue;  // padding
    const auto token = static_cast<Eigen::Index>(t);
    put_token(layout, key_cache, value_cache, slots[t] / block_size, slots[t] % block_size,
              k.row(token), v.row(token));
  }
}

::testing::AssertionResult same_cache_bytes(KvLayout layout, const Tensor& want_key_cache,
                                            const Tensor& want_value_cache,
                                            const Tensor& key_cache, const Tensor& value_cache) {
  const std::int64_t blocks = value_cache.size(0), heads = kv_heads_of(layout, value_cache);
  const std::int64_t dims = head_size_of(layout, value_cache);
  const std::int64_t rows = block_size_of(layout, value_cache);
  const std::size_t elem = dtype_size(value_cache.dtype());
  for (const bool is_key : {true, false}) {
    const Tensor& want = is_key ? want_key_cache : want_value_cache;
    const Tensor& got = is_key ? key_cache : value_cache;
    for (std::int64_t b = 0; b < blocks; ++b) {
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t h = 0; h < heads; ++h) {
          for (std::int64_t d = 0; d < dims; ++d) {
            const std::int64_t i =
                is_key ? key_index(layout, got, b, h, r, d) : value_index(layout, got, b, h, r, d);
            const auto* w = static_cast<const unsigned char*>(want.data()) + i * elem;
            const auto* g = static_cast<const unsigned char*>(got.data()) + i * elem;
            if (std::memcmp(w, g, elem) != 0) {
              return ::testing::AssertionFailure()
                     << (is_key ? "key_cache" : "value_cache") << " differs first at block " << b
                     << ", row " << r << ", kv head " << h << ", dimension " << d << ": expected "
                     << load(want, i) << ", got " << load(got, i);
            }
          }
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// ---- Decode problems --------------------------------------------------------------------------

DecodeTolerance decode_tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return {1e-4, 1e-4};
    case DType::kFloat16:
      return {1e-4, 1e-3};
    case DType::kBFloat16:
      return {1e-4, 8e-3};
    default:
      return {0.0, 0.0};
  }
}

std::string describe(const DecodeConfig& c) {
  return dtype_name(c.dtype) + " head_size " + std::to_string(c.head_size) + " block_size " +
         std::to_string(c.block_size) + " heads " + std::to_string(c.num_heads) + "/" +
         std::to_string(c.num_kv_heads);
}

float DecodeProblem::scale() const {
  return static_cast<float>(1.0 / std::sqrt(double(cfg.head_size)));
}

Tensor DecodeProblem::nan_out() const {
  Tensor out(cfg.dtype, query.shape());
  out.fill_bytes(0xFF);
  return out;
}

void place_at(DecodeProblem& p, std::vector<std::vector<int>> blocks, int num_blocks, int pad_id) {
  const DecodeConfig& c = p.cfg;
  p.blocks = std::move(blocks);
  p.num_blocks = num_blocks;
  int width = 1;
  for (const auto& row : p.blocks) width = std::max(width, static_cast<int>(row.size()) + 1);
  p.key_cache =
      nan_key_cache(c.layout, c.dtype, num_blocks, c.block_size, c.num_kv_heads, c.head_size);
  p.value_cache =
      nan_value_cache(c.layout, c.dtype, num_blocks, c.block_size, c.num_kv_heads, c.head_size);
  p.block_tables = Tensor(DType::kInt32, {p.num_seqs(), width});
  for (int s = 0; s < p.num_seqs(); ++s) {
    const auto& row = p.blocks[static_cast<std::size_t>(s)];
    for (int b = 0; b < width; ++b) {
      const int id = b < static_cast<int>(row.size()) ? row[static_cast<std::size_t>(b)] : pad_id;
      p.block_tables.data_as<std::int32_t>()[s * width + b] = id;
    }
    for (int t = 0; t < c.seq_lens[static_cast<std::size_t>(s)]; ++t) {
      put_token(c.layout, p.key_cache, p.value_cache,
                row[static_cast<std::size_t>(t / c.block_size)], t % c.block_size,
                p.k[static_cast<std::size_t>(s)].row(t), p.v[static_cast<std::size_t>(s)].row(t));
    }
  }
}

void place_shuffled(DecodeProblem& p, Rng& rng) {
  const DecodeConfig& c = p.cfg;
  int needed = 0;
  for (int len : c.seq_lens) needed += blocks_for(len, c.block_size);
  const int num_blocks = needed + std::max(c.spare_blocks, 1);  // >= 1 spare: the padding id
  const IVec order = rng.permutation(num_blocks);
  std::vector<std::vector<int>> blocks(c.seq_lens.size());
  int next = 0;
  for (std::size_t s = 0; s < c.seq_lens.size(); ++s) {
    for (int b = 0; b < blocks_for(c.seq_lens[s], c.block_size); ++b) {
      blocks[s].push_back(order[next++]);
    }
  }
  place_at(p, std::move(blocks), num_blocks, order[needed]);
}

void widen_block_tables(DecodeProblem& p, int width) {
  const std::int64_t num_seqs = p.block_tables.size(0), old_width = p.block_tables.size(1);
  if (width <= old_width) return;
  Tensor wide(DType::kInt32, {num_seqs, width});
  const std::int32_t* from = p.block_tables.data_as<std::int32_t>();
  std::int32_t* to = wide.data_as<std::int32_t>();
  for (std::int64_t s = 0; s < num_seqs; ++s) {
    const std::int32_t pad_id = from[s * old_width + old_width - 1];  // place_at's padding
    std::copy_n(from + s * old_width, old_width, to + s * width);
    std::fill(to + s * width + old_width, to + (s + 1) * width, pad_id);
  }
  p.block_tables = std::move(wide);
}

DecodeProblem make_decode_problem(Rng& rng, const DecodeConfig& c) {
  DecodeProblem p;
  p.cfg = c;
  const int num_seqs = static_cast<int>(c.seq_lens.size());
  const int width = c.num_kv_heads * c.head_size;
  p.q = rounded(c.dtype, rng.normal(num_seqs * c.num_heads, c.head_size, c.logit_spread));
  for (int len : c.seq_lens) {
    p.k.push_back(rounded(c.dtype, rng.normal(len, width)));
    p.v.push_back(rounded(c.dtype, rng.normal(len, width)));
  }
  p.max_seq_len = *std::max_element(c.seq_lens.begin(), c.seq_lens.end());
  p.query = to_tensor(c.dtype, p.q, {num_seqs, c.num_heads, c.head_size});
  p.seq_lens = Tensor(DType::kInt32, {num_seqs});
  for (int s = 0; s < num_seqs; ++s) p.seq_lens.data_as<std::int32_t>()[s] = c.seq_lens[s];
  place_shuffled(p, rng);
  return p;
}

Mat expected_decode(const DecodeProblem& p) {
  const DecodeConfig& c = p.cfg;
  Mat out(p.num_seqs() * c.num_heads, c.head_size);
  for (int s = 0; s < p.num_seqs(); ++s) {
    out.middleRows(Eigen::Index{s} * c.num_heads, c.num_heads) = reference_attention_heads(
        p.q.middleRows(Eigen::Index{s} * c.num_heads, c.num_heads),
        p.k[static_cast<std::size_t>(s)], p.v[static_cast<std::size_t>(s)]);
  }
  return out;
}

Labels decode_labels(int num_heads, std::string expected, std::string actual) {
  Labels labels;
  labels.where = [num_heads](Eigen::Index r, Eigen::Index d) {
    return "sequence " + std::to_string(r / num_heads) + ", head " + std::to_string(r % num_heads) +
           ", dimension " + std::to_string(d);
  };
  labels.expected = std::move(expected);
  labels.actual = std::move(actual);
  return labels;
}

::testing::AssertionResult SpreadIsWide(const DecodeProblem& p) {
  const auto longest =
      std::max_element(p.cfg.seq_lens.begin(), p.cfg.seq_lens.end()) - p.cfg.seq_lens.begin();
  return FarFromUniform(query_scores(p, longest * p.cfg.num_heads));
}

Vec query_scores(const DecodeProblem& p, Eigen::Index row) {
  const DecodeConfig& c = p.cfg;
  const auto seq = static_cast<std::size_t>(row / c.num_heads);
  const int kv_head = static_cast<int>(row % c.num_heads) / (c.num_heads / c.num_kv_heads);
  return scores(p.q.row(row).transpose(), p.k[seq].middleCols(kv_head * c.head_size, c.head_size));
}

void add_attention_sink(DecodeProblem& p, double logit) {
  const DecodeConfig& c = p.cfg;
  const int group = c.num_heads / c.num_kv_heads;
  const double scale = p.scale();
  for (int s = 0; s < p.num_seqs(); ++s) {
    Mat& k = p.k[static_cast<std::size_t>(s)];  // [seq_len, num_kv_heads * head_size]
    for (int h = 0; h < c.num_kv_heads; ++h) {
      const Eigen::Index first = Eigen::Index{s} * c.num_heads + Eigen::Index{h} * group;
      const Vec direction = p.q.middleRows(first, group).colwise().sum().transpose();
      // The smallest score of the group on the direction, per unit of stretch.
      double least = (p.q.middleRows(first, group) * direction).minCoeff() * scale;
      if (least <= 0.0) least = 1e-3;  // (never on N(0, 1) queries; keeps the stretch finite)
      for (double stretch = logit / least;; stretch *= 1.01) {
        k.row(0).segment(Eigen::Index{h} * c.head_size, c.head_size) =
            rounded(c.dtype, (direction * stretch).transpose());
        const Vec key = k.row(0).segment(Eigen::Index{h} * c.head_size, c.head_size).transpose();
        if ((p.q.middleRows(first, group) * key).minCoeff() * scale >= logit) break;
      }
    }
  }
  place_at(p, p.blocks, p.num_blocks,
           p.block_tables.data_as<std::int32_t>()[p.block_tables.size(1) - 1]);
}

void scale_query_row(DecodeProblem& p, Eigen::Index row, double factor) {
  for (Eigen::Index d = 0; d < p.cfg.head_size; ++d) {
    p.q(row, d) = round_to(p.cfg.dtype, p.q(row, d) * factor);
    store(p.query, row * p.cfg.head_size + d, p.q(row, d));
  }
}

void fill_cache_with_one_row(DecodeProblem& p, CacheSide side) {
  const DecodeConfig& c = p.cfg;
  const bool keys = side == CacheSide::kKeys;
  std::vector<Mat>& rows = keys ? p.k : p.v;
  // The key is one number in every dimension, so that even a read of the wrong dimensions (a
  // chunk or row of the key cache misplaced) sees the same key: 1/2 is exact in every dtype.
  const Eigen::RowVectorXd head =
      keys ? Eigen::RowVectorXd::Constant(c.head_size, 0.5)
           : Eigen::RowVectorXd(rows.front().row(0).head(c.head_size));
  for (Mat& m : rows) {
    for (int h = 0; h < c.num_kv_heads; ++h) {
      m.middleCols(Eigen::Index{h} * c.head_size, c.head_size).rowwise() = head;
    }
  }
  // With one value everywhere, the key slots no token holds (past each end, spare blocks), NaN
  // elsewhere, get real keys (sequence 0's, in turn): a key read from anywhere gives a finite
  // score, and the weights, right or wrong, still sum to 1 over whatever tokens they cover.
  const Mat& real = p.k.front();
  for (int block = 0; block < p.num_blocks; ++block) {
    for (int r = 0; r < c.block_size; ++r) {
      for (int h = 0; h < c.num_kv_heads; ++h) {
        for (int d = 0; d < c.head_size; ++d) {
          const std::int64_t key_at = key_index(c.layout, p.key_cache, block, h, r, d);
          if (keys) {
            store(p.key_cache, key_at, head[d]);
            continue;
          }
          store(p.value_cache, value_index(c.layout, p.value_cache, block, h, r, d), head[d]);
          if (!std::isfinite(load(p.key_cache, key_at))) {
            const Eigen::Index row = (block * c.block_size + r) % real.rows();
            store(p.key_cache, key_at, real(row, Eigen::Index{h} * c.head_size + d));
          }
        }
      }
    }
  }
}

DecodeProblem with_query_scaled(DecodeProblem p, double factor) {
  for (Eigen::Index r = 0; r < p.q.rows(); ++r) scale_query_row(p, r, factor);
  return p;
}

}  // namespace pa::testing

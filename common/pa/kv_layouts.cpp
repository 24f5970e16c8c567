#include "pa/kv_layouts.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace pa {
void PrintTo(Backend backend, std::ostream* os) {
  *os << backend_name(backend);
}
}  // namespace pa

namespace pa::testing {

std::string backend_test_name(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kCuda ? "Cuda" : "Emulator";
}

// ---- Elements ---------------------------------------------------------------------------------

double load(const Tensor& t, std::int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32:
      return t.data_as<float>()[i];
    case DType::kFloat16:
      return static_cast<float>(t.data_as<Eigen::half>()[i]);
    case DType::kBFloat16:
      return static_cast<float>(t.data_as<Eigen::bfloat16>()[i]);
    case DType::kInt32:
      return t.data_as<std::int32_t>()[i];
    case DType::kInt64:
      return static_cast<double>(t.data_as<std::int64_t>()[i]);
  }
  return 0.0;
}

void store(Tensor& t, std::int64_t i, double v) {
  switch (t.dtype()) {
    case DType::kFloat32:
      t.data_as<float>()[i] = static_cast<float>(v);
      break;
    case DType::kFloat16:
      t.data_as<Eigen::half>()[i] = Eigen::half(static_cast<float>(v));
      break;
    case DType::kBFloat16:
      t.data_as<Eigen::bfloat16>()[i] = Eigen::bfloat16(static_cast<float>(v));
      break;
    case DType::kInt32:
      t.data_as<std::int32_t>()[i] = static_cast<std::int32_t>(v);
      break;
    case DType::kInt64:
      t.data_as<std::int64_t>()[i] = static_cast<std::int64_t>(v);
      break;
  }
}

double round_to(DType dtype, double v) {
  const float f = static_cast<float>(v);
  switch (dtype) {
    case DType::kFloat16:
      return static_cast<float>(Eigen::half(f));
    case DType::kBFloat16:
      return static_cast<float>(Eigen::bfloat16(f));
    default:
      return f;
  }
}

Mat rounded(DType dtype, Mat m) {
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = round_to(dtype, m.data()[i]);
  return m;
}

Tensor to_tensor(DType dtype, const Mat& m, std::vector<std::int64_t> shape) {
  Tensor t(dtype, std::move(shape));
  if (t.numel() != m.size()) {
    throw std::invalid_argument("to_tensor: " + t.shape_string() + " does not hold " +
                                std::to_string(m.size()) + " elements");
  }
  for (Eigen::Index i = 0; i < m.size(); ++i) store(t, i, m.data()[i]);
  return t;
}

Mat to_mat(const Tensor& t, Eigen::Index rows, Eigen::Index cols) {
  if (rows * cols != t.numel()) {
    throw std::invalid_argument("to_mat: " + t.shape_string() + " is not [" + std::to_string(rows) +
                                ", " + std::to_string(cols) + "]");
  }
  Mat m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = load(t, i);
  return m;
}

// ---- Layouts ----------------------------------------------------------------------------------

std::vector<std::int64_t> key_cache_shape(KvLayout layout, DType dtype, int num_blocks,
                                          int block_size, int num_kv_heads, int head_size) {
  if (layout == KvLayout::kFlash) return {num_blocks, block_size, num_kv_heads, head_size};
  const int x = x_of(dtype);
  return {num_blocks, num_kv_heads, head_size / x, block_size, x};
}

std::vector<std::int64_t> value_cache_shape(KvLayout layout, int num_blocks, int block_size,
                                            int num_kv_heads, int head_size) {
  if (layout == KvLayout::kFlash) return {num_blocks, block_size, num_kv_heads, head_size};
  return {num_blocks, num_kv_heads, head_size, block_size};
}

Tensor nan_key_cache(KvLayout layout, DType dtype, int num_blocks, int block_size, int num_kv_heads,
                     int head_size) {
  Tensor t(dtype, key_cache_shape(layout, dtype, num_blocks, block_size, num_kv_heads, head_size));
  t.fill_bytes(0xFF);  // NaN in float32, float16 and bfloat16 alike
  return t;
}

Tensor nan_value_cache(KvLayout layout, DType dtype, int num_blocks, int block_size,
                       int num_kv_heads, int head_size) {
  Tensor t(dtype, value_cache_shape(layout, num_blocks, block_size, num_kv_heads, head_size));
  t.fill_bytes(0xFF);
  return t;
}

namespace {
/// Flat index of cache[block, row, head, d] in the flash layout [blocks, rows, heads, dims].
std::int64_t flash_index(const Tensor& cache, std::int64_t block, std::int64_t head,
                         std::int64_t row, std::int64_t d) {
  const std::int64_t rows = cache.size(1), heads = cache.size(2), dims = cache.size(3);
  return ((block * rows + row) * heads + head) * dims + d;
}
}  // namespace

std::int64_t key_index(KvLayout layout, const Tensor& key_cache, std::int64_t block,
                       std::int64_t head, std::int64_t row, std::int64_t d) {
  if (layout == KvLayout::kFlash) return flash_index(key_cache, block, head, row, d);
  // key_cache[block, head, d / x, row, d % x]
  const std::int64_t heads = key_cache.size(1), chunks = key_cache.size(2);
  const std::int64_t rows = key_cache.size(3), x = key_cache.size(4);
  return (((block * heads + head) * chunks + d / x) * rows + row) * x + d % x;
}

std::int64_t value_index(KvLayout layout, const Tensor& value_cache, std::int64_t block,
                         std::int64_t head, std::int64_t row, std::int64_t d) {
  if (layout == KvLayout::kFlash) return flash_index(value_cache, block, head, row, d);
  // value_cache[block, head, d, row]
  const std::int64_t heads = value_cache.size(1), dims = value_cache.size(2);
  const std::int64_t rows = value_cache.size(3);
  return ((block * heads + head) * dims + d) * rows + row;
}

namespace {
std::int64_t kv_heads_of(KvLayout layout, const Tensor& value_cache) {
  return value_cache.size(layout == KvLayout::kFlash ? 2 : 1);
}
std::int64_t head_size_of(KvLayout layout, const Tensor& value_cache) {
  return value_cache.size(layout == KvLayout::kFlash ? 3 : 2);
}
}  // namespace

void put_token(KvLayout layout, Tensor& key_cache, Tensor& value_cache, std::int64_t block,
               std::int64_t row, const Eigen::Ref<const Eigen::RowVectorXd>& k_row,
               const Eigen::Ref<const Eigen::RowVectorXd>& v_row) {
  const std::int64_t heads = kv_heads_of(layout, value_cache);
  const std::int64_t dims = head_size_of(layout, value_cache);
  for (std::int64_t h = 0; h < heads; ++h) {
    for (std::int64_t d = 0; d < dims; ++d) {
      store(key_cache, key_index(layout, key_cache, block, h, row, d), k_row[h * dims + d]);
      store(value_cache, value_index(layout, value_cache, block, h, row, d), v_row[h * dims + d]);
    }
  }
}

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
  const std::int64_t block_size = value_cache.size(layout == KvLayout::kFlash ? 1 : 3);
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
  const std::int64_t rows = value_cache.size(layout == KvLayout::kFlash ? 1 : 3);
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

void read_token(KvLayout layout, const Tensor& key_cache, const Tensor& value_cache,
                const std::int32_t* block_table, int block_size, int t, int head, Mat& k, Mat& v) {
  const std::int64_t block = block_table[t / block_size];
  const int row = t % block_size;
  for (Eigen::Index d = 0; d < k.cols(); ++d) {
    k(t, d) = load(key_cache, key_index(layout, key_cache, block, head, row, d));
    v(t, d) = load(value_cache, value_index(layout, value_cache, block, head, row, d));
  }
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
  place_at(p, p.blocks, p.num_blocks, p.block_tables.data_as<std::int32_t>()[p.block_tables.size(1) - 1]);
}

void scale_query_row(DecodeProblem& p, Eigen::Index row, double factor) {
  for (Eigen::Index d = 0; d < p.cfg.head_size; ++d) {
    p.q(row, d) = round_to(p.cfg.dtype, p.q(row, d) * factor);
    store(p.query, row * p.cfg.head_size + d, p.q(row, d));
  }
}

// ---- Benchmark batches ------------------------------------------------------------------------

namespace {
/// A fast, seeded stream of uniforms in [-1, 1) (splitmix64): Rng's normal draws would take
/// minutes over a GPU shape's caches.
class FastUniform {
 public:
  explicit FastUniform(std::uint64_t seed) : state_(seed) {}
  float next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) * 0x1p-23f - 1.0f;  // 24 random bits over [0, 2), less 1
  }

 private:
  std::uint64_t state_;
};

template <class T>
void fill_uniform(Tensor& t, FastUniform& uniform) {
  T* data = t.data_as<T>();
  for (std::int64_t i = 0; i < t.numel(); ++i) data[i] = T(uniform.next());
}
}  // namespace

float BenchBatch::scale() const {
  return static_cast<float>(1.0 / std::sqrt(double(head_size)));
}

std::int64_t BenchBatch::kv_bytes() const {
  return static_cast<std::int64_t>(key_cache.nbytes() + value_cache.nbytes());
}

BenchBatch make_bench_batch(const BatchShape& shape, KvLayout layout, DType dtype, int head_size,
                            int block_size, std::uint64_t seed) {
  if (shape.seq_len % block_size != 0) {
    throw std::invalid_argument("make_bench_batch: seq_len must be a multiple of block_size");
  }
  BenchBatch b;
  b.shape = shape;
  b.layout = layout;
  b.head_size = head_size;
  b.block_size = block_size;
  const int blocks_per_seq = shape.seq_len / block_size;
  const int num_blocks = shape.num_seqs * blocks_per_seq;
  Rng rng(seed);
  b.q = rounded(dtype, rng.normal(shape.num_seqs * shape.num_heads, head_size, 4.0));
  b.query = to_tensor(dtype, b.q, {shape.num_seqs, shape.num_heads, head_size});
  b.key_cache = Tensor(
      dtype, key_cache_shape(layout, dtype, num_blocks, block_size, shape.num_kv_heads, head_size));
  b.value_cache = Tensor(
      dtype, value_cache_shape(layout, num_blocks, block_size, shape.num_kv_heads, head_size));
  FastUniform uniform(seed ^ 0x5EEDull);
  for (Tensor* cache : {&b.key_cache, &b.value_cache}) {
    switch (dtype) {
      case DType::kFloat16:
        fill_uniform<Eigen::half>(*cache, uniform);
        break;
      case DType::kBFloat16:
        fill_uniform<Eigen::bfloat16>(*cache, uniform);
        break;
      default:
        fill_uniform<float>(*cache, uniform);
        break;
    }
  }
  const IVec order = rng.permutation(num_blocks);
  b.block_tables = Tensor(DType::kInt32, {shape.num_seqs, blocks_per_seq});
  std::copy(order.begin(), order.end(), b.block_tables.data_as<std::int32_t>());
  b.seq_lens = Tensor(DType::kInt32, {shape.num_seqs});
  std::fill_n(b.seq_lens.data_as<std::int32_t>(), shape.num_seqs, shape.seq_len);
  return b;
}

std::string check_bench_output(const BenchBatch& b, const Tensor& out) {
  const BatchShape& shape = b.shape;
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    if (!std::isfinite(load(out, i))) {
      return "wrong answer: out element " + std::to_string(i) + " is not finite";
    }
  }
  std::vector<std::pair<int, int>> pairs;  // (sequence, head)
  if (std::int64_t{shape.num_seqs} * shape.num_heads <= 256) {
    for (int s = 0; s < shape.num_seqs; ++s) {
      for (int h = 0; h < shape.num_heads; ++h) pairs.emplace_back(s, h);
    }
  } else {
    const int last_seq = shape.num_seqs - 1, last_head = shape.num_heads - 1;
    pairs = {{0, 0},
             {0, last_head},
             {last_seq, 0},
             {last_seq, last_head},
             {last_seq / 2, last_head / 2}};
  }
  // The tests' tolerance for float16/bfloat16 output: two half-ulps of the output type
  // (2^-11 and 2^-8 relative); atol covers outputs near 0.
  const double rtol = out.dtype() == DType::kBFloat16  ? 8e-3
                      : out.dtype() == DType::kFloat16 ? 1e-3
                                                       : 1e-4;
  constexpr double kAtol = 1e-4;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int blocks_per_seq = shape.seq_len / b.block_size;
  for (const auto& [s, h] : pairs) {
    Mat k(shape.seq_len, b.head_size), v(shape.seq_len, b.head_size);
    const std::int32_t* table =
        b.block_tables.data_as<std::int32_t>() + std::int64_t{s} * blocks_per_seq;
    for (int t = 0; t < shape.seq_len; ++t) {
      read_token(b.layout, b.key_cache, b.value_cache, table, b.block_size, t, h / group, k, v);
    }
    const Vec want =
        reference_attention(b.q.row(std::int64_t{s} * shape.num_heads + h).transpose(), k, v);
    Vec got(b.head_size);
    const std::int64_t row = (std::int64_t{s} * shape.num_heads + h) * b.head_size;
    for (int d = 0; d < b.head_size; ++d) got[d] = load(out, row + d);
    const ::testing::AssertionResult close = AllClose(want, got, kAtol, rtol);
    if (!close) {
      return "wrong answer: sequence " + std::to_string(s) + " head " + std::to_string(h) + ": " +
             close.message();
    }
  }
  return "";
}

}  // namespace pa::testing

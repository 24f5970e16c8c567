#include "pa/bench_batches.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "pa/elements.hpp"
#include "pa/testing.hpp"

namespace pa::testing {

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
  // The tests' tolerance for float16/bfloat16 output: one ulp (two half-ulps) of the output type
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

#include "pa/kv_layouts.hpp"

#include "pa/elements.hpp"

namespace pa::testing {

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

std::int64_t kv_heads_of(KvLayout layout, const Tensor& value_cache) {
  return value_cache.size(layout == KvLayout::kFlash ? 2 : 1);
}
std::int64_t head_size_of(KvLayout layout, const Tensor& value_cache) {
  return value_cache.size(layout == KvLayout::kFlash ? 3 : 2);
}
std::int64_t block_size_of(KvLayout layout, const Tensor& value_cache) {
  return value_cache.size(layout == KvLayout::kFlash ? 1 : 3);
}

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

void read_token(KvLayout layout, const Tensor& key_cache, const Tensor& value_cache,
                const std::int32_t* block_table, int block_size, int t, int head, Mat& k, Mat& v) {
  const std::int64_t block = block_table[t / block_size];
  const int row = t % block_size;
  for (Eigen::Index d = 0; d < k.cols(); ++d) {
    k(t, d) = load(key_cache, key_index(layout, key_cache, block, head, row, d));
    v(t, d) = load(value_cache, value_index(layout, value_cache, block, head, row, d));
  }
}

}  // namespace pa::testing

/// \file
/// Host views of vLLM's paged KV-cache layouts, for the CUDA labs' tests and benchmarks: the
/// shapes of both caches in each layout, NaN-filled caches, and the flat index of (block, kv
/// head, row, dimension) with a token's write and read through them. Written independently of
/// every kernel, so a test never relies on student code to place data. No GoogleTest.
#pragma once

#include <Eigen/Dense>

#include <cstdint>
#include <vector>

#include "pa/tensor.hpp"
#include "pa/types.hpp"

namespace pa::testing {

/// [layouts]
/// vLLM's two paged-cache layouts.
///   kV0    (paged_attention_v1/v2, labs 05-06), x = 16 bytes / element size:
///            key_cache   [num_blocks, num_kv_heads, head_size / x, block_size, x]
///            value_cache [num_blocks, num_kv_heads, head_size, block_size]
///   kFlash (vLLM V1's FlashAttention backend, lab 07):
///            key_cache, value_cache [num_blocks, block_size, num_kv_heads, head_size]
enum class KvLayout { kV0, kFlash };
/// [layouts]

/// Returns the shape of the key cache in `layout`.
std::vector<std::int64_t> key_cache_shape(KvLayout layout, DType dtype, int num_blocks,
                                          int block_size, int num_kv_heads, int head_size);

/// Returns the shape of the value cache in `layout`.
std::vector<std::int64_t> value_cache_shape(KvLayout layout, int num_blocks, int block_size,
                                            int num_kv_heads, int head_size);

/// A key (or value) cache in `layout` with every element NaN: rows no token owns stay loud.
Tensor nan_key_cache(KvLayout layout, DType dtype, int num_blocks, int block_size, int num_kv_heads,
                     int head_size);
Tensor nan_value_cache(KvLayout layout, DType dtype, int num_blocks, int block_size,
                       int num_kv_heads, int head_size);

/// Returns the flat index of dimension d of kv head `head` of row `row` of physical block
/// `block` in `key_cache` (whose shape says the sizes).
std::int64_t key_index(KvLayout layout, const Tensor& key_cache, std::int64_t block,
                       std::int64_t head, std::int64_t row, std::int64_t d);

/// The same for `value_cache`.
std::int64_t value_index(KvLayout layout, const Tensor& value_cache, std::int64_t block,
                         std::int64_t head, std::int64_t row, std::int64_t d);

/// Returns the kv heads of a value cache in `layout`.
std::int64_t kv_heads_of(KvLayout layout, const Tensor& value_cache);
/// Returns the head size of a value cache in `layout`.
std::int64_t head_size_of(KvLayout layout, const Tensor& value_cache);
/// Returns the block size (rows per block) of a value cache in `layout`.
std::int64_t block_size_of(KvLayout layout, const Tensor& value_cache);

/// Writes one token's keys and values ([num_kv_heads * head_size] each, heads side by side)
/// into row `row` of physical block `block`.
void put_token(KvLayout layout, Tensor& key_cache, Tensor& value_cache, std::int64_t block,
               std::int64_t row, const Eigen::Ref<const Eigen::RowVectorXd>& k_row,
               const Eigen::Ref<const Eigen::RowVectorXd>& v_row);

/// Reads token t of a sequence back out of the caches through its block table: fills row t of
/// k and v ([seq_len, head_size] each) with kv head `head`'s key and value.
void read_token(KvLayout layout, const Tensor& key_cache, const Tensor& value_cache,
                const std::int32_t* block_table, int block_size, int t, int head, Mat& k, Mat& v);

}  // namespace pa::testing

/// \file
/// The argument checks of a decode-attention call over vLLM's V0 paged caches (the layouts of
/// paged_attention_v1 and v2): the kernel's template choices, the shapes and dtypes of query,
/// caches, block tables and sequence lengths, and that every block a sequence reads is a block
/// of the cache. Every CUDA lab that reads these caches checks its operands with them, so the
/// rules and their messages are the same in each lab; a lab adds the checks of its own extra
/// arguments (an output, scratch tensors, a partition size) beside them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "pa/checks.hpp"
#include "pa/tensor.hpp"
#include "pa/tensor_checks.hpp"

namespace pa {

/// The operands of one decode-attention call over V0 caches, everything a kernel reads.
struct V0DecodeOperands {
  const Tensor& query;         // [num_seqs, num_heads, head_size]
  const Tensor& key_cache;     // [num_blocks, num_kv_heads, head_size / x, block_size, x]
  const Tensor& value_cache;   // [num_blocks, num_kv_heads, head_size, block_size]
  int num_kv_heads;
  const Tensor& block_tables;  // [num_seqs, max_num_blocks_per_seq] int32
  const Tensor& seq_lens;      // [num_seqs] int32
  int block_size;
  int max_seq_len;
};

/// Checks a kernel's three template choices: the element type is a float type, and the head
/// size and the block size are among those it is instantiated for.
template <std::size_t NumHeadSizes, std::size_t NumBlockSizes>
void check_decode_kernel_config(const ArgCheck& check, DType dtype, std::int64_t head_size,
                                std::int64_t block_size,
                                const std::array<int, NumHeadSizes>& head_sizes,
                                const std::array<int, NumBlockSizes>& block_sizes) {
  check.that(is_floating(dtype), "dtype", "float32, float16 or bfloat16", dtype_name(dtype));
  check.that(is_one_of(head_sizes, head_size), "head_size (query.shape[2])",
             "one of " + list_string(head_sizes), std::to_string(head_size));
  check.that(is_one_of(block_sizes, block_size), "block_size",
             "one of " + list_string(block_sizes), std::to_string(block_size));
}

/// Checks the operands of a decode call: supported head and block sizes, the V0 cache layouts
/// in query's dtype, int32 block tables, num_heads a multiple of num_kv_heads, and for every
/// sequence 1 <= seq_len <= min(max_seq_len, the blocks its table row holds) with every block
/// it reads inside the cache.
template <std::size_t NumHeadSizes, std::size_t NumBlockSizes>
void check_v0_decode_operands(const ArgCheck& check, const V0DecodeOperands& ops,
                              const std::array<int, NumHeadSizes>& head_sizes,
                              const std::array<int, NumBlockSizes>& block_sizes) {
  const Tensor& query = ops.query;
  const int block_size = ops.block_size;
  rank_is(check, "query", query, 3, "[num_seqs, num_heads, head_size]");
  check.that(is_floating(query.dtype()), "query.dtype", "float32, float16 or bfloat16",
             dtype_name(query.dtype()));
  const std::int64_t num_seqs = query.size(0), num_heads = query.size(1);
  const std::int64_t head_size = query.size(2);
  check_decode_kernel_config(check, query.dtype(), head_size, block_size, head_sizes,
                             block_sizes);

  check.positive("num_kv_heads", ops.num_kv_heads);
  check.multiple_of("num_heads (query.shape[1])", num_heads, ops.num_kv_heads, "num_kv_heads");

  const int x = x_of(query.dtype());
  rank_is(check, "key_cache", ops.key_cache, 5,
          "[num_blocks, num_kv_heads, head_size / x, block_size, x]");
  dtype_is(check, "key_cache", ops.key_cache, query.dtype(), "the dtype of query");
  const std::int64_t num_blocks = ops.key_cache.size(0);
  shape_is(
      check, "key_cache", ops.key_cache,
      {num_blocks, ops.num_kv_heads, head_size / x, block_size, x},
      "[num_blocks, num_kv_heads, head_size / x, block_size, x] with x = " + std::to_string(x));
  dtype_is(check, "value_cache", ops.value_cache, query.dtype(), "the dtype of query");
  shape_is(check, "value_cache", ops.value_cache,
           {num_blocks, ops.num_kv_heads, head_size, block_size},
           "[num_blocks, num_kv_heads, head_size, block_size]");

  dtype_is(check, "block_tables", ops.block_tables, DType::kInt32,
           "int32, as vLLM's kernels and flash-attn require");
  rank_is(check, "block_tables", ops.block_tables, 2, "[num_seqs, max_num_blocks_per_seq]");
  check.equal("block_tables.shape[0]", ops.block_tables.size(0), num_seqs, "num_seqs");
  dtype_is(check, "seq_lens", ops.seq_lens, DType::kInt32, "int32, as in vLLM");
  shape_is(check, "seq_lens", ops.seq_lens, {num_seqs}, "[num_seqs]");
  check.positive("max_seq_len", ops.max_seq_len);

  sequences_in_cache(check, ops.block_tables, ops.seq_lens, block_size, num_blocks,
                     ops.max_seq_len);
}

/// Checks that `out` has query's dtype and shape.
inline void check_out_like_query(const ArgCheck& check, const Tensor& out, const Tensor& query) {
  dtype_is(check, "out", out, query.dtype(), "the dtype of query");
  shape_is(check, "out", out, query.shape(), "the shape of query");
}

}  // namespace pa

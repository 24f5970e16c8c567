// Lab 07, given: the argument checks (the conventions chapter says what they promise). They
// run on the host copies, before anything reaches a device.
#pragma once

#include <cstdint>
#include <string>

#include "given/backend.hpp"
#include "pa/tensor_checks.hpp"

namespace pa::cuda_gqa {

namespace checks {

/// The flash layout's shape, as the messages spell it.
inline constexpr const char* kFlashLayout = "[num_blocks, block_size, num_kv_heads, head_size]";

/// Checks that a cache is rank 4, which is what tells vLLM V1's flash layout from lab 05's V0
/// layout (rank 5 for keys, rank 4 transposed for values: caught by the shape checks after it).
inline void flash_rank(const ArgCheck& check, const char* name, const Tensor& cache) {
  rank_is(check, name, cache, 4,
          std::string(kFlashLayout) + ", vLLM V1's flash layout; lab 05's V0 key cache is rank 5");
}

/// Checks the shapes and dtypes of reshape_and_cache_flash's tensors and that every slot names
/// a row of the cache (a negative slot is padding and is allowed).
inline void reshape_and_cache_flash(const Tensor& key, const Tensor& value,
                                    const Tensor& key_cache, const Tensor& value_cache,
                                    const Tensor& slot_mapping) {
  const ArgCheck check("reshape_and_cache_flash");
  new_keys_and_values(check, key, value);
  const std::int64_t num_tokens = key.size(0), num_kv_heads = key.size(1);
  const std::int64_t head_size = key.size(2);

  flash_rank(check, "key_cache", key_cache);
  dtype_is(check, "key_cache", key_cache, key.dtype(), "the dtype of key");
  const std::int64_t num_blocks = key_cache.size(0), block_size = key_cache.size(1);
  check.positive("block_size (key_cache.shape[1])", block_size);
  shape_is(check, "key_cache", key_cache, {num_blocks, block_size, num_kv_heads, head_size},
           std::string(kFlashLayout) + " with key's num_kv_heads and head_size");
  dtype_is(check, "value_cache", value_cache, key.dtype(), "the dtype of key");
  shape_is(check, "value_cache", value_cache, key_cache.shape(), "the shape of key_cache");

  slot_mapping_fits(check, slot_mapping, num_tokens, num_blocks, block_size);
}

/// Checks the operands of a decode call: float16 or bfloat16, supported head and block sizes,
/// the flash layout for both caches, a group of at most kMaxGroupSize query heads per kv head,
/// int32 block tables, 1 <= seq_len <= min(max_seq_len, the table's capacity), every block a
/// sequence reads inside the cache, and a partition size that is 0 or whole tiles up to
/// kMaxPartitionSize.
/// `function` prefixes the messages.
inline void decode(const char* function, const DecodeArgs& args) {
  const ArgCheck check(function);
  const Tensor& query = args.query;
  rank_is(check, "query", query, 3, "[num_seqs, num_heads, head_size]");
  check.that(query.dtype() == DType::kFloat16 || query.dtype() == DType::kBFloat16,
             "query.dtype",
             "float16 or bfloat16 (tensor cores multiply 16-bit inputs; float32 is not supported "
             "on this path, lab 05's paged_attention_v1 runs it)",
             dtype_name(query.dtype()));
  const std::int64_t num_seqs = query.size(0), num_heads = query.size(1);
  const std::int64_t head_size = query.size(2);
  check.that(is_one_of(kSupportedHeadSizes, head_size), "head_size (query.shape[2])",
             "one of " + list_string(kSupportedHeadSizes), std::to_string(head_size));
  check.at_most("num_seqs (query.shape[0])", num_seqs, 65535, "a grid's y extent");

  flash_rank(check, "key_cache", args.key_cache);
  dtype_is(check, "key_cache", args.key_cache, query.dtype(), "the dtype of query");
  const std::int64_t num_blocks = args.key_cache.size(0);
  const std::int64_t block_size = args.key_cache.size(1);
  const std::int64_t num_kv_heads = args.key_cache.size(2);
  check.that(is_one_of(kSupportedBlockSizes, block_size), "block_size (key_cache.shape[1])",
             "one of " + list_string(kSupportedBlockSizes), std::to_string(block_size));
  check.positive("num_kv_heads (key_cache.shape[2])", num_kv_heads);
  shape_is(check, "key_cache", args.key_cache, {num_blocks, block_size, num_kv_heads, head_size},
           std::string(kFlashLayout) + " with query's head_size");
  dtype_is(check, "value_cache", args.value_cache, query.dtype(), "the dtype of query");
  shape_is(check, "value_cache", args.value_cache, args.key_cache.shape(),
           "the shape of key_cache");

  check.multiple_of("num_heads (query.shape[1])", num_heads, num_kv_heads,
                    "num_kv_heads (key_cache.shape[2])");
  check.at_most("num_heads / num_kv_heads", num_heads / num_kv_heads, kMaxGroupSize,
                "the rows of one wmma tile: a kv head serves at most 16 query heads");

  const Tensor& block_tables = args.block_tables;
  const Tensor& seq_lens = args.seq_lens;
  dtype_is(check, "block_tables", block_tables, DType::kInt32,
           "int32, as vLLM's kernels and flash-attn require");
  rank_is(check, "block_tables", block_tables, 2, "[num_seqs, max_num_blocks_per_seq]");
  check.equal("block_tables.shape[0]", block_tables.size(0), num_seqs, "num_seqs");
  dtype_is(check, "seq_lens", seq_lens, DType::kInt32, "int32, as in vLLM");
  shape_is(check, "seq_lens", seq_lens, {num_seqs}, "[num_seqs]");
  check.positive("max_seq_len", args.max_seq_len);
  check.non_negative("partition_size", args.partition_size);
  if (args.partition_size != 0) {
    check.multiple_of("partition_size", args.partition_size, kTileTokens,
                      "kTileTokens (or 0 for the default)");
    check.at_most("partition_size", args.partition_size, kMaxPartitionSize,
                  "kMaxPartitionSize: the kernel stages a partition's block-table slice in "
                  "shared memory");
  }
  // The default is never shorter than max_seq_len / kMaxSplits, nor than a tile, and may be
  // kMaxPartitionSize: its grid has at most max(kMaxSplits, ceil(max_seq_len / that)) partitions.
  const std::int64_t partition_size =
      args.partition_size != 0 ? args.partition_size : kMaxPartitionSize;
  check.at_most("ceil(max_seq_len / partition_size)",
                (std::int64_t{args.max_seq_len} + partition_size - 1) / partition_size, 65535,
                "a grid's z extent: choose a larger partition_size");

  sequences_in_cache(check, block_tables, seq_lens, block_size, num_blocks, args.max_seq_len);
}

/// Checks that `out` has query's dtype and shape.
inline void out_like_query(const char* function, const Tensor& out, const Tensor& query) {
  const ArgCheck check(function);
  dtype_is(check, "out", out, query.dtype(), "the dtype of query");
  shape_is(check, "out", out, query.shape(), "the shape of query");
}

}  // namespace checks

}  // namespace pa::cuda_gqa

// Lab 05, given: the argument checks (the conventions chapter says what they promise). They
// run on the host copies, before anything reaches a device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "given/backend.hpp"
#include "pa/decode_checks.hpp"
#include "pa/tensor_checks.hpp"

namespace pa::cuda_v1 {

namespace checks {

/// Checks the attention kernel's three template choices: the element type, the head size and
/// the block size must be ones it is instantiated for.
inline void kernel_config(const ArgCheck& check, DType dtype, std::int64_t head_size,
                          std::int64_t block_size) {
  check_decode_kernel_config(check, dtype, head_size, block_size, kSupportedHeadSizes,
                             kSupportedBlockSizes);
}

/// Checks the shapes and dtypes of reshape_and_cache's tensors and that every slot names a row
/// of the cache (a negative slot is padding and is allowed).
inline void reshape_and_cache(const Tensor& key, const Tensor& value, const Tensor& key_cache,
                              const Tensor& value_cache, const Tensor& slot_mapping) {
  const ArgCheck check("reshape_and_cache");
  new_keys_and_values(check, key, value);
  const std::int64_t num_tokens = key.size(0), num_kv_heads = key.size(1);
  const std::int64_t head_size = key.size(2);

  const int x = x_of(key.dtype());
  check.multiple_of("head_size (key.shape[2])", head_size, x,
                    "x = 16 bytes / " + std::to_string(dtype_size(key.dtype())) + " bytes");
  rank_is(check, "key_cache", key_cache, 5,
          "[num_blocks, num_kv_heads, head_size / x, block_size, x]");
  dtype_is(check, "key_cache", key_cache, key.dtype(), "the dtype of key");
  const std::int64_t num_blocks = key_cache.size(0), block_size = key_cache.size(3);
  shape_is(
      check, "key_cache", key_cache, {num_blocks, num_kv_heads, head_size / x, block_size, x},
      "[num_blocks, num_kv_heads, head_size / x, block_size, x] with x = " + std::to_string(x));
  dtype_is(check, "value_cache", value_cache, key.dtype(), "the dtype of key");
  shape_is(check, "value_cache", value_cache, {num_blocks, num_kv_heads, head_size, block_size},
           "[num_blocks, num_kv_heads, head_size, block_size]");

  slot_mapping_fits(check, slot_mapping, num_tokens, num_blocks, block_size);
}

/// Checks the operands of an attention call (common/pa/decode_checks.hpp: the rules every lab
/// over these caches shares); `function` prefixes the messages.
inline void attention(const char* function, const AttentionArgs& args) {
  check_v0_decode_operands(ArgCheck(function), args, kSupportedHeadSizes, kSupportedBlockSizes);
}

/// Checks that `out` has query's dtype and shape.
inline void out_like_query(const char* function, const Tensor& out, const Tensor& query) {
  check_out_like_query(ArgCheck(function), out, query);
}

/// The message for a context longer than the v1 kernel can hold in shared memory; names the
/// limit and the way out (split the KV sequence: the v2 kernel of vLLM, flash-decoding).
inline void context_fits(int max_seq_len, int limit_tokens, std::size_t limit_bytes,
                         const std::string& backend) {
  const ArgCheck check("paged_attention_v1");
  check.that(max_seq_len <= limit_tokens, "max_seq_len",
             "<= " + std::to_string(limit_tokens) +
                 " tokens: v1 keeps every logit in shared memory and this block may use at most " +
                 std::to_string(limit_bytes) + " bytes on the " + backend +
                 " backend; for longer contexts split the KV sequence across thread blocks "
                 "(split-KV, vLLM's paged_attention_v2: lab 06; the algebra: lab 03)",
             std::to_string(max_seq_len));
}

}  // namespace checks

}  // namespace pa::cuda_v1

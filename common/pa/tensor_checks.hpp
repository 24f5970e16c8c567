/// \file
/// ArgCheck's vocabulary for Tensor arguments: rank, dtype and exact shape, and membership in
/// a list of supported sizes, each failing with the standard "<function>: <argument> — expected
/// <expected>, got <actual>" message; and the checks every paged cache needs, whatever its
/// layout (the sequences' block tables, a write's new keys and values and its slot mapping).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pa/checks.hpp"
#include "pa/tensor.hpp"

namespace pa {

/// Returns "{64, 80, 96}", the notation messages use for a list of supported sizes.
template <std::size_t N>
std::string list_string(const std::array<int, N>& values) {
  std::string s = "{";
  for (std::size_t i = 0; i < N; ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "}";
}

/// Returns true when `v` is one of `values`.
template <std::size_t N>
bool is_one_of(const std::array<int, N>& values, std::int64_t v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

/// Requires `t` to have exactly `shape`; `how` says where the expected extents come from.
inline void shape_is(const ArgCheck& check, const std::string& name, const Tensor& t,
                     const std::vector<std::int64_t>& shape, const std::string& how) {
  check.that(t.shape() == shape, name + ".shape", Tensor::format_shape(shape) + " (" + how + ")",
             t.shape_string());
}

/// Requires `t` to hold `dtype` elements; `why` says why that one.
inline void dtype_is(const ArgCheck& check, const std::string& name, const Tensor& t, DType dtype,
                     const std::string& why) {
  check.that(t.dtype() == dtype, name + ".dtype", dtype_name(dtype) + " (" + why + ")",
             dtype_name(t.dtype()));
}

/// Requires `t` to have `rank` dimensions; `layout` names them.
inline void rank_is(const ArgCheck& check, const std::string& name, const Tensor& t, int rank,
                    const std::string& layout) {
  check.that(t.dim() == rank, name + ".dim()", std::to_string(rank) + " (" + layout + ")",
             std::to_string(t.dim()) + " " + t.shape_string());
}

// ---- A paged cache's indices, in any layout ------------------------------------------------

/// Requires, for every sequence b, 1 <= seq_lens[b] <= min(max_seq_len, block_tables.shape[1] *
/// block_size), and every block it reads (block_tables[b, 0 .. ceil(seq_lens[b] / block_size)))
/// to be a block of the cache, in [0, num_blocks). block_tables ([num_seqs, max_blocks]) and
/// seq_lens ([num_seqs]) must already be checked as int32 of those shapes.
inline void sequences_in_cache(const ArgCheck& check, const Tensor& block_tables,
                               const Tensor& seq_lens, std::int64_t block_size,
                               std::int64_t num_blocks, std::int64_t max_seq_len) {
  const std::int64_t num_seqs = seq_lens.size(0), max_blocks = block_tables.size(1);
  const std::int32_t* lens = seq_lens.data_as<std::int32_t>();
  const std::int32_t* table = block_tables.data_as<std::int32_t>();
  for (std::int64_t s = 0; s < num_seqs; ++s) {
    const std::string name = "seq_lens[" + std::to_string(s) + "]";
    check.positive(name, lens[s]);
    check.at_most(name, lens[s], max_blocks * block_size,
                  "block_tables.shape[1] * block_size: the blocks its table row holds");
    check.at_most(name, lens[s], max_seq_len, "max_seq_len");
    const std::int64_t blocks_read = (lens[s] + block_size - 1) / block_size;
    for (std::int64_t b = 0; b < blocks_read; ++b) {
      const std::int32_t id = table[s * max_blocks + b];
      check.that(id >= 0 && id < num_blocks,
                 "block_tables[" + std::to_string(s) + ", " + std::to_string(b) + "]",
                 "a block id in [0, " + std::to_string(num_blocks) + ") (key_cache.shape[0])",
                 std::to_string(id));
    }
  }
}

/// Requires a cache write's new keys and values to be [num_tokens, num_kv_heads, head_size] of
/// one float dtype, value shaped like key (the same in every cache layout).
inline void new_keys_and_values(const ArgCheck& check, const Tensor& key, const Tensor& value) {
  rank_is(check, "key", key, 3, "[num_tokens, num_kv_heads, head_size]");
  check.that(is_floating(key.dtype()), "key.dtype", "float32, float16 or bfloat16",
             dtype_name(key.dtype()));
  dtype_is(check, "value", value, key.dtype(), "the dtype of key");
  shape_is(check, "value", value, key.shape(), "the shape of key");
}

/// Requires slot_mapping to be int64 [num_tokens] with every slot below num_blocks * block_size
/// (a negative slot is padding and writes nothing).
inline void slot_mapping_fits(const ArgCheck& check, const Tensor& slot_mapping,
                              std::int64_t num_tokens, std::int64_t num_blocks,
                              std::int64_t block_size) {
  dtype_is(check, "slot_mapping", slot_mapping, DType::kInt64, "vLLM's slot_mapping is int64");
  shape_is(check, "slot_mapping", slot_mapping, {num_tokens}, "[num_tokens]");
  const std::int64_t num_slots = num_blocks * block_size;
  const std::int64_t* slots = slot_mapping.data_as<std::int64_t>();
  for (std::int64_t i = 0; i < num_tokens; ++i) {
    check.that(slots[i] < num_slots, "slot_mapping[" + std::to_string(i) + "]",
               "< " + std::to_string(num_slots) + " (num_blocks * block_size), or < 0 for padding",
               std::to_string(slots[i]));
  }
}

}  // namespace pa

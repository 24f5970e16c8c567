/// \file
/// Lab 01 — the data path of one decode step over a paged KV cache: the write map
/// (slot_mapping), the scatter into the cache (write_kv), and attention that reads the
/// sequence back through its block table (paged_attention). All float64, all on the CPU.
#pragma once

#include <cstdint>
#include <string>

#include "pa/types.hpp"

namespace pa::paged_gather {

/// [api]
/// Returns the flat cache row of each token t in [start, start + num_tokens):
/// slot(t) = block_table[t / block_size] * block_size + t % block_size.
/// block_table: [num_logical_blocks] physical block ids -> [num_tokens].
IVec build_slot_mapping(const IVec& block_table, int block_size, int start, int num_tokens);

/// Copies row i of new_k / new_v into row slot_mapping[i] of k_cache / v_cache.
/// k_cache, v_cache: [num_slots, num_kv_heads * head_dim];
/// new_k, new_v:     [num_tokens, num_kv_heads * head_dim]; slot_mapping: [num_tokens].
void write_kv(Mat& k_cache, Mat& v_cache, const Mat& new_k, const Mat& new_v,
              const IVec& slot_mapping);

/// Returns softmax(K q / sqrt(head_dim)) V for every query head, over the first seq_len tokens
/// of the sequence whose blocks block_table lists; query head h reads kv head
/// h / (num_heads / num_kv_heads).
/// q: [num_heads, head_dim]; k_cache, v_cache: [num_slots, num_kv_heads * head_dim]
/// -> [num_heads, head_dim].
Mat paged_attention(const Mat& q, const Mat& k_cache, const Mat& v_cache,
                    const IVec& block_table, int seq_len, int block_size);
/// [api]

}  // namespace pa::paged_gather

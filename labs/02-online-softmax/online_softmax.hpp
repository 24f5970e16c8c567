/// \file
/// Lab 02 — attention over a paged KV cache in one streaming pass: the keys are visited one
/// physical block at a time, in the order the block table lists them, while a running maximum,
/// a running normalizer and a running weighted sum of values are kept exact by rescaling.
/// One query, one head, float64, CPU.
#pragma once

#include <cstdint>
#include <string>

#include "pa/types.hpp"

namespace pa::online_softmax {

/// [api]
/// Returns softmax(K q / sqrt(d)) V, computed over the whole score row at once (the slow oracle).
/// q: [d], K: [n, d], V: [n, dv] -> [dv]; needs n >= 1.
Vec dense_attention(const Vec& q, const Mat& K, const Mat& V);

/// Returns the same attention over the first seq_len tokens of a paged sequence, streaming one
/// block at a time with the online-softmax state (m, denom, acc) and never forming the score row.
/// q: [d]; k_cache: [num_blocks * block_size, d]; v_cache: [num_blocks * block_size, dv];
/// block_table: [>= ceil(seq_len / block_size)] physical ids; physical block phi is cache
/// rows [phi * block_size, (phi + 1) * block_size) -> [dv].
Vec paged_online_attention(const Vec& q, const Mat& k_cache, const Mat& v_cache,
                           const IVec& block_table, int seq_len, int block_size);
/// [api]

}  // namespace pa::online_softmax

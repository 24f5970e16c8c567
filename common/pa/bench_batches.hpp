/// \file
/// The CUDA labs' benchmark batches: a large decode batch in a paged cache (every block read by
/// one sequence, dealt in shuffled order), and the check of a kernel's output on it against the
/// float64 reference. No GoogleTest: the benchmark programs include it.
#pragma once

#include <cstdint>
#include <string>

#include "pa/kv_layouts.hpp"
#include "pa/tensor.hpp"
#include "pa/types.hpp"

namespace pa::testing {

/// [bench_batch]
/// num_seqs sequences of seq_len tokens each (a multiple of block_size), num_heads query heads
/// over num_kv_heads kv heads.
struct BatchShape {
  int num_seqs = 0;
  int seq_len = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  bool operator==(const BatchShape&) const = default;
};
/// [bench_batch]

/// A benchmark's batch: every cache block belongs to one sequence (so the caches' bytes are
/// exactly the bytes a kernel must read), dealt in shuffled order; K and V uniform in [-1, 1)
/// from a fast generator (a GPU shape holds about a billion elements); q ~ N(0, 4^2).
struct BenchBatch {
  BatchShape shape;
  KvLayout layout = KvLayout::kV0;
  int head_size = 0;
  int block_size = 0;
  Mat q;                // [num_seqs * num_heads, head_size], the stored (rounded) values
  Tensor query;         // [num_seqs, num_heads, head_size]
  Tensor key_cache;     // in `layout`
  Tensor value_cache;   // in `layout`
  Tensor block_tables;  // [num_seqs, seq_len / block_size] int32
  Tensor seq_lens;      // [num_seqs] int32

  float scale() const;
  /// Returns the bytes of K and V a kernel must read.
  std::int64_t kv_bytes() const;
};

BenchBatch make_bench_batch(const BatchShape& shape, KvLayout layout, DType dtype, int head_size,
                            int block_size, std::uint64_t seed);

/// Returns "" when `out` ([num_seqs, num_heads, head_size]) is finite and matches the float64
/// reference on the given (sequence, head) pairs (every pair when the batch is small, the
/// corners and the middle otherwise), else "wrong answer: ..." saying where and by how much.
std::string check_bench_output(const BenchBatch& b, const Tensor& out);

}  // namespace pa::testing

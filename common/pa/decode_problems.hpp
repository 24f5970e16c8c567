/// \file
/// The data of a decode step for the CUDA labs' tests: the new tokens a cache write takes
/// through slot_mapping (with the host's reference write and a byte-exact comparison of caches),
/// and decode batches placed into a NaN-poisoned cache through shuffled block tables, with their
/// float64 expected output and the tolerance of each dtype. Test-only: it speaks GoogleTest.
#pragma once

#include <Eigen/Dense>

#include <cstdint>
#include <string>
#include <vector>

#include "pa/elements.hpp"
#include "pa/kv_layouts.hpp"
#include "pa/tensor.hpp"
#include "pa/testing.hpp"
#include "pa/types.hpp"

namespace pa::testing {

// ---- New tokens written through slot_mapping (tests of reshape_and_cache and its flash twin) ---

/// A flat batch of new tokens as reshape_and_cache takes it: key and value
/// [num_tokens, num_kv_heads, head_size] and slot_mapping [num_tokens] (int64, negative = padding).
struct TokenBatch {
  Tensor key, value, slot_mapping;
};

/// Packs `key_rows` and `value_rows` ([num_tokens, num_kv_heads * head_size], heads side by side)
/// as `dtype` tensors, and `slots` as the slot mapping.
TokenBatch make_token_batch(DType dtype, int num_kv_heads, int head_size, const Mat& key_rows,
                            const Mat& value_rows, const std::vector<std::int64_t>& slots);

/// The flat batch of one engine step: for each sequence s, its tokens [first[s], last[s]) (rows
/// of k[s] and v[s], [seq_len, num_kv_heads * head_size]), token t to slot
/// blocks[s][t / block_size] * block_size + t % block_size, then one padding token (slot -1)
/// whose key and value rows are all 7s.
TokenBatch step_token_batch(DType dtype, int num_kv_heads, int head_size, int block_size,
                            const std::vector<Mat>& k, const std::vector<Mat>& v,
                            const std::vector<std::vector<int>>& blocks,
                            const std::vector<int>& first, const std::vector<int>& last);

/// The host's reshape_and_cache for `layout`: token t of `key` and `value` goes to slot slots[t]
/// (block slots[t] / block_size, row slots[t] % block_size); a negative slot writes nothing.
void reference_reshape_and_cache(KvLayout layout, const Tensor& key, const Tensor& value,
                                 Tensor& key_cache, Tensor& value_cache,
                                 const std::vector<std::int64_t>& slots);

/// Passes when both pairs of caches hold the same bytes (NaN padding included); otherwise names
/// the cache and the first differing element by block, row, kv head and dimension.
::testing::AssertionResult same_cache_bytes(KvLayout layout, const Tensor& want_key_cache,
                                            const Tensor& want_value_cache,
                                            const Tensor& key_cache, const Tensor& value_cache);

// ---- A decode batch in a paged cache (tests) ---------------------------------------------------

/// [decode_config]
struct DecodeConfig {
  KvLayout layout = KvLayout::kV0;
  DType dtype = DType::kFloat16;
  int head_size = 128;
  int block_size = 16;
  int num_heads = 4;
  int num_kv_heads = 2;
  std::vector<int> seq_lens = {37};
  int spare_blocks = 3;  // blocks nobody owns: NaN, and the padding of every block-table row
  // q ~ N(0, spread^2), k ~ N(0, 1), scale 1/sqrt(head_size): logits spread ~`spread`, so every
  // softmax is peaked and a kernel that averages V cannot pass.
  double logit_spread = 4.0;
};
/// [decode_config]

/// [decode_tolerance]
/// How far a decode kernel's output may sit from the reference (long double, rounded to float64):
/// |out - ref| <= atol + rtol |ref|. Both sides start from the same rounded inputs, so only the
/// kernel's float32 arithmetic and the final rounding of `out` to the dtype remain.
struct DecodeTolerance {
  double atol;
  double rtol;
};

/// Returns the tolerance for an output of `dtype`:
///   float32: dot products of <= 256 terms, sums over up to 128k tokens (in two levels when the
///            sequence is split), the GPU's approximate __expf/__fdividef; observed ~1e-6, and
///            1e-4 still fails a wrong weight, which moves outputs by > 1e-2;
///   float16: 11 significant bits; rounding costs up to half an ulp, 2^-11 = 4.9e-4 relative;
///            rtol 1e-3 is two half-ulps, one ulp (float32 error can cross a rounding boundary);
///   bfloat16: 8 significant bits; half an ulp is 2^-8 = 3.9e-3 relative; rtol 8e-3 is two
///            half-ulps, one ulp, as for float16.
DecodeTolerance decode_tolerance(DType dtype);
/// [decode_tolerance]

/// Returns "float16 head_size 128 block_size 16 heads 4/2", for SCOPED_TRACE.
std::string describe(const DecodeConfig& c);

/// One decode step's operands and the float64 data they were made from.
struct DecodeProblem {
  DecodeConfig cfg;
  Mat q;                                 // [num_seqs * num_heads, head_size], rounded to dtype
  std::vector<Mat> k, v;                 // per sequence: [seq_len, num_kv_heads * head_size]
  std::vector<std::vector<int>> blocks;  // per sequence: physical block of each logical block
  int num_blocks = 0;
  int max_seq_len = 0;
  Tensor query;         // [num_seqs, num_heads, head_size]
  Tensor key_cache;     // in cfg.layout
  Tensor value_cache;   // in cfg.layout
  Tensor block_tables;  // [num_seqs, max_num_blocks_per_seq] int32
  Tensor seq_lens;      // [num_seqs] int32

  int num_seqs() const { return static_cast<int>(cfg.seq_lens.size()); }
  float scale() const;
  /// Returns an output tensor shaped like query, every element NaN (a kernel must write all).
  Tensor nan_out() const;
};

/// Returns the number of blocks a sequence of seq_len tokens fills.
inline int blocks_for(int seq_len, int block_size) {
  return (seq_len + block_size - 1) / block_size;
}

/// Draws q, K and V for `c` and places them with place_shuffled.
DecodeProblem make_decode_problem(Rng& rng, const DecodeConfig& c);

/// Deals shuffled physical blocks to the sequences (cfg.spare_blocks left over, all NaN) and
/// writes the caches and tables.
void place_shuffled(DecodeProblem& p, Rng& rng);

/// Writes the caches (NaN wherever no token lives) and block tables for a given placement:
/// sequence s's logical block j lives in physical block blocks[s][j]; every table row is padded
/// to the widest sequence plus one column with `pad_id`.
void place_at(DecodeProblem& p, std::vector<std::vector<int>> blocks, int num_blocks, int pad_id);

/// Pads every row of p.block_tables to `width` columns with the padding id place_at put after
/// the row's last block (an all-NaN block): the wide table of an engine that sizes each row
/// for the longest context it serves, so a kernel that reads blocks past a sequence's end reads
/// NaN rather than past the table. A width at or below the current one changes nothing.
void widen_block_tables(DecodeProblem& p, int width);

/// Returns the float64 truth, [num_seqs * num_heads, head_size]: query head h of sequence s
/// attends kv head h / (num_heads / num_kv_heads) over the sequence's tokens.
Mat expected_decode(const DecodeProblem& p);

/// Labels for a decode output [num_seqs * num_heads, head_size]: element (r, d) is named
/// "sequence r / num_heads, head r % num_heads, dimension d"; the two sides as given.
Labels decode_labels(int num_heads, std::string expected = "reference",
                     std::string actual = "kernel");

/// Passes when the longest sequence's head-0 softmax is far from uniform on this data.
::testing::AssertionResult SpreadIsWide(const DecodeProblem& p);

/// Returns the scores k·q / sqrt(head_size) of query row `row` (numbered as in expected_decode)
/// against every key of its own sequence and kv head: [seq_len].
Vec query_scores(const DecodeProblem& p, Eigen::Index row);

/// Multiplies query row `row` by `factor` and rounds it to cfg.dtype, in p.q and in p.query
/// alike, so that the kernel and the reference go on seeing the same query.
void scale_query_row(DecodeProblem& p, Eigen::Index row, double factor);

/// Returns a copy of `p` with every query row multiplied by `factor` (scale_query_row): with a
/// power of two, the reference of the copy is the truth for `p` run at `factor` times its scale.
DecodeProblem with_query_scaled(DecodeProblem p, double factor);

/// Which cache a helper rewrites.
enum class CacheSide { kKeys, kValues };

/// Writes one row (for values, sequence 0's first value of kv head 0; for keys, 1/2 in every
/// dimension) into every kv head of every slot of the whole cache, rows past each end and spare
/// blocks included, and into every row of p.k or p.v. Call it after the problem is placed. With
/// one key everywhere, no key read (right or wrong block, row, head or dimension) can change a
/// weight: every softmax is uniform over the tokens it covers.
/// With one value everywhere, no value read can change out: it is that row times the weights' sum;
/// and the key slots no token holds get real keys instead of NaN, so that no key read, however
/// wrong, can turn a score into NaN either.
void fill_cache_with_one_row(DecodeProblem& p, CacheSide side);

/// Makes token 0 of every sequence an attention sink: for each kv head its key becomes the sum
/// of the group's query rows, stretched so that every head of the group scores at least
/// `logit` on it (after rounding to cfg.dtype), and the caches are written again.
void add_attention_sink(DecodeProblem& p, double logit);

}  // namespace pa::testing

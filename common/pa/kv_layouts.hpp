/// \file
/// Host views of vLLM's paged KV-cache layouts, for the CUDA labs' tests and benchmarks: element
/// access to a Tensor in float64, the flat index of (block, kv head, row, dimension) in each
/// layout, and decode batches placed into a NaN-poisoned cache through shuffled block tables.
/// Written independently of every kernel, so a test never relies on student code to place data.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "pa/backend.hpp"
#include "pa/tensor.hpp"
#include "pa/testing.hpp"
#include "pa/types.hpp"

namespace pa {
/// Lets GoogleTest print a Backend parameter by name: "emulator", "cuda".
void PrintTo(Backend backend, std::ostream* os);
}  // namespace pa

namespace pa::testing {

/// Returns "Emulator" or "Cuda": the suffix of a backend-parameterised test's name.
std::string backend_test_name(const ::testing::TestParamInfo<Backend>& info);

// ---- Elements of a Tensor, as float64 ---------------------------------------------------------

/// Returns element i (flat, row-major) of `t` widened to double.
double load(const Tensor& t, std::int64_t i);

/// Stores `v` into element i of `t`, rounded to t's dtype (to nearest even).
void store(Tensor& t, std::int64_t i, double v);

/// Returns the value `v` becomes once stored as `dtype`: what a kernel reading it will see.
double round_to(DType dtype, double v);

/// Returns `m` with every element rounded to `dtype`.
Mat rounded(DType dtype, Mat m);

/// Returns a tensor of `shape` holding the elements of `m` in row-major order (rounded to
/// dtype); numel of `shape` must equal m.size().
Tensor to_tensor(DType dtype, const Mat& m, std::vector<std::int64_t> shape);

/// Returns the elements of `t` as a [rows, cols] matrix (rows * cols == t.numel()).
Mat to_mat(const Tensor& t, Eigen::Index rows, Eigen::Index cols);

// ---- The cache layouts ------------------------------------------------------------------------

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

/// Writes one token's keys and values ([num_kv_heads * head_size] each, heads side by side)
/// into row `row` of physical block `block`.
void put_token(KvLayout layout, Tensor& key_cache, Tensor& value_cache, std::int64_t block,
               std::int64_t row, const Eigen::Ref<const Eigen::RowVectorXd>& k_row,
               const Eigen::Ref<const Eigen::RowVectorXd>& v_row);

/// Reads token t of a sequence back out of the caches through its block table: fills row t of
/// k and v ([seq_len, head_size] each) with kv head `head`'s key and value.
void read_token(KvLayout layout, const Tensor& key_cache, const Tensor& value_cache,
                const std::int32_t* block_table, int block_size, int t, int head, Mat& k, Mat& v);

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
/// How far a decode kernel's output may sit from the float64 reference: |out - ref| <= atol +
/// rtol |ref|. Both sides start from the same rounded inputs, so only the kernel's float32
/// arithmetic and the final rounding of `out` to the dtype remain.
struct DecodeTolerance {
  double atol;
  double rtol;
};

/// Returns the tolerance for an output of `dtype`:
///   float32: dot products of <= 256 terms, sums over up to 128k tokens (in two levels when the
///            sequence is split), the GPU's approximate __expf/__fdividef; observed ~1e-6, and
///            1e-4 still fails a wrong weight, which moves outputs by > 1e-2;
///   float16: rounding costs up to 2^-11 = 4.9e-4 relative; rtol 1e-3 is two such half-ulps
///            (the float32 error can push a value across a rounding boundary);
///   bfloat16: 8 significant bits, half an ulp is 2^-8 = 3.9e-3 relative; 8e-3 is two.
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

/// Makes token 0 of every sequence an attention sink: for each kv head its key becomes the sum
/// of the group's query rows, stretched so that every head of the group scores at least
/// `logit` on it (after rounding to cfg.dtype), and the caches are written again.
void add_attention_sink(DecodeProblem& p, double logit);

// ---- A large decode batch (benchmarks) ---------------------------------------------------------

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

// Lab 06 — the graded tests. Run: tools/lab grade 06   (or ctest --preset starter -L lab06)
//
// Every test runs on the SIMT emulator; the same tests run again on CUDA when the build has nvcc
// and a device is present (otherwise they are skipped with "no CUDA device"). Ground truth is
// computed on the host in long double (pa::testing::reference_attention, and host_partial below
// for the partials), from the very values the caches hold. Cache rows and blocks no sequence
// owns hold NaN, block-table rows run on past each sequence's blocks (to whole partitions) into
// an all-NaN block, and the scratch tensors start as NaN: a kernel that reads or writes one
// entry too many fails loudly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "pa/decode_problems.hpp"
#include "pa/simt_testing.hpp"
#include "pa/testing.hpp"
#include "paged_attention_v2.hpp"
#include "simt/errors_and_settings.hpp"

namespace pa::cuda_v2 {

namespace {

using pa::testing::AllClose;
using pa::testing::BitIdentical;
using pa::testing::DecodeConfig;
using pa::testing::DecodeProblem;
using pa::testing::KvLayout;
using pa::testing::load;
using pa::testing::Rng;
using pa::testing::store;
using Config = DecodeConfig;
using Problem = DecodeProblem;

constexpr KvLayout kV0 = KvLayout::kV0;
constexpr int kSmallPartition = 64;  // many partitions from a few thousand tokens

/// [tolerances]
// The per-dtype tolerance every decode kernel of these labs is held to, and why it is that size:
// pa::testing::decode_tolerance (pa/decode_problems.hpp).
using Tolerance = pa::testing::DecodeTolerance;
Tolerance tolerance(DType dtype) {
  return pa::testing::decode_tolerance(dtype);
}

// The partials are float32 whatever the dtype, computed from the same rounded inputs as the
// host's, so their tolerances do not depend on the dtype.
// m: a float32 logit is a dot product of <= 256 terms, scaled: observed errors ~1e-6; a token
// too many or too few moves a partition's max by ~1e-1 or not at all (denom and acc catch that).
constexpr double kMaxLogitTol = 1e-4;
// denom: a float32 sum of <= 512 exponentials whose exponents carry the logits' ~1e-6 error.
constexpr double kExpSumRtol = 1e-4;
// acc: the same sums weighted by values ~N(0, 1); its natural scale is denom, so the tolerance
// is 1e-4 * denom plus 1e-4 relative. Normalizing (acc / denom) misses by a factor of denom.
constexpr double kAccTol = 1e-4;
/// [tolerances]

// ---- The operands: pa/decode_problems.hpp writes them in vLLM's V0 layout ----------------------

/// A decode problem in the V0 layout, its block-table rows padded with an all-NaN block to
/// whole partitions of the largest partition size (plus one block): an engine sizes its table
/// rows for a long context, so a kernel that runs past a sequence's blocks reads NaN.
void widen_for_every_partition_size(Problem& p) {
  const int largest = kSupportedPartitionSizes.back();
  pa::testing::widen_block_tables(
      p, v2_max_num_partitions(p.max_seq_len, largest) * (largest / p.cfg.block_size) + 1);
}

Problem make_problem(Rng& rng, Config c) {
  c.layout = kV0;
  Problem p = pa::testing::make_decode_problem(rng, c);
  widen_for_every_partition_size(p);
  return p;
}

/// The output and the scratch of one call.
struct V2Run {
  Mat out;            // [num_seqs * num_heads, head_size]
  Tensor exp_sums;    // [num_seqs, num_heads, max_num_partitions] float32
  Tensor max_logits;  // [num_seqs, num_heads, max_num_partitions] float32
  Tensor tmp_out;     // [num_seqs, num_heads, max_num_partitions, head_size] float32
};

/// Scratch tensors for `p` cut into partitions of `partition_size`, every entry NaN.
V2Run nan_scratch(const Problem& p, int partition_size) {
  const std::int64_t parts = v2_max_num_partitions(p.max_seq_len, partition_size);
  V2Run r{Mat(), Tensor(DType::kFloat32, {p.num_seqs(), p.cfg.num_heads, parts}), Tensor(),
          Tensor(DType::kFloat32, {p.num_seqs(), p.cfg.num_heads, parts, p.cfg.head_size})};
  r.exp_sums.fill_bytes(0xFF);
  r.max_logits = r.exp_sums;
  r.tmp_out.fill_bytes(0xFF);
  return r;
}

/// Runs the kernels under test on `scratch` (what each test put there) and returns what they
/// left: the output as [num_seqs * num_heads, head_size] and the scratch.
/// `scale` replaces the problem's own when given.
V2Run run(Backend backend, const Problem& p, int partition_size, V2Run scratch,
          std::optional<float> scale = std::nullopt) {
  const Config& c = p.cfg;
  Tensor out = p.nan_out();
  paged_attention_v2(backend, out, scratch.exp_sums, scratch.max_logits, scratch.tmp_out, p.query,
                     p.key_cache, p.value_cache, c.num_kv_heads, scale.value_or(p.scale()),
                     p.block_tables, p.seq_lens, c.block_size, p.max_seq_len, partition_size);
  scratch.out = pa::testing::to_mat(out, Eigen::Index{p.num_seqs()} * c.num_heads, c.head_size);
  return scratch;
}

/// The same on NaN scratch.
V2Run run(Backend backend, const Problem& p, int partition_size) {
  return run(backend, p, partition_size, nan_scratch(p, partition_size));
}

/// Expects `got` within the dtype's tolerance of the float64 reference, naming a failing
/// element by sequence, head and dimension.
void expect_close_to_reference(const Problem& p, const Mat& got,
                               std::optional<double> tolerance_override = std::nullopt) {
  const Tolerance tol = tolerance(p.cfg.dtype);
  EXPECT_TRUE(AllClose(pa::testing::expected_decode(p), got, tolerance_override.value_or(tol.atol),
                       tolerance_override.value_or(tol.rtol),
                       pa::testing::decode_labels(p.cfg.num_heads)));
}

/// Builds `c`, checks its softmax is peaked, and checks the output at every partition size
/// given against the reference.
void expect_matches_reference(Backend backend, const Config& c, std::uint64_t seed,
                              const std::vector<int>& partition_sizes) {
  SCOPED_TRACE(pa::testing::describe(c));
  Rng rng(seed);
  const Problem p = make_problem(rng, c);
  EXPECT_TRUE(pa::testing::SpreadIsWide(p));
  for (const int partition_size : partition_sizes) {
    SCOPED_TRACE("partition_size " + std::to_string(partition_size));
    expect_close_to_reference(p, run(backend, p, partition_size).out);
  }
}

// ---- The partials on the host ----------------------------------------------------------------

/// [host_partial]
/// One partition's softmax state, in float64 from the stored inputs.
struct HostPartial {
  double m = 0.0;      // the largest logit
  double denom = 0.0;  // sum of exp(logit - m)
  Vec acc;             // [head_size] sum of exp(logit - m) v, not divided
};

/// (m, denom, acc) of query head h of sequence s over its tokens [first, last), with the
/// kernel's float32 scale.
HostPartial host_partial(const Problem& p, int s, int h, int first, int last) {
  const int d = p.cfg.head_size;
  const Eigen::Index kv_col = Eigen::Index{h / (p.cfg.num_heads / p.cfg.num_kv_heads)} * d;
  const Mat& k = p.k[static_cast<std::size_t>(s)];  // [seq_len, num_kv_heads * head_size]
  const Mat& v = p.v[static_cast<std::size_t>(s)];
  const Eigen::RowVectorXd q = p.q.row(Eigen::Index{s} * p.cfg.num_heads + h);
  std::vector<long double> logits;
  for (int t = first; t < last; ++t) {
    long double dot = 0;
    for (int i = 0; i < d; ++i) dot += static_cast<long double>(q[i]) * k(t, kv_col + i);
    logits.push_back(dot * static_cast<long double>(p.scale()));
  }
  HostPartial r;
  const long double m = *std::max_element(logits.begin(), logits.end());
  std::vector<long double> acc(static_cast<std::size_t>(d), 0.0L);
  long double denom = 0;
  for (int t = first; t < last; ++t) {
    const long double e = std::exp(logits[static_cast<std::size_t>(t - first)] - m);
    denom += e;
    for (int i = 0; i < d; ++i) acc[static_cast<std::size_t>(i)] += e * v(t, kv_col + i);
  }
  r.m = static_cast<double>(m);
  r.denom = static_cast<double>(denom);
  r.acc = Vec(d);
  for (int i = 0; i < d; ++i) r.acc[i] = static_cast<double>(acc[static_cast<std::size_t>(i)]);
  return r;
}
/// [host_partial]

/// Which parts of the partials a check compares: one of them alone points at the step that
/// computes it (m: the logits and their max; denom: the exponentials), all of them at the whole
/// partial and where it is written.
enum class PartialPart { kMaxLogits, kExpSums, kAll };

/// Passes when every scratch entry the kernels must write (partition p < its sequence's own
/// count, for sequences of more than one partition) matches the host's (m, denom, acc), and
/// every other entry still holds exactly what `before` held (never written). With kMaxLogits or
/// kExpSums, only that part of the written entries is compared.
::testing::AssertionResult PartialsMatchHost(const Problem& p, const V2Run& before,
                                             const V2Run& after, int partition_size,
                                             PartialPart part_checked = PartialPart::kAll) {
  const int num_heads = p.cfg.num_heads, head_size = p.cfg.head_size;
  const int parts = v2_max_num_partitions(p.max_seq_len, partition_size);
  const auto same_bits = [](const Tensor& a, const Tensor& b, std::int64_t i) {
    return std::memcmp(a.data_as<float>() + i, b.data_as<float>() + i, sizeof(float)) == 0;
  };
  for (int s = 0; s < p.num_seqs(); ++s) {
    const int len = p.cfg.seq_lens[static_cast<std::size_t>(s)];
    const int own = v2_max_num_partitions(len, partition_size);
    for (int h = 0; h < num_heads; ++h) {
      for (int part = 0; part < parts; ++part) {
        const std::int64_t i = (std::int64_t{s} * num_heads + h) * parts + part;
        std::ostringstream where;
        where << "sequence " << s << " (" << len << " tokens, " << own << " partition(s)), head "
              << h << ", partition " << part;
        if (part_checked != PartialPart::kAll && (own == 1 || part >= own)) continue;
        if (own == 1 || part >= own) {
          const char* why = own == 1 ? "a one-partition sequence writes out directly"
                                     : "past the sequence's own partitions";
          if (!same_bits(before.max_logits, after.max_logits, i) ||
              !same_bits(before.exp_sums, after.exp_sums, i)) {
            return ::testing::AssertionFailure()
                   << where.str() << ": max_logits/exp_sums were written (" << why
                   << "): max_logits " << load(after.max_logits, i) << ", exp_sums "
                   << load(after.exp_sums, i);
          }
          for (int d = 0; d < head_size; ++d) {
            if (!same_bits(before.tmp_out, after.tmp_out, i * head_size + d)) {
              return ::testing::AssertionFailure() << where.str() << ": tmp_out dimension " << d
                                                   << " was written (" << why << ")";
            }
          }
          continue;
        }
        const int first = part * partition_size;
        const int last = std::min(first + partition_size, len);
        const HostPartial want = host_partial(p, s, h, first, last);
        const double m = load(after.max_logits, i), denom = load(after.exp_sums, i);
        if (part_checked != PartialPart::kExpSums && !(std::abs(m - want.m) <= kMaxLogitTol)) {
          return ::testing::AssertionFailure()
                 << where.str() << ": max_logits " << m << ", the host's max over tokens [" << first
                 << ", " << last << ") is " << want.m << " (tolerance " << kMaxLogitTol << ")";
        }
        if (part_checked == PartialPart::kMaxLogits) continue;
        if (!(std::abs(denom - want.denom) <= kExpSumRtol * want.denom)) {
          return ::testing::AssertionFailure()
                 << where.str() << ": exp_sums " << denom << ", the host's sum of exp(logit - m)"
                 << " over tokens [" << first << ", " << last << ") is " << want.denom
                 << " (its max_logits entry is " << m << ", the host's " << want.m << ")";
        }
        if (part_checked == PartialPart::kExpSums) continue;
        for (int d = 0; d < head_size; ++d) {
          const double got = load(after.tmp_out, i * head_size + d);
          const double tol = kAccTol * want.denom + kAccTol * std::abs(want.acc[d]);
          if (!(std::abs(got - want.acc[d]) <= tol)) {
            return ::testing::AssertionFailure()
                   << where.str() << ": tmp_out dimension " << d << " is " << got
                   << ", the host's undivided sum of exp(logit - m) v is " << want.acc[d]
                   << " (denom " << want.denom << ", tolerance " << tol << ")";
          }
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// ---- The fixture: every test once per backend ---------------------------------------------

// Every test once per backend, shared memory NaN-filled on the emulator (pa/simt_testing.hpp).
class PagedAttentionV2 : public pa::testing::BackendTest<&cuda_device_present> {};

INSTANTIATE_TEST_SUITE_P(, PagedAttentionV2, ::testing::Values(Backend::kEmulator, Backend::kCuda),
                         pa::testing::backend_test_name);

// ---- Every dtype, head size, block size and partition size ---------------------------------

/// [test_grid]
// Each dtype over all 6 head sizes x 3 block sizes x 2 partition sizes (36 instantiations of
// each kernel per test). The lengths end mid-block and mid-partition: 4 partitions of 64 and one
// of 512, a single token, and 9 partitions of 64 or 2 of 512; GQA 4/2.
void expect_grid(Backend backend, DType dtype, std::uint64_t seed) {
  for (const int block_size : kSupportedBlockSizes) {
    for (const int head_size : kSupportedHeadSizes) {
      Config c;
      c.dtype = dtype;
      c.head_size = head_size;
      c.block_size = block_size;
      c.seq_lens = {3 * kSmallPartition + 2 * block_size + 3, 1, kPartitionSize + block_size + 1};
      expect_matches_reference(backend, c,
                               seed + static_cast<std::uint64_t>(head_size * block_size),
                               {kSmallPartition, kPartitionSize});
    }
  }
}

TEST_P(PagedAttentionV2, EveryHeadBlockAndPartitionSizeFloat32) {
  expect_grid(GetParam(), DType::kFloat32, 600);
}
TEST_P(PagedAttentionV2, EveryHeadBlockAndPartitionSizeFloat16) {
  expect_grid(GetParam(), DType::kFloat16, 700);
}
TEST_P(PagedAttentionV2, EveryHeadBlockAndPartitionSizeBFloat16) {
  expect_grid(GetParam(), DType::kBFloat16, 800);
}
/// [test_grid]

// ---- Partition edges, ragged batches, the poisoned tail ------------------------------------

/// [test_edges]
TEST_P(PagedAttentionV2, PartitionEdgesInOneBatch) {
  // 1, P - 1, P, P + 1, 2P and 2P + 1 tokens in one batch, for vLLM's P = 512 and for P = 64:
  // a partition that ends one token early, exactly, or one token into the next partition.
  for (const int partition_size : {kPartitionSize, kSmallPartition}) {
    SCOPED_TRACE("partition_size " + std::to_string(partition_size));
    Config c;
    c.dtype = DType::kFloat16;
    c.head_size = 64;
    c.block_size = 16;
    c.num_heads = 2;
    c.num_kv_heads = 1;
    const int P = partition_size;
    c.seq_lens = {1, P - 1, P, P + 1, 2 * P, 2 * P + 1};
    Rng rng(901 + static_cast<std::uint64_t>(P));
    const Problem p = make_problem(rng, c);
    // The data really is poisoned: the rows after a sequence's last token, and the table's
    // entries after its last block, are NaN.
    for (int s = 0; s < p.num_seqs(); ++s) {
      const int len = c.seq_lens[static_cast<std::size_t>(s)];
      const auto& blocks = p.blocks[static_cast<std::size_t>(s)];
      if (len % c.block_size != 0) {
        ASSERT_TRUE(std::isnan(
            load(p.value_cache, pa::testing::value_index(kV0, p.value_cache, blocks.back(), 0,
                                                         len % c.block_size, 0))));
      }
      const std::int64_t width = p.block_tables.size(1);
      const int pad_id = p.block_tables.data_as<std::int32_t>()[s * width + width - 1];
      ASSERT_TRUE(
          std::isnan(load(p.key_cache, pa::testing::key_index(kV0, p.key_cache, pad_id, 0, 0, 0))));
    }
    EXPECT_TRUE(pa::testing::SpreadIsWide(p));
    expect_close_to_reference(p, run(GetParam(), p, partition_size).out);
  }
}
/// [test_edges]

TEST_P(PagedAttentionV2, RaggedBatchOfManyPartitionCounts) {
  // Six sequences from 45 to 2049 tokens, none a multiple of the block or partition size but
  // one, in bfloat16 with block size 32 and GQA 4/2: 74 partitions of 64, or 12 of 512.
  Config c;
  c.dtype = DType::kBFloat16;
  c.head_size = 128;
  c.block_size = 32;
  c.seq_lens = {777, 45, 1300, 64, 2049, 300};
  expect_matches_reference(GetParam(), c, 902, {kPartitionSize, kSmallPartition});
}

TEST_P(PagedAttentionV2, OnePartitionNextToSixtyFour) {
  // One sequence fits one partition, the other needs 64: the first is written by the attention
  // kernel, the second by the reduce, in the same launch. On the emulator with P = 64 (4096
  // tokens); on a GPU also with P = 512 (32768 tokens).
  Config c;
  c.dtype = DType::kFloat16;
  c.head_size = 128;
  c.block_size = 16;
  c.num_heads = 2;
  c.num_kv_heads = 2;
  c.seq_lens = {30, 64 * kSmallPartition};
  expect_matches_reference(GetParam(), c, 903, {kSmallPartition});
  if (GetParam() == Backend::kCuda) {
    c.seq_lens = {300, 64 * kPartitionSize};
    expect_matches_reference(GetParam(), c, 904, {kPartitionSize});
  }
}

// ---- The partials ------------------------------------------------------------------------------

/// [test_partials]
/// The batch the stage checks of the partials run on, float32, GQA 4/2, block size 16, cut into
/// partitions of 64: 6, 3, 3, 4, 1 and 3 of them. Each sequence's last partition ends inside a
/// block (ragged tails of 12, 2, 7 and 1 tokens) except the 176-token one, whose last partition
/// is three whole blocks (a block too many is the table's all-NaN padding). Rows past the end of
/// sequences 0 and 2 hold a freed sequence's finite keys, aimed along their group's queries (logits
/// ~1e4), and values of 1e3; those of the others stay NaN. Heads 1 and 3 have a mild query
/// (logits within ~+-1, so that e^(0 - m) of a masked row weighs as much as a real token's), heads
/// 0 and 2 a peaked one.
Problem make_stage_problem(std::uint64_t seed) {
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 80;
  c.block_size = 16;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.seq_lens = {364, 130, 135, 193, 40, 176};
  Rng rng(seed);
  Problem p = make_problem(rng, c);
  for (int s = 0; s < p.num_seqs(); ++s) {
    for (const int h : {1, 3})
      pa::testing::scale_query_row(p, Eigen::Index{s} * c.num_heads + h, 0.05);
  }
  constexpr double kStale = 1e3;  // every element of a stale key or value row, up to sign
  const int group = c.num_heads / c.num_kv_heads;
  const int width = c.num_kv_heads * c.head_size;
  for (const int s : {0, 2}) {
    const int len = c.seq_lens[static_cast<std::size_t>(s)];
    Eigen::RowVectorXd stale_key(width);  // [num_kv_heads * head_size]
    for (int g = 0; g < c.num_kv_heads; ++g) {
      // Along the sum of the group's query directions: a large positive logit for each of its
      // heads, the mild ones included (~5 standard deviations above 0 at head size 80).
      Eigen::RowVectorXd aim = Eigen::RowVectorXd::Zero(c.head_size);
      for (int h = g * group; h < (g + 1) * group; ++h) {
        aim += p.q.row(Eigen::Index{s} * c.num_heads + h).normalized();
      }
      stale_key.segment(g * c.head_size, c.head_size) = kStale * aim.array().sign().matrix();
    }
    const Eigen::RowVectorXd stale_value = Eigen::RowVectorXd::Constant(width, kStale);
    const int last = p.blocks[static_cast<std::size_t>(s)].back();
    for (int row = len % c.block_size; row < c.block_size; ++row) {
      pa::testing::put_token(kV0, p.key_cache, p.value_cache, last, row, stale_key, stale_value);
    }
  }
  return p;
}

/// Runs the kernels on make_stage_problem's batch and checks one part of every partial written,
/// alone: the reduce, and the parts computed after it, cannot make it fail.
void expect_partial_part(Backend backend, PartialPart part, std::uint64_t seed) {
  const Problem p = make_stage_problem(seed);
  const V2Run before = nan_scratch(p, kSmallPartition);
  EXPECT_TRUE(PartialsMatchHost(p, before, run(backend, p, kSmallPartition, before),
                                kSmallPartition, part));
}

TEST_P(PagedAttentionV2, PartitionMaxesMatchTheHost) {
  // Each partition's max_logits entry against the host's max of its tokens' scaled logits: the
  // partition's bounds, its block ids, its logits and their max (steps 1 to 3), nothing after.
  expect_partial_part(GetParam(), PartialPart::kMaxLogits, 910);
}

TEST_P(PagedAttentionV2, PartitionExpSumsMatchTheHost) {
  // Each partition's exp_sums entry against the host's sum of exp(logit - m) over its tokens:
  // the statistics relative to the partition's own max (step 4) on top of the logits.
  expect_partial_part(GetParam(), PartialPart::kExpSums, 911);
}

TEST_P(PagedAttentionV2, PartialsMatchTheHostPerPartition) {
  // Each partition's (m, denom, acc) against the host's, for every head; the output is not
  // checked here (the reduce's tests do), so a wrong merge leaves this passing and a wrong
  // partial cannot hide behind a merge. One-partition sequences and the empty trailing
  // partitions must leave their scratch entries untouched.
  // At P = 64 on make_stage_problem's batch (its stale rows and mild heads make a value row
  // counted past the end loud), at P = 512 on three long sequences.
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 80;
  c.block_size = 16;
  c.seq_lens = {1500, 700, 200};
  for (const int partition_size : {kPartitionSize, kSmallPartition}) {
    SCOPED_TRACE("partition_size " + std::to_string(partition_size));
    Rng rng(905);
    const Problem p = partition_size == kSmallPartition ? make_stage_problem(905 + 64)
                                                        : make_problem(rng, c);
    const V2Run before = nan_scratch(p, partition_size);
    const V2Run after = run(GetParam(), p, partition_size, before);
    EXPECT_TRUE(PartialsMatchHost(p, before, after, partition_size));
  }
}
/// [test_partials]

// ---- The weight probe: out holds the softmax weights themselves -----------------------------
//
// With one-hot values the output row is the weight vector: token t's value row has a single 1,
// in dimension t for kv head 0 and (t + head_size / 2) mod head_size for kv head 1, so
// out[b, h, dim(t)] is token t's softmax weight, w_t divided by the sequence's denom (kv heads
// differ, so that a slip of kv head in the value loop shows). Two tests then split the pipeline.
// The ratio of two weights of one partition, w_t / w_t' = e^(s_t - s_t') with s_t the scores,
// does not depend on any factor common to the partition: neither its denominator nor the
// reduce's rescale factor β_p for it, so it fails only when the logits (TODOs 1-3) or the
// weights given to each value row (TODO 5) are wrong. The sum of the real tokens' weights is 1
// whatever the logits are, so it fails when a denominator (TODO 4, the division of TODO 7, the
// reduce) sums the wrong exponentials. float32 throughout: 0 and 1 are
// exact, and a float32 weight keeps ~1e-7.

/// Where token t's weight lands in the output row of a query head of kv head `kv_head`.
int probe_dim(int t, int kv_head, int head_size) {
  return (t + kv_head * (head_size / 2)) % head_size;
}

/// GQA 4/2, head size 256, block size 16, lengths `seq_lens` of at most 256 tokens (one
/// dimension per token), in shuffled blocks.
Problem make_weight_probe(std::uint64_t seed, std::vector<int> seq_lens) {
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 256;
  c.block_size = 16;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.seq_lens = std::move(seq_lens);
  Rng rng(seed);
  Problem p = make_problem(rng, c);
  for (Mat& v : p.v) {  // [seq_len, num_kv_heads * head_size]
    v.setZero();
    for (Eigen::Index t = 0; t < v.rows(); ++t) {
      for (int g = 0; g < c.num_kv_heads; ++g) {
        v(t, Eigen::Index{g} * c.head_size + probe_dim(static_cast<int>(t), g, c.head_size)) = 1.0;
      }
    }
  }
  pa::testing::place_shuffled(p, rng);
  widen_for_every_partition_size(p);
  return p;
}

/// The weights of output row `row` (sequence row / num_heads), token by token: [seq_len].
Vec probe_weights(const Problem& p, const Mat& out, Eigen::Index row) {
  const int seq_len = p.cfg.seq_lens[static_cast<std::size_t>(row / p.cfg.num_heads)];
  const int kv_head =
      static_cast<int>(row % p.cfg.num_heads) / (p.cfg.num_heads / p.cfg.num_kv_heads);
  Vec w(seq_len);
  for (int t = 0; t < seq_len; ++t) w[t] = out(row, probe_dim(t, kv_head, p.cfg.head_size));
  return w;
}

std::string probe_who(const Problem& p, Eigen::Index row) {
  return "sequence " + std::to_string(row / p.cfg.num_heads) + " (" +
         std::to_string(p.cfg.seq_lens[static_cast<std::size_t>(row / p.cfg.num_heads)]) +
         " tokens), head " + std::to_string(row % p.cfg.num_heads);
}

TEST_P(PagedAttentionV2, WeightsOfAPartitionAreInTheRatioOfExpLogits) {
  // Four partitions of 64 in every sequence (so that no scratch entry lies past a sequence's
  // own: the reduce reads no NaN), whose last partition holds 1, 7, 16, 38 and 64 tokens.
  const Problem p = make_weight_probe(920, {193, 199, 208, 230, 256});
  EXPECT_TRUE(pa::testing::SpreadIsWide(p));
  const Mat out = run(GetParam(), p, kSmallPartition).out;
  for (Eigen::Index row = 0; row < out.rows(); ++row) {
    const std::string who = probe_who(p, row);
    const Vec logits = pa::testing::query_scores(p, row);  // s_t = scale q·k_t, [seq_len]
    const Vec weights = probe_weights(p, out, row);
    bool reported = false;
    for (int first = 0; first < logits.size() && !reported; first += kSmallPartition) {
      const int count = std::min<int>(kSmallPartition, static_cast<int>(logits.size()) - first);
      Eigen::Index top = 0;  // every ratio is taken to the partition's most likely token
      logits.segment(first, count).maxCoeff(&top);
      top += first;
      if (!(std::isfinite(weights[top]) && weights[top] > 0.0)) {
        ADD_FAILURE() << who << ", partition " << first / kSmallPartition << ": token " << top
                      << ", its largest logit (" << logits[top] << "), weighs " << weights[top]
                      << " (out dimension " << top << " of its kv head's one-hot values): the "
                      << "logits are wrong before the softmax (the partition's tokens and blocks, "
                         "TODOs 1-2; q·k, the scale or the end mask, TODO 3), or the value loop "
                         "weighs other rows than the partition's own (TODO 5)";
        reported = true;
        break;
      }
      for (int t = first; t < first + count; ++t) {
        const double want = std::exp(logits[t] - logits[top]);
        const double got = weights[t] / weights[top];
        // float32 logits of 256 products carry ~1e-6 absolute error, which exp() turns into as
        // much relative error (the GPU's __expf adds ~2e-6): 1e-4 relative is 25 times that,
        // and 1e-6 absolute lets go ratios below e^-14, whose float32 weights keep few digits.
        // A logit off by more than 1e-4 moves its ratio by more than that.
        if (!(std::abs(got - want) <= 1e-6 + 1e-4 * want)) {
          ADD_FAILURE() << who << ", partition " << first / kSmallPartition
                        << ": the weights are not in the ratio e^(s_t - s_t') of their scores: "
                        << "token " << t
                        << " vs token " << top << " (the partition's largest logit), out[" << t
                        << "] / out[" << top << "] = " << got << ", want e^(" << logits[t] << " - "
                        << logits[top] << ") = " << want
                        << ". Whatever divides or rescales a whole partition cancels in this "
                           "ratio, so the logits are wrong before the softmax (the partition's "
                           "tokens and blocks, TODOs 1-2; q·k, the scale or the end mask, TODO "
                           "3), or the value loop weighs token " << t << "'s row by another "
                           "token's e^(s_t - m) (TODO 5)";
          reported = true;
          break;
        }
      }
    }
  }
}

TEST_P(PagedAttentionV2, WeightsSumToOneOverTheRealTokens) {
  // At P = 64 through the reduce (1, 2, 3, 4 and 4 partitions, ragged inside blocks and
  // partitions), and at P = 512 where each sequence is one partition and the attention kernel
  // divides itself.
  const Problem p = make_weight_probe(921, {37, 100, 150, 199, 256});
  for (const int partition_size : {kSmallPartition, kPartitionSize}) {
    const Mat out = run(GetParam(), p, partition_size).out;
    for (Eigen::Index row = 0; row < out.rows(); ++row) {
      const std::string who =
          probe_who(p, row) + " at partition_size " + std::to_string(partition_size);
      if (!out.row(row).allFinite()) {
        Eigen::Index d = 0;
        while (std::isfinite(out(row, d))) ++d;
        ADD_FAILURE() << who << ": out[" << d << "] = " << out(row, d)
                      << ", not a weight: with one-hot values every element is one token's "
                         "weight or 0 (a row past the end, NaN in the cache, or a partial "
                         "that was never written, was summed)";
        continue;
      }
      const double sum = probe_weights(p, out, row).sum();
      // <= 256 float32 weights, each off by a few ulps after exp, the merge and the division,
      // add up to 1 within ~1e-6; 1e-5 is ten times that, while a denominator that misses or
      // adds one token's exponential moves the sum by that token's share.
      EXPECT_NEAR(sum, 1.0, 1e-5)
          << who << ": the weights of the real tokens sum to " << sum
          << ", not 1. They are e^(s_t - M) divided by their sum over exactly the sequence's "
             "tokens: each partition's denom sums e^(s_t - m) over its own real tokens, not the "
             "masked rows (TODO 4); a one-partition sequence divides by it once, a longer one "
             "leaves acc undivided (TODO 7); the reduce weighs acc and denom alike (reduce "
             "TODO 3) and divides once (reduce TODO 4)";
    }
  }
}

// ---- The reduce alone, on partials made by hand ------------------------------------------------

/// [test_reduce_alone]
/// Partials written by a test for paged_attention_v2_reduce, with the host's merge of them.
struct HandPartials {
  V2Run given;  // the scratch: NaN past each sequence's own partitions
  Tensor out;   // [num_seqs, num_heads, head_size]: 7 everywhere before the call
  Tensor seq_lens;
  int max_seq_len = 0;
  Mat want;     // [num_seqs * num_heads, head_size]: the merge, or 7 for one-partition sequences
};

/// For every (sequence, head) of more than one partition of 64: maxima drawn from [-20, 20]
/// (the partition `far_partition` of head 1 of sequence 0, when given, 150 above them: e^150
/// overflows float32; with `all_low`, every max of head 0 of sequence 0 150 below them: e^-150
/// is 0 in float32; with `every_max`, every max that one value), denominators from [1, 64], acc
/// rows of N(0, denom^2) values; all of them float32 values, so that the host merges exactly
/// what the kernel reads.
HandPartials make_hand_partials(DType dtype, int head_size, const std::vector<int>& seq_lens,
                                std::uint64_t seed, int far_partition = -1,
                                bool all_low = false,
                                std::optional<double> every_max = std::nullopt) {
  constexpr int kHeads = 2;
  const int num_seqs = static_cast<int>(seq_lens.size());
  HandPartials r;
  r.max_seq_len = *std::max_element(seq_lens.begin(), seq_lens.end());
  const int parts = v2_max_num_partitions(r.max_seq_len, kSmallPartition);
  Problem shapes;  // only for nan_scratch's shapes
  shapes.cfg.seq_lens = seq_lens;
  shapes.cfg.num_heads = kHeads;
  shapes.cfg.head_size = head_size;
  shapes.max_seq_len = r.max_seq_len;
  r.given = nan_scratch(shapes, kSmallPartition);
  r.out = Tensor(dtype, {num_seqs, kHeads, head_size});
  r.seq_lens = Tensor(DType::kInt32, {num_seqs});
  r.want = Mat::Constant(Eigen::Index{num_seqs} * kHeads, head_size, 7.0);
  Rng rng(seed);
  const auto uniform = [&](double lo, double hi) {
    return static_cast<float>(std::uniform_real_distribution<double>(lo, hi)(rng.engine()));
  };
  for (int s = 0; s < num_seqs; ++s) {
    r.seq_lens.data_as<std::int32_t>()[s] = seq_lens[static_cast<std::size_t>(s)];
    const int own = v2_max_num_partitions(seq_lens[static_cast<std::size_t>(s)], kSmallPartition);
    for (int h = 0; h < kHeads; ++h) {
      const std::int64_t row = std::int64_t{s} * kHeads + h;
      for (int d = 0; d < head_size; ++d) store(r.out, row * head_size + d, 7.0);
      if (own == 1) continue;  // the attention kernel's row: the reduce leaves it
      std::vector<double> m(static_cast<std::size_t>(own));
      // (uniform() draws either way, so every_max leaves the rest of the partials as they were.)
      for (double& x : m) x = every_max.value_or(uniform(-20.0, 20.0));
      if (s == 0 && h == 1 && far_partition >= 0)
        m[static_cast<std::size_t>(far_partition)] += 150.0;
      if (s == 0 && h == 0 && all_low) {
        for (double& x : m) x -= 150.0;
      }
      const double top = *std::max_element(m.begin(), m.end());
      double denom = 0.0;
      Vec acc = Vec::Zero(head_size);
      for (int q = 0; q < own; ++q) {
        const std::int64_t i = row * parts + q;
        const double sum = uniform(1.0, 64.0);
        store(r.given.max_logits, i, m[static_cast<std::size_t>(q)]);
        store(r.given.exp_sums, i, sum);
        const double w = std::exp(m[static_cast<std::size_t>(q)] - top);
        denom += w * sum;
        for (int d = 0; d < head_size; ++d) {
          const double a = static_cast<float>(rng.normal_vec(1)[0] * sum);
          store(r.given.tmp_out, i * head_size + d, a);
          acc[d] += w * a;
        }
      }
      r.want.row(row) = (acc / denom).transpose();
    }
  }
  return r;
}

/// Runs the reduce alone on `hand`'s partials and returns its out, [num_seqs * 2, head_size].
Mat run_reduce(Backend backend, HandPartials& hand) {
  paged_attention_v2_reduce(backend, hand.out, hand.given.exp_sums, hand.given.max_logits,
                            hand.given.tmp_out, hand.seq_lens, hand.max_seq_len, kSmallPartition);
  return pa::testing::to_mat(hand.out, hand.want.rows(), hand.want.cols());
}

/// Expects the reduce's `got` within the output tolerance of `dtype` of the host's merge of
/// `hand`'s partials (float32 sums of <= 131 weighted terms, then one rounding to dtype), saying
/// `why` when it is not.
void expect_the_hosts_merge(const HandPartials& hand, const Mat& got, DType dtype,
                            const std::string& why) {
  const Tolerance tol = tolerance(dtype);
  EXPECT_TRUE(AllClose(hand.want, got, tol.atol, tol.rtol,
                       pa::testing::decode_labels(2, "the host's merge", "the reduce's out")))
      << "the reduce alone, on given partials" << why;
}

TEST_P(PagedAttentionV2, ReduceAloneMergesOnlyEachSequencesOwnPartials) {
  // The reduce kernel alone (paged_attention_v2_reduce) on partials this test wrote, not your
  // attention kernel: 1,000, 40 and 200 tokens, 16, 1 and 4 partitions of 64. The entries past
  // a sequence's own partitions are NaN, and the 40-token sequence's out rows hold 7 (the
  // attention kernel's answer). Only which partials are merged is checked here: the 7s stay
  // bit for bit, and every merged row is finite (a NaN entry was not read).
  HandPartials hand = make_hand_partials(DType::kFloat32, 64, {1000, 40, 200}, 931);
  const Mat got = run_reduce(GetParam(), hand);
  for (Eigen::Index row = 0; row < got.rows(); ++row) {
    const int s = static_cast<int>(row / 2);
    const bool one_partition = s == 1;
    for (Eigen::Index d = 0; d < got.cols(); ++d) {
      if (one_partition && got(row, d) != 7.0) {
        ADD_FAILURE() << "sequence 1 (40 tokens, one partition), head " << row % 2 << ": out["
                      << d << "] is " << got(row, d) << ", was 7: the reduce wrote the row of a "
                      << "one-partition sequence, whose answer the attention kernel wrote and "
                         "whose scratch entries are nobody's (reduce TODO 1)";
        break;
      }
      if (!one_partition && !std::isfinite(got(row, d))) {
        ADD_FAILURE() << "sequence " << s << " (" << (s == 0 ? 16 : 4) << " partitions), head "
                      << row % 2 << ": out[" << d << "] is " << got(row, d)
                      << " from finite partials: the merge read an entry past the sequence's own "
                         "partitions (NaN here; max_num_partitions is 16), so it must stop at "
                         "ceil(seq_len / PARTITION_SIZE) (reduce TODO 1)";
        break;
      }
    }
  }
}

TEST_P(PagedAttentionV2, ReduceAloneWeighsAgainstTheLargestMax) {
  // The reduce alone on partials of 1,000 tokens (16 partitions of 64) and 8,325 (131: the max
  // sits in the second tile of 128 partitions): on head 1 of the first sequence partition 13
  // (129) holds a max 150 above the others; then, on head 0, every max lies near -150. Weighed
  // against any other reference than the largest max, a rescale factor e^(m_p - M) overflows
  // float32, or every factor of a head underflows to 0 and the merge divides 0 by 0.
  for (const auto& [lens, far, all_low] :
       {std::tuple{std::vector<int>{1000, 1000}, 13, false},
        std::tuple{std::vector<int>{8325}, 129, false},
        std::tuple{std::vector<int>{1000, 1000}, -1, true}}) {
    SCOPED_TRACE(std::to_string(lens.front()) + " tokens, " +
                 (all_low ? std::string("every max of a head near -150")
                          : "the far max in partition " + std::to_string(far)));
    HandPartials hand = make_hand_partials(DType::kFloat32, 64, lens, 932, far, all_low);
    expect_the_hosts_merge(
        hand, run_reduce(GetParam(), hand), DType::kFloat32,
        " whose maxima lie 150 apart (or all lie near -150), differs from sum_p β_p acc_p / "
        "sum_p β_p denom_p with β_p = e^(m_p - M): M must be the largest m_p of the sequence, "
        "in every thread (reduce TODO 2), and every acc_p and denom_p rescaled by its β_p "
        "(reduce TODO 3)");
  }
}

TEST_P(PagedAttentionV2, ReduceAloneMergesTheGivenPartials) {
  // The reduce alone on partials of three sequences of 131 partitions of 64 each (two tiles of
  // the reduce's 128 threads, and no entry past any sequence's own partitions), maxima within
  // +-20 of each other (whatever reference max a merge takes, no weight overflows): the
  // weights, the tiles, the sums and the division. float32 head 64, float16 head 256 (two
  // dimensions per thread).
  for (const auto& [dtype, head_size] :
       {std::pair{DType::kFloat32, 64}, std::pair{DType::kFloat16, 256}}) {
    SCOPED_TRACE(dtype_name(dtype) + " head_size " + std::to_string(head_size));
    HandPartials hand = make_hand_partials(dtype, head_size, {8325, 8321, 8384},
                                           933 + static_cast<std::uint64_t>(head_size));
    expect_the_hosts_merge(
        hand, run_reduce(GetParam(), hand), dtype,
        " differs from their merge sum_p β_p acc_p / sum_p β_p denom_p with β_p = "
        "e^(m_p - M): each tile's β_p (the weights array) written before any is read and read "
        "before the next tile overwrites them, acc and denom rescaled alike (reduce TODO 3), "
        "then one division (reduce TODO 4)");
  }
}

TEST_P(PagedAttentionV2, ReduceAloneWithEqualMaximaIsAPlainSum) {
  // The reduce alone on partials whose maxima are all 2.5: every β_p = e^(m_p - M) is the same
  // number, whatever M a thread takes and whether or not the partials are rescaled, so out is
  // sum_p acc_p / sum_p denom_p. What can still go wrong is which partials are read (131, 1 and
  // 16 partitions of 64, NaN past each sequence's own, the one-partition rows holding 7), the
  // tiles' shared weights and the one division: reduce TODOs 1 and 4, not 2.
  HandPartials hand =
      make_hand_partials(DType::kFloat32, 64, {8325, 40, 1000}, 934, -1, false, 2.5);
  expect_the_hosts_merge(
      hand, run_reduce(GetParam(), hand), DType::kFloat32,
      " whose maxima are all equal (every weight β_p the same, so neither M nor the rescale can "
      "matter), differs from sum_p acc_p / sum_p denom_p: does it read the sequence's own rows, "
      "(seq * num_heads + head) * max_num_partitions + p for p below the sequence's own count, "
      "and leave a one-partition sequence's row alone (reduce TODO 1); are a tile's weights "
      "written before any is read (reduce TODO 3); is the total divided once (reduce TODO 4)?");
}
/// [test_reduce_alone]

TEST_P(PagedAttentionV2, OnePartitionWritesOutWithoutTheReduce) {
  // Every sequence fits one partition: the attention kernel writes out itself, and no scratch
  // entry is touched (the launcher does not even start the reduce: max_num_partitions is 1).
  Config c;
  c.dtype = DType::kBFloat16;
  c.head_size = 96;
  c.block_size = 8;
  for (const auto& [partition_size, lens] :
       {std::pair{kPartitionSize, std::vector<int>{512, 1, 300, 77}},
        std::pair{kSmallPartition, std::vector<int>{64, 17, 1}}}) {
    SCOPED_TRACE("partition_size " + std::to_string(partition_size));
    c.seq_lens = lens;
    Rng rng(906 + static_cast<std::uint64_t>(partition_size));
    const Problem p = make_problem(rng, c);
    const V2Run before = nan_scratch(p, partition_size);
    const V2Run after = run(GetParam(), p, partition_size, before);
    EXPECT_TRUE(PartialsMatchHost(p, before, after, partition_size));
    expect_close_to_reference(p, after.out);
  }
}

/// [test_empty_partitions]
TEST_P(PagedAttentionV2, EmptyTrailingPartitionsAreNeverWrittenOrMerged) {
  // The grid has 3 partitions per sequence (the longest has 1100 tokens); the others need 1 and
  // 2. Their trailing entries hold a previous step's finite leftovers, with a max logit of 50
  // that beats every real one: a kernel that writes them changes them, a reduce that merges
  // them drags every weight towards the leftover.
  Config c;
  c.dtype = DType::kFloat16;
  c.head_size = 64;
  c.block_size = 32;
  c.seq_lens = {1100, 40, 600};
  Rng rng(907);
  const Problem p = make_problem(rng, c);
  V2Run before = nan_scratch(p, kPartitionSize);
  const int parts = v2_max_num_partitions(p.max_seq_len, kPartitionSize);
  for (int s = 0; s < p.num_seqs(); ++s) {
    const int own = v2_max_num_partitions(c.seq_lens[static_cast<std::size_t>(s)], kPartitionSize);
    for (int h = 0; h < c.num_heads; ++h) {
      for (int part = own; part < parts; ++part) {
        const std::int64_t i = (std::int64_t{s} * c.num_heads + h) * parts + part;
        store(before.max_logits, i, 50.0);
        store(before.exp_sums, i, 1.0);
        for (int d = 0; d < c.head_size; ++d) store(before.tmp_out, i * c.head_size + d, 1000.0);
      }
    }
  }
  const V2Run after = run(GetParam(), p, kPartitionSize, before);
  EXPECT_TRUE(PartialsMatchHost(p, before, after, kPartitionSize));
  expect_close_to_reference(p, after.out);
}
/// [test_empty_partitions]

// ---- The merge ------------------------------------------------------------------------------

/// [test_merge]
TEST_P(PagedAttentionV2, OnePartitionEqualsManyPartitions) {
  // v2 equals v1 where v1 runs: with P = 512 these sequences are one partition each, so one
  // thread block holds every logit and divides once (v1's algorithm); with P = 64 they are cut
  // into 8, 5 and 1 partitions and merged. Both are float32 sums of the same terms in another
  // order: observed to agree to ~1e-7, so 1e-5 leaves room and still sees one token's weight.
  constexpr double kSameSumsTol = 1e-5;
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 128;
  c.block_size = 16;
  c.seq_lens = {512, 300, 1};
  Rng rng(908);
  const Problem p = make_problem(rng, c);
  const Mat whole = run(GetParam(), p, kPartitionSize).out;
  const Mat split = run(GetParam(), p, kSmallPartition).out;
  EXPECT_TRUE(
      AllClose(whole, split, kSameSumsTol, kSameSumsTol,
               pa::testing::decode_labels(c.num_heads, "one partition", "64 per partition")));
  expect_close_to_reference(p, whole);
  expect_close_to_reference(p, split);
}

TEST_P(PagedAttentionV2, PartitionMaxesFarApartAreRescaled) {
  // Three keys in the last partition point along their query head, with logits about 140 above
  // everything in the first partition: the merge must rescale each partition to the global
  // max. Taking partition 0's max as the global one overflows exp() (e^140 > float32's 3.4e38);
  // skipping the rescale mixes partials that are on scales e^140 apart.
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 64;
  c.block_size = 16;
  c.num_heads = 2;
  c.num_kv_heads = 2;  // one query head per kv head, so each hot key can aim at its query
  c.seq_lens = {1500};
  Rng rng(909);
  Problem p = make_problem(rng, c);
  const int width = c.num_kv_heads * c.head_size;
  for (const auto& [token, strength] :
       {std::pair{1400, 7.0}, std::pair{1410, 6.98}, std::pair{1450, 6.95}}) {
    Eigen::RowVectorXd hot_key(width);  // [num_kv_heads * head_size]
    for (int h = 0; h < c.num_kv_heads; ++h) {
      hot_key.segment(h * c.head_size, c.head_size) = strength * p.q.row(h).array().sign().matrix();
    }
    p.k[0].row(token) = hot_key;
    const int block = p.blocks[0][static_cast<std::size_t>(token / c.block_size)];
    pa::testing::put_token(kV0, p.key_cache, p.value_cache, block, token % c.block_size, hot_key,
                           p.v[0].row(token));
  }
  // The data really is what the comment says, for both heads and both partition sizes.
  for (int h = 0; h < c.num_heads; ++h) {
    const Vec s = pa::testing::scores(p.q.row(h).transpose(),
                                      p.k[0].middleCols(h * c.head_size, c.head_size));
    ASSERT_GT(s.segment(1400, 100).maxCoeff() - s.head(kSmallPartition).maxCoeff(), 120.0);
  }
  for (const int partition_size : {kPartitionSize, kSmallPartition}) {
    SCOPED_TRACE("partition_size " + std::to_string(partition_size));
    expect_close_to_reference(p, run(GetParam(), p, partition_size).out);
  }
}
/// [test_merge]

TEST_P(PagedAttentionV2, ScaleOtherThanTheDefaultIsUsed) {
  // A model may scale its logits by something other than 1/sqrt(head_size). Twice the scale is
  // exactly the default scale on twice the query (doubling is exact in every dtype), so the
  // reference of the doubled query is the truth for scale * 2.
  Config c;
  c.dtype = DType::kBFloat16;
  c.head_size = 128;
  c.block_size = 16;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.seq_lens = {700, 33};
  Rng rng(949);
  const Problem p = make_problem(rng, c);
  const Problem doubled = pa::testing::with_query_scaled(p, 2.0);
  expect_close_to_reference(
      doubled,
      run(GetParam(), p, kSmallPartition, nan_scratch(p, kSmallPartition), 2.0f * p.scale()).out);
}

TEST_P(PagedAttentionV2, LargeLogitsStayFinite) {
  // Scores up to 300 in every partition (exp overflows float32 above ~88): each partition must
  // subtract its own maximum before exp, and the merge rescale partitions whose maxima lie tens
  // apart.
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 64;
  c.block_size = 8;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.seq_lens = {1100};
  Rng rng(910);
  Problem p = make_problem(rng, c);
  for (int h = 0; h < c.num_heads; ++h) {  // scale each head's query so its top score is 300
    const double top = pa::testing::query_scores(p, h).maxCoeff();
    ASSERT_GT(top, 0.0);
    pa::testing::scale_query_row(p, h, 300.0 / top);
  }
  // Scores of ~300 carry ~300x the absolute float32 rounding of scores of ~1, and exp() passes
  // that on to the weights; 1e-3 is still far below what a wrong maximum produces.
  constexpr double kLargeLogitTol = 1e-3;
  for (const int partition_size : {kPartitionSize, kSmallPartition}) {
    SCOPED_TRACE("partition_size " + std::to_string(partition_size));
    expect_close_to_reference(p, run(GetParam(), p, partition_size).out, kLargeLogitTol);
  }
}

TEST_P(PagedAttentionV2, StaleKeysPastTheEndNeverSetTheMax) {
  // The rows after a sequence's last token hold a freed sequence's keys: finite, and aimed
  // along the query so that their logits (~1e4) dwarf the real ones. They belong to the last
  // partition's last block; neither its logits, nor its max, nor its values may see them.
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 64;
  c.block_size = 16;
  c.num_heads = 3;
  c.num_kv_heads = 3;  // one query head per kv head, so each stale key can aim at its query
  c.seq_lens = {549, 5, 625};
  Rng rng(911);
  Problem p = make_problem(rng, c);
  constexpr double kStale = 1e3;  // every element of a stale key or value row, up to sign
  const int width = c.num_kv_heads * c.head_size;
  for (int s = 0; s < p.num_seqs(); ++s) {
    const int len = c.seq_lens[static_cast<std::size_t>(s)];
    Eigen::RowVectorXd stale_key(width);  // [num_kv_heads * head_size]
    for (int h = 0; h < c.num_kv_heads; ++h) {
      stale_key.segment(h * c.head_size, c.head_size) =
          kStale * p.q.row(s * c.num_heads + h).array().sign().matrix();
    }
    const Eigen::RowVectorXd stale_value = Eigen::RowVectorXd::Constant(width, kStale);
    const int last = p.blocks[static_cast<std::size_t>(s)].back();
    for (int row = len % c.block_size; row < c.block_size; ++row) {
      pa::testing::put_token(kV0, p.key_cache, p.value_cache, last, row, stale_key, stale_value);
    }
  }
  EXPECT_TRUE(pa::testing::SpreadIsWide(p));
  for (const int partition_size : {kPartitionSize, kSmallPartition}) {
    SCOPED_TRACE("partition_size " + std::to_string(partition_size));
    expect_close_to_reference(p, run(GetParam(), p, partition_size).out);
  }
}

TEST_P(PagedAttentionV2, OneTokenReturnsItsValueExactly) {
  // With one key the softmax is exactly [1]: out must be that token's V row, bit for bit, at
  // either partition size, though the 15 rows after it in the block are NaN.
  Config c;
  c.dtype = DType::kBFloat16;
  c.seq_lens = {1, 1};
  Rng rng(912);
  const Problem p = make_problem(rng, c);
  const int group = c.num_heads / c.num_kv_heads;
  for (const int partition_size : {kPartitionSize, kSmallPartition}) {
    const Mat out = run(GetParam(), p, partition_size).out;
    for (int s = 0; s < 2; ++s) {
      for (int h = 0; h < c.num_heads; ++h) {
        const Eigen::Index col = Eigen::Index{h / group} * c.head_size;
        EXPECT_TRUE(BitIdentical(p.v[s].middleCols(col, c.head_size), out.row(s * c.num_heads + h)))
            << "partition_size " << partition_size << ", sequence " << s << " head " << h;
      }
    }
  }
}

// Two tests that each leave one half of the kernels nothing to get wrong (as lab 05's), over
// partitions of unequal sizes, so that a failure says which half holds the bug. One key (1/2 in
// every dimension) in every slot of the key cache (rows past each end and spare blocks included)
// makes every score equal whatever the query, the scale, the partition and whichever keys are read:
// every partition's max is the same, the softmax is uniform and out is the plain mean of the
// values, so only which value rows each partition reads and how the reduce weighs the partitions
// (by their sums: how many tokens each holds) decide it. One value in every slot of the value cache
// makes out that value for any weights that sum to 1, whichever value rows are read: which tokens
// are scored and how cannot change it (the key slots no token holds get real keys, not NaN, so no
// key read can make a score NaN); the normalization of each partition and of the reduce can.
/// A GQA 4/2 float32 problem of lengths around the small partition's edges, whose keys (or
/// values) are one row in every slot of the cache.
Problem equal_rows_problem(std::uint64_t seed, bool keys) {
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 64;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.seq_lens = {1, 63, 64, 65, 300, 700};
  Rng rng(seed);
  Problem p = make_problem(rng, c);
  pa::testing::place_shuffled(p, rng);
  pa::testing::fill_cache_with_one_row(
      p, keys ? pa::testing::CacheSide::kKeys : pa::testing::CacheSide::kValues);
  widen_for_every_partition_size(p);
  return p;
}

TEST_P(PagedAttentionV2, EqualKeysGiveTheMeanOfTheValues) {
  const Problem p = equal_rows_problem(915, true);
  for (const int partition_size : {kPartitionSize, kSmallPartition}) {
    SCOPED_TRACE("partition_size " + std::to_string(partition_size) +
                 ": every key slot of the cache holds one row, so every weight is 1 / seq_len in "
                 "every partition and out is the mean of the sequence's values");
    expect_close_to_reference(p, run(GetParam(), p, partition_size).out);
  }
}

TEST_P(PagedAttentionV2, EqualValuesComeBackWhateverTheWeights) {
  const Problem p = equal_rows_problem(916, false);
  EXPECT_TRUE(pa::testing::SpreadIsWide(p));
  for (const int partition_size : {kPartitionSize, kSmallPartition}) {
    SCOPED_TRACE("partition_size " + std::to_string(partition_size) +
                 ": every value slot of the cache holds one row, so out is that row for any "
                 "weights that sum to 1 over the sequence's tokens and its partitions");
    expect_close_to_reference(p, run(GetParam(), p, partition_size).out);
  }
}

// ---- Heads ------------------------------------------------------------------------------------

TEST_P(PagedAttentionV2, GroupedQueryThirtyTwoHeadsOverFour) {
  // Eight query heads per kv head, each (head, partition) its own thread block.
  Config c;
  c.dtype = DType::kBFloat16;
  c.head_size = 128;
  c.block_size = 32;
  c.num_heads = 32;
  c.num_kv_heads = 4;
  c.seq_lens = {700, 33};
  expect_matches_reference(GetParam(), c, 913, {kPartitionSize, kSmallPartition});
}

TEST_P(PagedAttentionV2, MultiHeadOneKvHeadPerQueryHead) {
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 112;
  c.block_size = 8;
  c.num_heads = 6;
  c.num_kv_heads = 6;
  c.seq_lens = {129, 1000, 8};
  expect_matches_reference(GetParam(), c, 914, {kPartitionSize, kSmallPartition});
}

// ---- Invariances ---------------------------------------------------------------------------

/// [test_invariance]
TEST_P(PagedAttentionV2, PagingIsInvisibleBitForBit) {
  // The same logical tokens dealt to other physical blocks (and a bigger cache) give the same
  // bits: the kernels' arithmetic may depend on token order, never on block ids.
  Config c;
  c.dtype = DType::kFloat16;
  c.block_size = 8;
  c.seq_lens = {610, 9, 130};
  Rng rng(915);
  Problem a = make_problem(rng, c);
  Problem b = a;
  b.cfg.spare_blocks = 11;
  pa::testing::place_shuffled(b, rng);
  pa::testing::widen_block_tables(b, static_cast<int>(a.block_tables.size(1)));
  ASSERT_NE(a.blocks, b.blocks);
  for (const int partition_size : {kPartitionSize, kSmallPartition}) {
    EXPECT_TRUE(BitIdentical(run(GetParam(), a, partition_size).out,
                             run(GetParam(), b, partition_size).out,
                             pa::testing::decode_labels(c.num_heads, "first placement",
                                                        "second placement")))
        << "partition_size " << partition_size;
  }
}

TEST_P(PagedAttentionV2, SchedulesAgreeBitForBit) {
  // On the emulator: the threads of each block run first-to-last, last-to-first and shuffled
  // between synchronisation points, and the blocks of the grid in those orders too. Kernels
  // with every barrier in place give the same bits every time; a missing __syncthreads makes
  // the result depend on the order. On a GPU: three runs agree.
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 80;
  c.block_size = 16;
  c.seq_lens = {700, 3, 140};
  Rng rng(916);
  const Problem p = make_problem(rng, c);
  const pa::testing::RestoreSchedule restore;
  for (const int partition_size : {kPartitionSize, kSmallPartition}) {
    SCOPED_TRACE("partition_size " + std::to_string(partition_size));
    simt::set_schedule(simt::Schedule::Forward);
    const V2Run forward = run(GetParam(), p, partition_size);
    simt::set_schedule(simt::Schedule::Reverse);
    const V2Run reverse = run(GetParam(), p, partition_size);
    simt::set_schedule(simt::Schedule::Random, 2024);
    const V2Run shuffled = run(GetParam(), p, partition_size);
    EXPECT_TRUE(BitIdentical(forward.out, reverse.out,
                             pa::testing::decode_labels(c.num_heads, "forward schedule",
                                                        "reverse schedule")));
    EXPECT_TRUE(BitIdentical(forward.out, shuffled.out,
                             pa::testing::decode_labels(c.num_heads, "forward schedule",
                                                        "random:2024 schedule")));
    EXPECT_TRUE(
        std::memcmp(forward.tmp_out.data(), reverse.tmp_out.data(), forward.tmp_out.nbytes()) ==
            0 &&
        std::memcmp(forward.tmp_out.data(), shuffled.tmp_out.data(), forward.tmp_out.nbytes()) == 0)
        << "the partials in tmp_out differ between schedules";
    expect_close_to_reference(p, forward.out);
  }
}
/// [test_invariance]

// ---- Long contexts: no cap from shared memory ------------------------------------------------

/// [test_long_context]
TEST_P(PagedAttentionV2, LongContextsHaveNoSharedMemoryCap) {
  // v1 keeps every logit in shared memory, which caps its context (24,576 tokens on the
  // emulator). v2's shared memory does not grow with the context. On a GPU: 131,072 tokens
  // (256 partitions of 512: two tiles of the reduce) next to 32,771 and 7. On the emulator, within
  // its time budget: 8,325 tokens in 131 partitions of 64 (also two tiles), next to 700.
  Config c;
  c.dtype = DType::kFloat16;
  c.head_size = 128;
  c.block_size = 16;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  const bool gpu = GetParam() == Backend::kCuda;
  c.seq_lens = gpu ? std::vector<int>{131072, 32771, 7} : std::vector<int>{8325, 700};
  expect_matches_reference(GetParam(), c, 917, {gpu ? kPartitionSize : kSmallPartition});
}
/// [test_long_context]

}  // namespace
}  // namespace pa::cuda_v2

// Lab 06, given: the argument checks (the conventions chapter says what they promise). They
// run on the host copies, before anything reaches a device: lab 05's checks of the operands
// (common/pa/decode_checks.hpp), then the partition size and the scratch tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "given/backend.hpp"
#include "pa/decode_checks.hpp"
#include "pa/tensor_checks.hpp"

namespace pa::cuda_v2 {

namespace checks {

/// Checks the partition size: a power of two (the tests and the chapter's arithmetic assume
/// it), a whole number of cache blocks (a partition never splits a block between two thread
/// blocks), and one of the sizes the kernels are instantiated for.
inline void partition_size(const ArgCheck& check, int partition_size, int block_size) {
  check.positive("partition_size", partition_size);
  check.that((partition_size & (partition_size - 1)) == 0, "partition_size", "a power of two",
             std::to_string(partition_size));
  check.multiple_of("partition_size", partition_size, block_size,
                    "block_size (a partition is whole cache blocks)");
  check.that(is_one_of(kSupportedPartitionSizes, partition_size), "partition_size",
             "one of " + list_string(kSupportedPartitionSizes) +
                 " (the sizes the kernels are compiled for)",
             std::to_string(partition_size));
}

/// The largest grid extent in y and z on every CUDA device: the grid is (num_heads, num_seqs,
/// max_num_partitions).
inline constexpr int kMaxGridYZ = 65535;

/// Checks the operands of an attention call: lab 05's rules for query, caches, block tables and
/// sequence lengths, then the partition size, and that the grid fits a CUDA launch.
/// `function` prefixes the messages.
inline void attention(const char* function, const AttentionArgs& args) {
  const ArgCheck check(function);
  check_v0_decode_operands(check, args, kSupportedHeadSizes, kSupportedBlockSizes);
  partition_size(check, args.partition_size, args.block_size);
  check.at_most("num_seqs (query.shape[0])", args.query.size(0), kMaxGridYZ,
                "gridDim.y's limit on a CUDA device");
  check.at_most("max_num_partitions = ceil(max_seq_len / partition_size)",
                v2_max_num_partitions(args.max_seq_len, args.partition_size), kMaxGridYZ,
                "gridDim.z's limit on a CUDA device: use a larger partition_size");
}

/// Checks the three float32 scratch tensors: exp_sums and max_logits [num_seqs, num_heads,
/// max_num_partitions], tmp_out [num_seqs, num_heads, max_num_partitions, head_size].
inline void scratch(const ArgCheck& check, const Tensor& exp_sums, const Tensor& max_logits,
                    const Tensor& tmp_out, std::int64_t num_seqs, std::int64_t num_heads,
                    std::int64_t head_size, std::int64_t partitions) {
  const std::string how = "max_num_partitions = ceil(max_seq_len / partition_size) = " +
                          std::to_string(partitions);
  const std::string why = "the partials are kept in float32";
  dtype_is(check, "exp_sums", exp_sums, DType::kFloat32, why);
  shape_is(check, "exp_sums", exp_sums, {num_seqs, num_heads, partitions},
           "[num_seqs, num_heads, max_num_partitions], " + how);
  dtype_is(check, "max_logits", max_logits, DType::kFloat32, why);
  shape_is(check, "max_logits", max_logits, {num_seqs, num_heads, partitions},
           "[num_seqs, num_heads, max_num_partitions], " + how);
  dtype_is(check, "tmp_out", tmp_out, DType::kFloat32, why);
  shape_is(check, "tmp_out", tmp_out, {num_seqs, num_heads, partitions, head_size},
           "[num_seqs, num_heads, max_num_partitions, head_size], " + how);
}

/// Checks the output and the three scratch tensors against the operands: out like query;
/// exp_sums and max_logits [num_seqs, num_heads, max_num_partitions] and tmp_out
/// [num_seqs, num_heads, max_num_partitions, head_size], all three float32.
inline void outputs(const char* function, const AttentionArgs& args, const Tensor& out,
                    const Tensor& exp_sums, const Tensor& max_logits, const Tensor& tmp_out) {
  const ArgCheck check(function);
  check_out_like_query(check, out, args.query);
  const std::int64_t num_seqs = args.query.size(0), num_heads = args.query.size(1);
  const std::int64_t head_size = args.query.size(2);
  const std::int64_t partitions = v2_max_num_partitions(args.max_seq_len, args.partition_size);
  scratch(check, exp_sums, max_logits, tmp_out, num_seqs, num_heads, head_size, partitions);
}

/// Checks the operands of the reduce alone: out [num_seqs, num_heads, head_size] of a float
/// dtype and a supported head size; seq_lens int32 [num_seqs], each in [1, max_seq_len]; a
/// compiled partition size; the three float32 scratch tensors of paged_attention_v2's shapes.
inline void reduce(const char* function, const Tensor& out, const Tensor& exp_sums,
                   const Tensor& max_logits, const Tensor& tmp_out, const Tensor& seq_lens,
                   int max_seq_len, int partition_size) {
  const ArgCheck check(function);
  rank_is(check, "out", out, 3, "[num_seqs, num_heads, head_size]");
  check.that(is_floating(out.dtype()), "out.dtype", "float32, float16 or bfloat16",
             dtype_name(out.dtype()));
  const std::int64_t num_seqs = out.size(0), num_heads = out.size(1), head_size = out.size(2);
  check.that(is_one_of(kSupportedHeadSizes, head_size), "head_size (out.shape[2])",
             "one of " + list_string(kSupportedHeadSizes), std::to_string(head_size));
  check.that(is_one_of(kSupportedPartitionSizes, partition_size), "partition_size",
             "one of " + list_string(kSupportedPartitionSizes) +
                 " (the sizes the kernels are compiled for)",
             std::to_string(partition_size));
  check.positive("max_seq_len", max_seq_len);
  check.at_most("num_seqs (out.shape[0])", num_seqs, kMaxGridYZ,
                "gridDim.y's limit on a CUDA device");
  dtype_is(check, "seq_lens", seq_lens, DType::kInt32, "int32, as in vLLM");
  shape_is(check, "seq_lens", seq_lens, {num_seqs}, "[num_seqs]");
  for (std::int64_t s = 0; s < num_seqs; ++s) {
    const std::int64_t len = seq_lens.data_as<std::int32_t>()[s];
    check.that(len >= 1 && len <= max_seq_len, "seq_lens[" + std::to_string(s) + "]",
               "in [1, max_seq_len = " + std::to_string(max_seq_len) + "]", std::to_string(len));
  }
  const std::int64_t partitions = v2_max_num_partitions(max_seq_len, partition_size);
  scratch(check, exp_sums, max_logits, tmp_out, num_seqs, num_heads, head_size, partitions);
}

}  // namespace checks

}  // namespace pa::cuda_v2

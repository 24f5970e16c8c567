// Lab 06, given: the public functions of paged_attention_v2.hpp. Each checks its arguments on
// the host copies (a kernel that reads past a block table cannot say so, it reads someone
// else's memory) and hands them to the backend's launchers.
#include "given/backend.hpp"
#include "given/checks.hpp"

namespace pa::cuda_v2 {
namespace {

const Launchers& launchers(Backend backend, const char* function) {
  return pick_backend<Launchers>(backend, emu::launchers(),
                                 PA_CUDA_BACKEND_OR_NULL(cuda::launchers()), function);
}

}  // namespace

void paged_attention_v2(Backend backend, Tensor& out, Tensor& exp_sums, Tensor& max_logits,
                        Tensor& tmp_out, const Tensor& query, const Tensor& key_cache,
                        const Tensor& value_cache, int num_kv_heads, float scale,
                        const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                        int max_seq_len, int partition_size) {
  const AttentionArgs args{{query, key_cache, value_cache, num_kv_heads, block_tables, seq_lens,
                            block_size, max_seq_len},
                           scale, partition_size};
  checks::attention("paged_attention_v2", args);
  checks::outputs("paged_attention_v2", args, out, exp_sums, max_logits, tmp_out);
  if (query.size(0) == 0) return;
  launchers(backend, "paged_attention_v2")
      .paged_attention_v2(args, out, exp_sums, max_logits, tmp_out);
}

void paged_attention_v2_reduce(Backend backend, Tensor& out, const Tensor& exp_sums,
                               const Tensor& max_logits, const Tensor& tmp_out,
                               const Tensor& seq_lens, int max_seq_len, int partition_size) {
  checks::reduce("paged_attention_v2_reduce", out, exp_sums, max_logits, tmp_out, seq_lens,
                 max_seq_len, partition_size);
  if (out.size(0) == 0) return;
  launchers(backend, "paged_attention_v2_reduce")
      .paged_attention_v2_reduce(out, exp_sums, max_logits, tmp_out, seq_lens, partition_size);
}

int choose_partition_size(Backend backend, DType dtype, int head_size, int block_size,
                          int num_seqs, int num_heads, int max_seq_len) {
  const int slots =
      launchers(backend, "choose_partition_size").attention_slots(dtype, head_size, block_size);
  return v2_partition_size(num_seqs, num_heads, max_seq_len, slots);
}

bool cuda_device_present() {
  return has_cuda_device<Launchers>(PA_CUDA_BACKEND_OR_NULL(cuda::launchers()));
}

DeviceSession::DeviceSession(Backend backend, const Tensor& query, const Tensor& key_cache,
                             const Tensor& value_cache, int num_kv_heads, float scale,
                             const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                             int max_seq_len, int partition_size) {
  const AttentionArgs args{{query, key_cache, value_cache, num_kv_heads, block_tables, seq_lens,
                            block_size, max_seq_len},
                           scale, partition_size};
  checks::attention("DeviceSession", args);
  open(launchers(backend, "DeviceSession").open_session(args));
}

}  // namespace pa::cuda_v2

// Lab 05, given: the public functions of paged_attention_v1.hpp. Each checks its arguments on
// the host copies (a kernel that reads past a block table cannot say so, it reads someone
// else's memory) and hands them to the backend's launchers.
#include <string>

#include "given/backend.hpp"
#include "given/checks.hpp"

namespace pa::cuda_v1 {
namespace {

const Launchers& launchers(Backend backend, const char* function) {
  return pick_backend<Launchers>(backend, emu::launchers(),
                                 PA_CUDA_BACKEND_OR_NULL(cuda::launchers()), function);
}

}  // namespace

void reshape_and_cache(Backend backend, const Tensor& key, const Tensor& value, Tensor& key_cache,
                       Tensor& value_cache, const Tensor& slot_mapping) {
  checks::reshape_and_cache(key, value, key_cache, value_cache, slot_mapping);
  if (key.size(0) == 0) return;
  launchers(backend, "reshape_and_cache")
      .reshape_and_cache(key, value, key_cache, value_cache, slot_mapping);
}

void paged_attention_v1(Backend backend, Tensor& out, const Tensor& query, const Tensor& key_cache,
                        const Tensor& value_cache, int num_kv_heads, float scale,
                        const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                        int max_seq_len) {
  const AttentionArgs args{{query, key_cache, value_cache, num_kv_heads, block_tables, seq_lens,
                            block_size, max_seq_len},
                           scale};
  checks::attention("paged_attention_v1", args);
  checks::out_like_query("paged_attention_v1", out, query);
  if (query.size(0) == 0) return;
  auto session = launchers(backend, "paged_attention_v1").open_session(args);
  session->launch();
  session->download(out);
}

Tensor paged_attention_v1_probe(Backend backend, Probe probe, const Tensor& query,
                                const Tensor& key_cache, const Tensor& value_cache,
                                int num_kv_heads, float scale, const Tensor& block_tables,
                                const Tensor& seq_lens, int block_size, int max_seq_len) {
  const AttentionArgs args{{query, key_cache, value_cache, num_kv_heads, block_tables, seq_lens,
                            block_size, max_seq_len},
                           scale};
  checks::attention("paged_attention_v1_probe", args);
  ArgCheck("paged_attention_v1_probe")
      .that(probe == Probe::kLogits || probe == Probe::kProbabilities, "probe",
            "Probe::kLogits or Probe::kProbabilities",
            "Probe(" + std::to_string(static_cast<int>(probe)) + ")");
  // [num_seqs, num_heads, max_num_blocks_per_seq * block_size], NaN where the kernel writes
  // nothing.
  Tensor rows(DType::kFloat32, {query.size(0), query.size(1), block_tables.size(1) * block_size});
  rows.fill_bytes(0xFF);
  if (query.size(0) == 0) return rows;
  launchers(backend, "paged_attention_v1_probe").probe(args, probe, rows);
  return rows;
}

int v1_max_seq_len(Backend backend, DType dtype, int head_size, int block_size) {
  checks::kernel_config(ArgCheck("v1_max_seq_len"), dtype, head_size, block_size);
  return launchers(backend, "v1_max_seq_len").max_seq_len(dtype, head_size, block_size);
}

bool cuda_device_present() {
  return has_cuda_device<Launchers>(PA_CUDA_BACKEND_OR_NULL(cuda::launchers()));
}

DeviceSession::DeviceSession(Backend backend, const Tensor& query, const Tensor& key_cache,
                             const Tensor& value_cache, int num_kv_heads, float scale,
                             const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                             int max_seq_len) {
  const AttentionArgs args{{query, key_cache, value_cache, num_kv_heads, block_tables, seq_lens,
                            block_size, max_seq_len},
                           scale};
  checks::attention("DeviceSession", args);
  open(launchers(backend, "DeviceSession").open_session(args));
}

}  // namespace pa::cuda_v1

// Lab 07, given: the public functions of gqa_decode.hpp. Each checks its arguments on the host
// copies (a kernel that reads past a block table cannot say so, it reads someone else's memory)
// and hands them to the backend's launchers.
#include <memory>
#include <stdexcept>
#include <utility>

#include "given/backend.hpp"
#include "given/checks.hpp"

namespace pa::cuda_gqa {
namespace {

const Launchers& launchers(Backend backend, const char* function) {
  return pick_backend<Launchers>(backend, emu::launchers(),
                                 PA_CUDA_BACKEND_OR_NULL(cuda::launchers()), function);
}

/// The partition size of a checked call: the caller's, or default_partition_size on the slots
/// of `backend`'s device (its launchers' decode_slots), worked out here, once.
int chosen_partition_size(const Launchers& backend, const DecodeArgs& a) {
  if (a.partition_size != 0) return a.partition_size;
  const int slots = backend.decode_slots(a.query.dtype(), static_cast<int>(a.query.size(2)),
                                         static_cast<int>(a.key_cache.size(1)));
  return default_partition_size(static_cast<int>(a.query.size(0)),
                                static_cast<int>(a.key_cache.size(2)), a.max_seq_len, slots);
}

}  // namespace

void reshape_and_cache_flash(Backend backend, const Tensor& key, const Tensor& value,
                             Tensor& key_cache, Tensor& value_cache, const Tensor& slot_mapping) {
  checks::reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping);
  if (key.size(0) == 0) return;
  launchers(backend, "reshape_and_cache_flash")
      .reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping);
}

void gqa_decode(Backend backend, Tensor& out, const Tensor& query, const Tensor& key_cache,
                const Tensor& value_cache, float scale, const Tensor& block_tables,
                const Tensor& seq_lens, int max_seq_len, int partition_size) {
  DecodeArgs args{query,    key_cache,   value_cache,   scale,
                  block_tables, seq_lens, max_seq_len, partition_size};
  checks::decode("gqa_decode", args);
  checks::out_like_query("gqa_decode", out, query);
  if (query.size(0) == 0) return;
  const Launchers& on = launchers(backend, "gqa_decode");
  args.partition_size = chosen_partition_size(on, args);
  auto session = on.open_session(args);
  session->launch();
  session->download(out);
}

bool cuda_device_present() {
  return has_cuda_device<Launchers>(PA_CUDA_BACKEND_OR_NULL(cuda::launchers()));
}

DeviceSession::DeviceSession(Backend backend, const Tensor& query, const Tensor& key_cache,
                             const Tensor& value_cache, float scale, const Tensor& block_tables,
                             const Tensor& seq_lens, int max_seq_len, int partition_size) {
  DecodeArgs args{query,    key_cache,   value_cache,   scale,
                  block_tables, seq_lens, max_seq_len, partition_size};
  checks::decode("DeviceSession", args);
  const Launchers& on = launchers(backend, "DeviceSession");
  partition_size_ = args.partition_size = chosen_partition_size(on, args);
  std::unique_ptr<SessionImpl> session = on.open_session(args);
  partitions_ = dynamic_cast<const PartitionStateReader*>(session.get());
  open(std::move(session));
}

PartitionState DeviceSession::partition_state() const {
  if (partitions_ == nullptr) throw std::logic_error("DeviceSession: no partition state");
  return partitions_->partition_state();
}

}  // namespace pa::cuda_gqa

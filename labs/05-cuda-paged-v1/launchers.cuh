/// \file
/// Lab 05, given host code: the launchers behind reshape_and_cache and paged_attention_v1.
/// Each copies the host tensors into device buffers, picks the kernel instantiation for the
/// runtime dtype, head size and block size, sizes the dynamic shared memory and opts into it,
/// launches, asks whether the kernel was still a skeleton, and copies the result back.
/// starter.cpp and the reference solution both include this file at the bottom, after their
/// two kernels (the launchers name them): one copy for both, not to be edited.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "kernel_support.cuh"

namespace pa::cuda_v1::SIMT_BACKEND {
namespace {

/// A device copy of `t`, element type T (the caller picks the T that matches t.dtype()).
template <typename T>
simt::DeviceBuffer<T> to_device(const Tensor& t) {
  simt::DeviceBuffer<T> buffer(static_cast<std::size_t>(t.numel()));  // [t.numel()]
  buffer.upload(t.data_as<T>(), buffer.size());
  return buffer;
}

/// Copies `buffer` back over the bytes of `t`, which has as many elements.
template <typename T>
void to_host(const simt::DeviceBuffer<T>& buffer, Tensor& t) {
  buffer.download(t.data_as<T>(), buffer.size());
}

/// Calls f(std::type_identity<scalar_t>{}) with the device type of `dtype`.
template <class F>
void with_scalar_t(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(std::type_identity<float>{});
    case DType::kFloat16: return f(std::type_identity<__half>{});
    case DType::kBFloat16: return f(std::type_identity<__nv_bfloat16>{});
    default: throw std::logic_error("with_scalar_t: not an activation dtype (checks missed it)");
  }
}

/// One instantiation of the attention kernel: element type, head size and block size.
template <typename T, int HEAD, int BLOCK>
struct V1Config {
  using scalar_t = T;
  static constexpr int head_size = HEAD;
  static constexpr int block_size = BLOCK;
};

/// Calls f(V1Config<scalar_t, HEAD_SIZE, BLOCK_SIZE>{}) for the runtime head size.
template <typename scalar_t, int BLOCK_SIZE, class F>
void with_head_size(int head_size, F&& f) {
  switch (head_size) {
    case 64: return f(V1Config<scalar_t, 64, BLOCK_SIZE>{});
    case 80: return f(V1Config<scalar_t, 80, BLOCK_SIZE>{});
    case 96: return f(V1Config<scalar_t, 96, BLOCK_SIZE>{});
    case 112: return f(V1Config<scalar_t, 112, BLOCK_SIZE>{});
    case 128: return f(V1Config<scalar_t, 128, BLOCK_SIZE>{});
    case 256: return f(V1Config<scalar_t, 256, BLOCK_SIZE>{});
    default: throw std::logic_error("with_head_size: unsupported head size (checks missed it)");
  }
}

/// Calls f(V1Config<scalar_t, HEAD_SIZE, BLOCK_SIZE>{}) for the runtime sizes: the only place
/// that names every supported instantiation.
template <class F>
void with_v1_config(DType dtype, int head_size, int block_size, F&& f) {
  with_scalar_t(dtype, [&](auto scalar) {
    using scalar_t = typename decltype(scalar)::type;
    switch (block_size) {
      case 8: return with_head_size<scalar_t, 8>(head_size, f);
      case 16: return with_head_size<scalar_t, 16>(head_size, f);
      case 32: return with_head_size<scalar_t, 32>(head_size, f);
      default: throw std::logic_error("with_v1_config: unsupported block size (checks missed it)");
    }
  });
}

/// The attention kernel instantiated for Config, with kNumThreads threads per block.
template <class Config>
constexpr auto v1_kernel() {
  return &paged_attention_v1_kernel<typename Config::scalar_t, Config::head_size,
                                    Config::block_size, kNumThreads>;
}

/// The dynamic shared memory this instantiation may use on this device, in bytes.
template <class Config>
std::size_t v1_shared_mem_limit() {
  return simt::max_dynamic_shared_bytes(v1_kernel<Config>());
}

/// Throws pa::NotImplemented if `kernel` ran as a skeleton. The flag and throw_if_todo live in
/// the file that has skeletons (starter.cpp defines PA_TODO_KERNEL); a file without any, like
/// the reference solution, has nothing to check.
void check_implemented([[maybe_unused]] const char* kernel) {
#if defined(PA_TODO_KERNEL)
  throw_if_todo(kernel);
#endif
}

/// The longest context whose logits (padded to whole blocks) fit in `limit_bytes`.
int tokens_within(std::size_t limit_bytes, int block_size) {
  const std::size_t floats = limit_bytes / sizeof(float);
  return static_cast<int>(floats / static_cast<std::size_t>(block_size)) * block_size;
}

}  // namespace

// The backend's half of the public API (paged_attention_v1.hpp declares it and dispatches to
// it); the contracts are the header's.

/// [reshape_and_cache]
void reshape_and_cache(const Tensor& key, const Tensor& value, Tensor& key_cache,
                       Tensor& value_cache, const Tensor& slot_mapping) {
  checks::reshape_and_cache(key, value, key_cache, value_cache, slot_mapping);
  const int num_tokens = static_cast<int>(key.size(0));
  const int num_kv_heads = static_cast<int>(key.size(1));
  const int head_size = static_cast<int>(key.size(2));
  const int block_size = static_cast<int>(key_cache.size(3));
  if (num_tokens == 0) return;
  with_scalar_t(key.dtype(), [&](auto scalar) {
    using scalar_t = typename decltype(scalar)::type;
    const auto d_key = to_device<scalar_t>(key);      // [num_tokens, num_kv_heads, head_size]
    const auto d_value = to_device<scalar_t>(value);  // [num_tokens, num_kv_heads, head_size]
    // [num_blocks, num_kv_heads, head_size/x, block_size, x]
    auto d_key_cache = to_device<scalar_t>(key_cache);
    // [num_blocks, num_kv_heads, head_size, block_size]
    auto d_value_cache = to_device<scalar_t>(value_cache);
    const auto d_slots = to_device<std::int64_t>(slot_mapping);  // [num_tokens]
    const int width = num_kv_heads * head_size;
    simt::launch(reshape_and_cache_kernel<scalar_t>, dim3(num_tokens), dim3(std::min(width, 512)),
                 0, d_key.data(), d_value.data(), d_key_cache.data(), d_value_cache.data(),
                 d_slots.data(), width, width, num_kv_heads, head_size, block_size,
                 x_of(key.dtype()));
    check_implemented("reshape_and_cache_kernel");
    to_host(d_key_cache, key_cache);
    to_host(d_value_cache, value_cache);
  });
}
/// [reshape_and_cache]

/// [launcher]
void paged_attention_v1(Tensor& out, const Tensor& query, const Tensor& key_cache,
                        const Tensor& value_cache, int num_kv_heads, float scale,
                        const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                        int max_seq_len) {
  checks::paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, block_tables,
                             seq_lens, block_size, max_seq_len);
  const int num_seqs = static_cast<int>(query.size(0));
  const int num_heads = static_cast<int>(query.size(1));
  const int head_size = static_cast<int>(query.size(2));
  if (num_seqs == 0) return;

  with_v1_config(query.dtype(), head_size, block_size, [&](auto config) {
    using Config = decltype(config);
    using scalar_t = typename Config::scalar_t;
    const auto kernel = v1_kernel<Config>();

    // Shared memory: every logit of the longest sequence, bounded by what the device allows.
    const std::size_t shared_bytes = v1_shared_mem_bytes(head_size, block_size, max_seq_len);
    const std::size_t limit = v1_shared_mem_limit<Config>();
    checks::context_fits(max_seq_len, tokens_within(limit, block_size), limit,
                         SIMT_BACKEND_NAME);
    simt::set_max_dynamic_shared_bytes(kernel, shared_bytes);  // opt in past the 48 KiB default

    const auto d_query = to_device<scalar_t>(query);  // [num_seqs, num_heads, head_size]
    // [num_blocks, num_kv_heads, head_size/x, block_size, x]
    const auto d_key_cache = to_device<scalar_t>(key_cache);
    // [num_blocks, num_kv_heads, head_size, block_size]
    const auto d_value_cache = to_device<scalar_t>(value_cache);
    // [num_seqs, max_num_blocks_per_seq]
    const auto d_block_tables = to_device<std::int32_t>(block_tables);
    const auto d_seq_lens = to_device<std::int32_t>(seq_lens);  // [num_seqs]
    // [num_seqs, num_heads, head_size]
    simt::DeviceBuffer<scalar_t> d_out(static_cast<std::size_t>(out.numel()));
    d_out.fill_bytes(0xFF);  // NaN: an element the kernel forgets to write cannot pass

    const int kv_head_stride = head_size * block_size;
    const int kv_block_stride = num_kv_heads * kv_head_stride;
    simt::launch(kernel, dim3(num_heads, num_seqs), dim3(kNumThreads), shared_bytes,
                 d_out.data(), d_query.data(), d_key_cache.data(), d_value_cache.data(),
                 num_kv_heads, scale, d_block_tables.data(), d_seq_lens.data(),
                 static_cast<int>(block_tables.size(1)), num_heads * head_size, kv_block_stride,
                 kv_head_stride);
    check_implemented("paged_attention_v1_kernel");
    to_host(d_out, out);
  });
}
/// [launcher]

int v1_max_seq_len(DType dtype, int head_size, int block_size) {
  checks::kernel_config(ArgCheck("v1_max_seq_len"), dtype, head_size, block_size);
  int tokens = 0;
  with_v1_config(dtype, head_size, block_size, [&](auto config) {
    tokens = tokens_within(v1_shared_mem_limit<decltype(config)>(), block_size);
  });
  return tokens;
}

int device_count() { return simt::cuda_device_count(); }

}  // namespace pa::cuda_v1::SIMT_BACKEND

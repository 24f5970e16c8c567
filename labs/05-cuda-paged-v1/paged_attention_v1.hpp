/// \file
/// Lab 05 — vLLM's paged_attention_v1 CUDA kernel and the cache writer reshape_and_cache, in
/// vLLM's memory layouts. The kernels are CUDA C++ compiled twice: by nvcc for the CUDA backend
/// (when CMake finds a CUDA compiler) and by the host compiler against the SIMT emulator
/// (always), so every test runs on every machine. This header is plain C++: host tensors in,
/// host tensors out, and the caller picks the backend.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "pa/checks.hpp"

namespace pa::cuda_v1 {

/// [types]
/// Where a kernel runs: the SIMT emulator on the CPU (every machine) or a CUDA GPU.
enum class Backend { kEmulator, kCuda };

/// Element types of the tensors below; float32/float16/bfloat16 for activations and caches,
/// int32 for block tables and lengths, int64 for slot mappings (as in vLLM).
enum class DType { kFloat32, kFloat16, kBFloat16, kInt32, kInt64 };

/// The sizes the attention kernel is instantiated for (template arguments, like vLLM's).
inline constexpr std::array<int, 6> kSupportedHeadSizes{64, 80, 96, 112, 128, 256};
inline constexpr std::array<int, 3> kSupportedBlockSizes{8, 16, 32};

/// Threads per thread block of paged_attention_v1_kernel (four warps).
inline constexpr int kNumThreads = 128;
/// Threads per warp.
inline constexpr int kWarpSize = 32;
/// [types]

/// Bytes per element of `dtype`.
constexpr std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
  }
  return 0;
}

/// The name the error messages use: "float32", "float16", "bfloat16", "int32", "int64".
inline std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
  }
  return "?";
}

/// True for the three activation types the kernels accept.
constexpr bool is_floating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

/// "emulator" or "cuda".
inline std::string backend_name(Backend backend) {
  return backend == Backend::kCuda ? "cuda" : "emulator";
}

/// The key cache's innermost extent: how many elements fill 16 bytes (4 for float32, 8 for
/// float16 and bfloat16), so one thread's read of x neighbours is one 16-byte load.
constexpr int x_of(DType dtype) { return static_cast<int>(16 / dtype_size(dtype)); }

/// [tensor]
/// A dense, row-major host tensor: a dtype, a shape and the bytes. The stand-in for the
/// torch.Tensor that vLLM's ops take; the launchers copy it to device memory and back.
class Tensor {
 public:
  Tensor() = default;

  /// A zero-filled tensor of the given dtype and shape.
  Tensor(DType dtype, std::vector<std::int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
    for (const std::int64_t extent : shape_) {
      if (extent < 0) throw std::invalid_argument("Tensor: negative extent in " + shape_string());
    }
    bytes_.assign(static_cast<std::size_t>(numel()) * dtype_size(dtype_), 0);
  }

  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  int dim() const { return static_cast<int>(shape_.size()); }
  std::int64_t size(int d) const { return shape_.at(static_cast<std::size_t>(d)); }
  std::int64_t numel() const {
    return std::accumulate(shape_.begin(), shape_.end(), std::int64_t{1},
                           std::multiplies<std::int64_t>());
  }
  std::size_t nbytes() const { return bytes_.size(); }

  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }

  /// The bytes as elements of T (the caller picks the T that matches dtype()).
  template <class T>
  T* data_as() { return reinterpret_cast<T*>(bytes_.data()); }
  template <class T>
  const T* data_as() const { return reinterpret_cast<const T*>(bytes_.data()); }

  /// Sets every byte to `byte` (0xFF makes every float32/float16/bfloat16 element a NaN).
  void fill_bytes(unsigned char byte) { std::memset(bytes_.data(), byte, bytes_.size()); }

  /// "[2, 8, 128]", the notation the error messages use.
  std::string shape_string() const { return format_shape(shape_); }

  static std::string format_shape(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
      s += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return s + "]";
  }

 private:
  DType dtype_ = DType::kFloat32;
  std::vector<std::int64_t> shape_;
  std::vector<unsigned char> bytes_;  // operator new: aligned for 16-byte vector copies
};
/// [tensor]

/// [api]
/// Scatters this step's keys and values into the paged caches: token i goes to slot
/// slot_mapping[i] (block slot / block_size, row slot % block_size); a negative slot marks a
/// padding token and writes nothing.
/// key, value:  [num_tokens, num_kv_heads, head_size]
/// key_cache:   [num_blocks, num_kv_heads, head_size / x, block_size, x]   (x = 16 / elem bytes)
/// value_cache: [num_blocks, num_kv_heads, head_size, block_size]
/// slot_mapping: [num_tokens] int64
void reshape_and_cache(Backend backend, const Tensor& key, const Tensor& value,
                       Tensor& key_cache, Tensor& value_cache, const Tensor& slot_mapping);

/// One decode step of attention over the paged caches: for every sequence s and query head h,
/// out[s, h] = softmax(scale * K q[s, h]) V over the first seq_lens[s] tokens of s, read
/// through block_tables[s]; query head h reads kv head h / (num_heads / num_kv_heads).
/// out, query:   [num_seqs, num_heads, head_size]
/// key_cache:    [num_blocks, num_kv_heads, head_size / x, block_size, x]
/// value_cache:  [num_blocks, num_kv_heads, head_size, block_size]
/// block_tables: [num_seqs, max_num_blocks_per_seq] int32;  seq_lens: [num_seqs] int32
/// max_seq_len bounds every seq_len and sizes the kernel's shared memory.
void paged_attention_v1(Backend backend, Tensor& out, const Tensor& query,
                        const Tensor& key_cache, const Tensor& value_cache, int num_kv_heads,
                        float scale, const Tensor& block_tables, const Tensor& seq_lens,
                        int block_size, int max_seq_len);

/// Returns the bytes of dynamic shared memory the v1 kernel needs: every logit of the longest
/// sequence (padded to whole blocks) as float32, or the cross-warp output buffer if larger.
constexpr std::size_t v1_shared_mem_bytes(int head_size, int block_size, int max_seq_len) {
  const std::size_t padded = static_cast<std::size_t>((max_seq_len + block_size - 1) / block_size) *
                             static_cast<std::size_t>(block_size);
  const std::size_t logits = padded * sizeof(float);
  const std::size_t outputs =
      static_cast<std::size_t>(kNumThreads / kWarpSize / 2) * static_cast<std::size_t>(head_size) *
      sizeof(float);
  return std::max(logits, outputs);
}

/// Returns the longest context the v1 kernel accepts on `backend` for this configuration: the
/// most logits that fit in the dynamic shared memory the device lets one block opt into.
int v1_max_seq_len(Backend backend, DType dtype, int head_size, int block_size);

/// True when this build has the CUDA backend and a CUDA device is present.
bool cuda_device_present();
/// [api]

namespace detail {
/// One backend's half of V1DeviceSession (below); launchers.cuh implements it per backend.
class V1SessionBackend {
 public:
  virtual ~V1SessionBackend() = default;
  virtual void launch() = 0;
  virtual void download(Tensor& out) const = 0;
  virtual double timed_launch() = 0;
  virtual double timed_cache_copy() = 0;
};
}  // namespace detail

// The two builds of the kernels' .cpp, one per backend namespace (see simt/cuda.hpp). The
// functions above pick one of them.
namespace emu {
void reshape_and_cache(const Tensor& key, const Tensor& value, Tensor& key_cache,
                       Tensor& value_cache, const Tensor& slot_mapping);
void paged_attention_v1(Tensor& out, const Tensor& query, const Tensor& key_cache,
                        const Tensor& value_cache, int num_kv_heads, float scale,
                        const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                        int max_seq_len);
int v1_max_seq_len(DType dtype, int head_size, int block_size);
int device_count();
std::unique_ptr<detail::V1SessionBackend> make_v1_session(
    const Tensor& query, const Tensor& key_cache, const Tensor& value_cache, int num_kv_heads,
    float scale, const Tensor& block_tables, const Tensor& seq_lens, int block_size,
    int max_seq_len);
}  // namespace emu

#if PA_HAVE_CUDA_BACKEND
namespace cuda {
void reshape_and_cache(const Tensor& key, const Tensor& value, Tensor& key_cache,
                       Tensor& value_cache, const Tensor& slot_mapping);
void paged_attention_v1(Tensor& out, const Tensor& query, const Tensor& key_cache,
                        const Tensor& value_cache, int num_kv_heads, float scale,
                        const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                        int max_seq_len);
int v1_max_seq_len(DType dtype, int head_size, int block_size);
int device_count();
std::unique_ptr<detail::V1SessionBackend> make_v1_session(
    const Tensor& query, const Tensor& key_cache, const Tensor& value_cache, int num_kv_heads,
    float scale, const Tensor& block_tables, const Tensor& seq_lens, int block_size,
    int max_seq_len);
}  // namespace cuda
#endif

namespace detail {
/// Throws when the CUDA backend is asked for but was not compiled in.
[[noreturn]] inline void no_cuda_backend(const char* function) {
  throw std::runtime_error(std::string(function) +
                           ": this build has no CUDA backend (CMake found no CUDA compiler); "
                           "use Backend::kEmulator");
}
}  // namespace detail

inline bool cuda_device_present() {
#if PA_HAVE_CUDA_BACKEND
  return cuda::device_count() > 0;
#else
  return false;
#endif
}

inline void reshape_and_cache(Backend backend, const Tensor& key, const Tensor& value,
                              Tensor& key_cache, Tensor& value_cache,
                              const Tensor& slot_mapping) {
  if (backend == Backend::kEmulator) {
    return emu::reshape_and_cache(key, value, key_cache, value_cache, slot_mapping);
  }
#if PA_HAVE_CUDA_BACKEND
  return cuda::reshape_and_cache(key, value, key_cache, value_cache, slot_mapping);
#else
  detail::no_cuda_backend("reshape_and_cache");
#endif
}

inline void paged_attention_v1(Backend backend, Tensor& out, const Tensor& query,
                               const Tensor& key_cache, const Tensor& value_cache,
                               int num_kv_heads, float scale, const Tensor& block_tables,
                               const Tensor& seq_lens, int block_size, int max_seq_len) {
  if (backend == Backend::kEmulator) {
    return emu::paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, scale,
                                   block_tables, seq_lens, block_size, max_seq_len);
  }
#if PA_HAVE_CUDA_BACKEND
  return cuda::paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, scale,
                                  block_tables, seq_lens, block_size, max_seq_len);
#else
  detail::no_cuda_backend("paged_attention_v1");
#endif
}

inline int v1_max_seq_len(Backend backend, DType dtype, int head_size, int block_size) {
  if (backend == Backend::kEmulator) return emu::v1_max_seq_len(dtype, head_size, block_size);
#if PA_HAVE_CUDA_BACKEND
  return cuda::v1_max_seq_len(dtype, head_size, block_size);
#else
  detail::no_cuda_backend("v1_max_seq_len");
#endif
}

/// [device_session]
/// paged_attention_v1 without the host copies around it, for timing the kernel alone
/// (bench_lab.cpp): the operands are copied to one backend's device memory once, and the kernel
/// runs on them as often as asked, through the same launch paged_attention_v1 makes.
class V1DeviceSession {
 public:
  /// Checks the arguments as paged_attention_v1 does and copies them to `backend`'s device
  /// memory; the session owns the output, shaped like query and NaN until the first launch.
  V1DeviceSession(Backend backend, const Tensor& query, const Tensor& key_cache,
                  const Tensor& value_cache, int num_kv_heads, float scale,
                  const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                  int max_seq_len);

  /// Runs the kernel once on the device copies; throws what paged_attention_v1 would.
  void launch() { backend_->launch(); }

  /// Copies the output to `out`: [num_seqs, num_heads, head_size], query's dtype.
  void download(Tensor& out) const { backend_->download(out); }

  /// Runs the kernel once and returns the seconds it took: on CUDA measured with events on
  /// the device's clock, after flushing the L2 cache outside the timed span (so every byte of
  /// the caches comes from device memory); on the emulator measured with the host's clock.
  double timed_launch() { return backend_->timed_launch(); }

  /// Copies the key and value caches device to device once, flushed and timed like
  /// timed_launch, and returns the seconds: the bandwidth the kernel's reads are measured by.
  double timed_cache_copy() { return backend_->timed_cache_copy(); }

 private:
  std::unique_ptr<detail::V1SessionBackend> backend_;
};
/// [device_session]

inline V1DeviceSession::V1DeviceSession(Backend backend, const Tensor& query,
                                        const Tensor& key_cache, const Tensor& value_cache,
                                        int num_kv_heads, float scale,
                                        const Tensor& block_tables, const Tensor& seq_lens,
                                        int block_size, int max_seq_len) {
  if (backend == Backend::kEmulator) {
    backend_ = emu::make_v1_session(query, key_cache, value_cache, num_kv_heads, scale,
                                    block_tables, seq_lens, block_size, max_seq_len);
    return;
  }
#if PA_HAVE_CUDA_BACKEND
  backend_ = cuda::make_v1_session(query, key_cache, value_cache, num_kv_heads, scale,
                                   block_tables, seq_lens, block_size, max_seq_len);
#else
  detail::no_cuda_backend("V1DeviceSession");
#endif
}

// ---------------------------------------------------------------------------------------------
// Given code: the argument checks. The starter and the solution both call these first, so the
// tests of bad input (ctest label `checks`) pass before you write anything. Each throws
// std::invalid_argument naming the argument, the expected and the actual. They run on the host
// copies, before anything reaches a device: a kernel that reads past a block table cannot say
// so, it just reads someone else's memory.
// ---------------------------------------------------------------------------------------------
namespace checks {

/// "{64, 80, 96}" for the messages that list the supported sizes.
template <std::size_t N>
std::string list(const std::array<int, N>& values) {
  std::string s = "{";
  for (std::size_t i = 0; i < N; ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "}";
}

template <std::size_t N>
bool contains(const std::array<int, N>& values, std::int64_t v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

/// Requires `t` to have exactly `shape`; `how` says where the expected extents come from.
inline void shape_is(const ArgCheck& check, const std::string& name, const Tensor& t,
                     const std::vector<std::int64_t>& shape, const std::string& how) {
  check.that(t.shape() == shape, name + ".shape",
             Tensor::format_shape(shape) + " (" + how + ")", t.shape_string());
}

inline void dtype_is(const ArgCheck& check, const std::string& name, const Tensor& t,
                     DType dtype, const std::string& why) {
  check.that(t.dtype() == dtype, name + ".dtype", dtype_name(dtype) + " (" + why + ")",
             dtype_name(t.dtype()));
}

inline void rank_is(const ArgCheck& check, const std::string& name, const Tensor& t, int rank,
                    const std::string& layout) {
  check.that(t.dim() == rank, name + ".dim()", std::to_string(rank) + " (" + layout + ")",
             std::to_string(t.dim()) + " " + t.shape_string());
}

/// Checks the attention kernel's three template choices: the element type, the head size and
/// the block size must be ones it is instantiated for.
inline void kernel_config(const ArgCheck& check, DType dtype, std::int64_t head_size,
                          std::int64_t block_size) {
  check.that(is_floating(dtype), "dtype", "float32, float16 or bfloat16", dtype_name(dtype));
  check.that(contains(kSupportedHeadSizes, head_size), "head_size (query.shape[2])",
             "one of " + list(kSupportedHeadSizes), std::to_string(head_size));
  check.that(contains(kSupportedBlockSizes, block_size), "block_size",
             "one of " + list(kSupportedBlockSizes), std::to_string(block_size));
}

/// Checks the shapes and dtypes of reshape_and_cache's tensors and that every slot names a row
/// of the cache (a negative slot is padding and is allowed).
inline void reshape_and_cache(const Tensor& key, const Tensor& value, const Tensor& key_cache,
                              const Tensor& value_cache, const Tensor& slot_mapping) {
  const ArgCheck check("reshape_and_cache");
  rank_is(check, "key", key, 3, "[num_tokens, num_kv_heads, head_size]");
  check.that(is_floating(key.dtype()), "key.dtype", "float32, float16 or bfloat16",
             dtype_name(key.dtype()));
  const std::int64_t num_tokens = key.size(0), num_kv_heads = key.size(1);
  const std::int64_t head_size = key.size(2);
  dtype_is(check, "value", value, key.dtype(), "the dtype of key");
  shape_is(check, "value", value, key.shape(), "the shape of key");

  const int x = x_of(key.dtype());
  check.multiple_of("head_size (key.shape[2])", head_size, x,
                    "x = 16 bytes / " + std::to_string(dtype_size(key.dtype())) + " bytes");
  rank_is(check, "key_cache", key_cache, 5,
          "[num_blocks, num_kv_heads, head_size / x, block_size, x]");
  dtype_is(check, "key_cache", key_cache, key.dtype(), "the dtype of key");
  const std::int64_t num_blocks = key_cache.size(0), block_size = key_cache.size(3);
  shape_is(check, "key_cache", key_cache, {num_blocks, num_kv_heads, head_size / x, block_size, x},
           "[num_blocks, num_kv_heads, head_size / x, block_size, x] with x = " +
               std::to_string(x));
  dtype_is(check, "value_cache", value_cache, key.dtype(), "the dtype of key");
  shape_is(check, "value_cache", value_cache, {num_blocks, num_kv_heads, head_size, block_size},
           "[num_blocks, num_kv_heads, head_size, block_size]");

  dtype_is(check, "slot_mapping", slot_mapping, DType::kInt64, "vLLM's slot_mapping is int64");
  shape_is(check, "slot_mapping", slot_mapping, {num_tokens}, "[num_tokens]");
  const std::int64_t num_slots = num_blocks * block_size;
  const std::int64_t* slots = slot_mapping.data_as<std::int64_t>();
  for (std::int64_t i = 0; i < num_tokens; ++i) {
    check.that(slots[i] < num_slots, "slot_mapping[" + std::to_string(i) + "]",
               "< " + std::to_string(num_slots) + " (num_blocks * block_size), or < 0 for padding",
               std::to_string(slots[i]));
  }
}

/// Checks paged_attention_v1's tensors, sizes and lengths: supported head and block sizes, the
/// cache layouts, int32 block tables, 1 <= seq_len <= min(max_seq_len, the table's capacity),
/// and that every block a sequence reads is a block of the cache.
inline void paged_attention_v1(const Tensor& out, const Tensor& query, const Tensor& key_cache,
                               const Tensor& value_cache, int num_kv_heads,
                               const Tensor& block_tables, const Tensor& seq_lens,
                               int block_size, int max_seq_len) {
  const ArgCheck check("paged_attention_v1");
  rank_is(check, "query", query, 3, "[num_seqs, num_heads, head_size]");
  check.that(is_floating(query.dtype()), "query.dtype", "float32, float16 or bfloat16",
             dtype_name(query.dtype()));
  const std::int64_t num_seqs = query.size(0), num_heads = query.size(1);
  const std::int64_t head_size = query.size(2);
  kernel_config(check, query.dtype(), head_size, block_size);
  dtype_is(check, "out", out, query.dtype(), "the dtype of query");
  shape_is(check, "out", out, query.shape(), "the shape of query");

  check.positive("num_kv_heads", num_kv_heads);
  check.multiple_of("num_heads (query.shape[1])", num_heads, num_kv_heads, "num_kv_heads");

  const int x = x_of(query.dtype());
  rank_is(check, "key_cache", key_cache, 5,
          "[num_blocks, num_kv_heads, head_size / x, block_size, x]");
  dtype_is(check, "key_cache", key_cache, query.dtype(), "the dtype of query");
  const std::int64_t num_blocks = key_cache.size(0);
  shape_is(check, "key_cache", key_cache, {num_blocks, num_kv_heads, head_size / x, block_size, x},
           "[num_blocks, num_kv_heads, head_size / x, block_size, x] with x = " +
               std::to_string(x));
  dtype_is(check, "value_cache", value_cache, query.dtype(), "the dtype of query");
  shape_is(check, "value_cache", value_cache, {num_blocks, num_kv_heads, head_size, block_size},
           "[num_blocks, num_kv_heads, head_size, block_size]");

  dtype_is(check, "block_tables", block_tables, DType::kInt32,
           "int32, as vLLM's kernels and flash-attn require");
  rank_is(check, "block_tables", block_tables, 2, "[num_seqs, max_num_blocks_per_seq]");
  check.equal("block_tables.shape[0]", block_tables.size(0), num_seqs, "num_seqs");
  dtype_is(check, "seq_lens", seq_lens, DType::kInt32, "int32, as in vLLM");
  shape_is(check, "seq_lens", seq_lens, {num_seqs}, "[num_seqs]");
  check.positive("max_seq_len", max_seq_len);

  const std::int64_t max_blocks = block_tables.size(1);
  const std::int32_t* lens = seq_lens.data_as<std::int32_t>();
  const std::int32_t* table = block_tables.data_as<std::int32_t>();
  for (std::int64_t s = 0; s < num_seqs; ++s) {
    const std::string name = "seq_lens[" + std::to_string(s) + "]";
    check.positive(name, lens[s]);
    check.at_most(name, lens[s], max_blocks * block_size,
                  "block_tables.shape[1] * block_size: the blocks its table row holds");
    check.at_most(name, lens[s], max_seq_len, "max_seq_len");
    const std::int64_t blocks_read = (lens[s] + block_size - 1) / block_size;
    for (std::int64_t b = 0; b < blocks_read; ++b) {
      const std::int32_t id = table[s * max_blocks + b];
      check.that(id >= 0 && id < num_blocks,
                 "block_tables[" + std::to_string(s) + ", " + std::to_string(b) + "]",
                 "a block id in [0, " + std::to_string(num_blocks) + ") (key_cache.shape[0])",
                 std::to_string(id));
    }
  }
}

/// The message for a context longer than the v1 kernel can hold in shared memory; names the
/// limit and the way out (split the KV sequence: the v2 kernel of vLLM, flash-decoding).
inline void context_fits(int max_seq_len, int limit_tokens, std::size_t limit_bytes,
                         const std::string& backend) {
  const ArgCheck check("paged_attention_v1");
  check.that(max_seq_len <= limit_tokens, "max_seq_len",
             "<= " + std::to_string(limit_tokens) +
                 " tokens: v1 keeps every logit in shared memory and this block may use at most " +
                 std::to_string(limit_bytes) + " bytes on the " + backend +
                 " backend; for longer contexts split the KV sequence across thread blocks "
                 "(split-KV, vLLM's paged_attention_v2, lab 03)",
             std::to_string(max_seq_len));
}

}  // namespace checks

}  // namespace pa::cuda_v1

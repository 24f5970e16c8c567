// The emulator's kernel-side and host-side API: __syncthreads and the warp collectives (as
// macros that record the call site), dynamic shared memory, simt::launch and DeviceBuffer.
//
// Included through simt/cuda.hpp when nvcc is not the compiler.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "simt/device_buffer.hpp"
#include "simt/emu/dialect.hpp"
#include "simt/errors_and_settings.hpp"

namespace simt {
inline namespace emu {
namespace detail {

/// A call site, so that every error can say which line a thread waits at.
struct SourceSite {
  const char* file;
  int line;
};

/// The warp-wide operations, all of which make the lanes of `mask` meet (see warp.cpp); the
/// wmma ones always take the whole warp (see emu/wmma.hpp).
enum class WarpOp : std::uint8_t {
  Idx,
  Up,
  Down,
  Xor,
  Sync,
  Ballot,
  Any,
  All,
  WmmaLoad,
  WmmaStore,
  WmmaMma
};

/// Blocks the calling kernel thread until every thread of its block has reached this same
/// call site; throws KernelError when that cannot happen.
void syncthreads(SourceSite site);

/// Makes the calling lane meet the other lanes of `mask` in its warp and returns its share of
/// `op`'s result: for the shuffles the `value` of the lane it reads, for the votes the vote.
std::uint64_t warp_collective(WarpOp op, unsigned mask, std::uint64_t value, int operand, int width,
                              SourceSite site);

/// Returns the running block's dynamic shared memory (16-byte aligned, as many bytes as the
/// launch asked for); throws KernelError outside a kernel.
unsigned char* dynamic_shared(SourceSite site);

/// Exchanges `var` between the lanes of `mask` with shuffle `op`, for any trivially copyable
/// type of at most 8 bytes.
template <class T>
T shuffle(WarpOp op, SourceSite site, unsigned mask, T var, int operand, int width = warpSize) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "warp shuffles move trivially copyable values of at most 8 bytes");
  auto bytes = std::bit_cast<std::array<unsigned char, sizeof(T)>>(var);
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) bits |= std::uint64_t{bytes[i]} << (8 * i);
  bits = warp_collective(op, mask, bits, operand, width, site);
  for (std::size_t i = 0; i < sizeof(T); ++i)
    bytes[i] = static_cast<unsigned char>(bits >> (8 * i));
  return std::bit_cast<T>(bytes);
}

/// Waits until every lane of `mask` has reached a __syncwarp.
inline void syncwarp(SourceSite site, unsigned mask = 0xffffffffu) {
  warp_collective(WarpOp::Sync, mask, 0, 0, warpSize, site);
}

/// Returns the vote `op` (Ballot, Any or All) of `predicate` over the lanes of `mask`.
inline unsigned vote(WarpOp op, SourceSite site, unsigned mask, int predicate) {
  return static_cast<unsigned>(warp_collective(op, mask, predicate != 0, 0, warpSize, site));
}

/// A kernel bound to its arguments, type-erased so that the scheduler is ordinary compiled code.
struct KernelBody {
  void* frame;                  // the launch's copy of the kernel pointer and its arguments
  void (*invoke)(void* frame);  // runs the kernel once, as the current CUDA thread
};

/// Runs every block of `grid`, one at a time, each CUDA thread of a block a fiber.
void run_grid(const KernelBody& body, const void* kernel, dim3 grid, dim3 block,
              std::size_t dynamic_shared_bytes);

/// Returns the dynamic shared memory limit the kernel has opted in to (or the default).
std::size_t dynamic_shared_limit(const void* kernel);

/// Records that launches of `kernel` may use up to `bytes` of dynamic shared memory.
void set_dynamic_shared_limit(const void* kernel, std::size_t bytes);

/// The bytes of `kernel`'s static __shared__ arrays, as declared (0 if never declared).
std::size_t static_shared_bytes(const void* kernel);

/// Records the bytes of `kernel`'s static __shared__ arrays (declare_static_shared_bytes).
void set_static_shared_bytes(const void* kernel, std::size_t bytes);

/// Returns `bytes` of device memory of exactly that size (so that AddressSanitizer reports the
/// first byte past it); nullptr for 0 bytes.
void* device_allocate(std::size_t bytes);

/// Releases memory from device_allocate (nullptr is fine).
void device_free(void* p) noexcept;

/// Names the device allocation that starts at p in the memory checker's messages.
void name_device_memory(const void* p, const char* name);

/// The emulator's device memory for BasicDeviceBuffer: host memory, copied with memcpy.
struct HostMemory {
  static void* allocate(std::size_t bytes) { return device_allocate(bytes); }
  static void release(void* p) noexcept { device_free(p); }
  static void to_device(void* dst, const void* src, std::size_t bytes) {
    std::memcpy(dst, src, bytes);
  }
  static void to_host(void* dst, const void* src, std::size_t bytes) {
    std::memcpy(dst, src, bytes);
  }
  static void fill(void* p, unsigned char byte, std::size_t bytes) { std::memset(p, byte, bytes); }
  static void name(const void* p, const char* name) { name_device_memory(p, name); }
};

template <class Fn>
const void* kernel_id(Fn* kernel) {
  return reinterpret_cast<const void*>(kernel);
}

}  // namespace detail

/// The largest dynamic shared memory a kernel may opt in to on the emulator: an H100's 227 KiB,
/// the GPU whose occupancy it stands in for (simt/occupancy.hpp; a GPU reports its own figure:
/// 163 KiB on an A100).
inline constexpr std::size_t kMaxDynamicSharedOptIn = 227 * 1024;

/// Runs `kernel` over `grid` blocks of `block` threads with `dynamic_shared_bytes` of dynamic
/// shared memory, giving every thread its own copy of `args` (converted to the kernel's
/// parameter types once, at launch, as CUDA does); rethrows what a kernel thread throws and
/// throws KernelError for a bad configuration or a detected kernel bug.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
            Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "simt::launch: pass exactly as many arguments as the kernel has parameters");
  static_assert((!std::is_reference_v<Params> && ...),
                "simt::launch: kernel parameters must be values (CUDA copies them at launch)");
  struct Frame {
    void (*kernel)(Params...);
    std::tuple<Params...> params;
  };
  Frame frame{kernel, std::tuple<Params...>(std::forward<Args>(args)...)};
  // std::apply on the lvalue tuple copies each argument again into the thread's parameters, so
  // a thread that changes its parameter changes nobody else's.
  const detail::KernelBody body{&frame, [](void* f) {
                                  auto& fr = *static_cast<Frame*>(f);
                                  std::apply(fr.kernel, fr.params);
                                }};
  detail::run_grid(body, detail::kernel_id(kernel), grid, block, dynamic_shared_bytes);
}

/// launch under the name of the benchmarks' queued path: the emulator has no queue, so the
/// kernel runs here and now (and throws here) either way.
template <class... Params, class... Args>
void enqueue(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
             Args&&... args) {
  launch(kernel, grid, block, dynamic_shared_bytes, std::forward<Args>(args)...);
}

/// Nothing is ever queued on the emulator: every kernel has finished when enqueue returns.
inline void synchronize() {}

/// Returns the most dynamic shared memory `kernel` can opt in to: kMaxDynamicSharedOptIn less
/// its static __shared__ arrays, as declared by declare_static_shared_bytes.
template <class... Params>
std::size_t max_dynamic_shared_bytes(void (*kernel)(Params...)) {
  return kMaxDynamicSharedOptIn - detail::static_shared_bytes(detail::kernel_id(kernel));
}

/// Tells the emulator how many bytes `kernel`'s static __shared__ arrays take. A GPU counts them
/// against the block's shared memory, so they come off what the kernel may opt in to; here each
/// is a thread_local variable whose size the emulator cannot see. Without the declaration the
/// emulator would grant the dynamic part the whole 227 KiB and accept launches a GPU refuses.
/// Throws KernelError above 48 KiB, a GPU's cap on static shared memory.
template <class... Params>
void declare_static_shared_bytes(void (*kernel)(Params...), std::size_t bytes) {
  detail::set_static_shared_bytes(detail::kernel_id(kernel), bytes);
}

/// Lets launches of `kernel` use up to `bytes` of dynamic shared memory (above the default
/// 48 KiB, as cudaFuncSetAttribute does); throws KernelError above max_dynamic_shared_bytes.
template <class... Params>
void set_max_dynamic_shared_bytes(void (*kernel)(Params...), std::size_t bytes) {
  detail::set_dynamic_shared_limit(detail::kernel_id(kernel), bytes);
}

/// Returns the number of CUDA devices: always 0 under the emulator.
inline int cuda_device_count() {
  return 0;
}

/// Emulated device memory: exact-size host allocations, so AddressSanitizer reports the first
/// byte past a buffer.
template <class T>
using DeviceBuffer = BasicDeviceBuffer<T, detail::HostMemory>;

}  // namespace emu
}  // namespace simt

// ---- The CUDA spellings --------------------------------------------------------------------
// Macros, so that each call records its file and line for the error messages.
#define SIMT_SITE_ (::simt::detail::SourceSite{__FILE__, __LINE__})
#define __syncthreads() ::simt::detail::syncthreads(SIMT_SITE_)
#define __syncwarp(...) ::simt::detail::syncwarp(SIMT_SITE_ __VA_OPT__(, ) __VA_ARGS__)
#define __shfl_sync(...) \
  ::simt::detail::shuffle(::simt::detail::WarpOp::Idx, SIMT_SITE_, __VA_ARGS__)
#define __shfl_up_sync(...) \
  ::simt::detail::shuffle(::simt::detail::WarpOp::Up, SIMT_SITE_, __VA_ARGS__)
#define __shfl_down_sync(...) \
  ::simt::detail::shuffle(::simt::detail::WarpOp::Down, SIMT_SITE_, __VA_ARGS__)
#define __shfl_xor_sync(...) \
  ::simt::detail::shuffle(::simt::detail::WarpOp::Xor, SIMT_SITE_, __VA_ARGS__)
#define __ballot_sync(mask, predicate) \
  ::simt::detail::vote(::simt::detail::WarpOp::Ballot, SIMT_SITE_, (mask), (predicate))
#define __any_sync(mask, predicate) \
  (::simt::detail::vote(::simt::detail::WarpOp::Any, SIMT_SITE_, (mask), (predicate)) != 0)
#define __all_sync(mask, predicate) \
  (::simt::detail::vote(::simt::detail::WarpOp::All, SIMT_SITE_, (mask), (predicate)) != 0)

/// Declares `type* name`, the block's dynamic shared memory, sized by the launch.
#define SIMT_DYNAMIC_SHARED(type, name) \
  type* const name = reinterpret_cast<type*>(::simt::detail::dynamic_shared(SIMT_SITE_))

// CUDA's asynchronous copies on the emulator: the primitives of <cuda_pipeline.h>, which nvcc
// lowers to cp.async on sm_80 and later.
//
//   __pipeline_memcpy_async(dst, src, size, zfill)  copies size - zfill bytes (size 4, 8 or 16,
//                                                   both pointers aligned to it) and zeroes the
//                                                   last zfill bytes of dst, asynchronously
//   __pipeline_commit()                             closes the thread's current group of copies
//   __pipeline_wait_prior(n)                        waits until at most n of the thread's
//                                                   committed groups are still in flight
//
// As on a GPU, a copy's bytes land in dst only when its own thread's wait covers its group: a
// read of dst before that sees the bytes that were there before (and the memory checker reports
// it), and other threads see them only after the wait and a barrier.
//
// Included through simt/cuda.hpp when nvcc is not the compiler.
#pragma once

#include <cstddef>

#include "simt/emu/runtime.hpp"

namespace simt {
inline namespace emu {
namespace detail {

/// Starts an asynchronous copy of `size - zfill` bytes from `src` to `dst` and a zero fill of
/// the `zfill` bytes after them; throws KernelError for a size other than 4, 8 or 16, a
/// misaligned pointer or zfill > size.
void pipeline_memcpy_async(SourceSite site, void* dst, const void* src, std::size_t size,
                           std::size_t zfill = 0);

/// Closes the calling thread's open group of asynchronous copies.
void pipeline_commit(SourceSite site);

/// Lands every copy of the calling thread's committed groups except the `prior` most recent.
void pipeline_wait_prior(SourceSite site, std::size_t prior);

}  // namespace detail
}  // namespace emu
}  // namespace simt

#define __pipeline_memcpy_async(...) ::simt::detail::pipeline_memcpy_async(SIMT_SITE_, __VA_ARGS__)
#define __pipeline_commit() ::simt::detail::pipeline_commit(SIMT_SITE_)
#define __pipeline_wait_prior(prior) ::simt::detail::pipeline_wait_prior(SIMT_SITE_, (prior))

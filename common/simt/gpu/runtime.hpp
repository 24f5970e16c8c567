// The portable helpers on a real GPU: simt::launch, DeviceBuffer and the shared-memory opt-in,
// each a thin layer over the CUDA runtime that turns an error code into simt::KernelError.
//
// Included through simt/cuda.hpp when nvcc compiles; the CUDA dialect itself is built in.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>  // __pipeline_memcpy_async and friends (cp.async on sm_80+)
#include <cuda_runtime.h>
#include <mma.h>  // nvcuda::wmma, so that kernels written for both backends find it

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "simt/errors_and_settings.hpp"
#include "simt/device_buffer.hpp"

namespace simt {
inline namespace cuda {
namespace detail {

/// Throws KernelError naming `what` and CUDA's description of `status`, unless it is success.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw KernelError(std::string(what) + ": " + cudaGetErrorName(status) + " (" +
                      cudaGetErrorString(status) + ")");
  }
}

/// The GPU's device memory for BasicDeviceBuffer: the CUDA runtime's malloc, memcpy, memset.
struct CudaMemory {
  static void* allocate(std::size_t bytes) {
    void* p = nullptr;
    if (bytes > 0) check(cudaMalloc(&p, bytes), "DeviceBuffer");
    return p;
  }
  static void release(void* p) noexcept {
    if (p != nullptr) (void)cudaFree(p);  // a destructor must not throw
  }
  static void to_device(void* dst, const void* src, std::size_t bytes) {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "DeviceBuffer::upload");
  }
  static void to_host(void* dst, const void* src, std::size_t bytes) {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "DeviceBuffer::download");
  }
  static void fill(void* p, unsigned char byte, std::size_t bytes) {
    check(cudaMemset(p, byte, bytes), "DeviceBuffer::fill_bytes");
  }
  static void name(const void*, const char*) {}  // compute-sanitizer names buffers by address

};

}  // namespace detail

/// Runs `kernel` over `grid` blocks of `block` threads with `dynamic_shared_bytes` of dynamic
/// shared memory and waits for it; throws KernelError if the launch or the kernel fails.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
            Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "simt::launch: pass exactly as many arguments as the kernel has parameters");
  kernel<<<grid, block, dynamic_shared_bytes>>>(std::forward<Args>(args)...);
  detail::check(cudaGetLastError(), "simt::launch");
  detail::check(cudaDeviceSynchronize(), "simt::launch (while the kernel ran)");
}

/// Queues `kernel` on the default stream like launch, without waiting for it: the benchmarks'
/// timed path, where a host round trip per kernel would be timed with it. Throws KernelError
/// for a launch the runtime refuses; a fault while the kernel runs surfaces at the next
/// synchronize() (or the next synchronising call).
template <class... Params, class... Args>
void enqueue(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
             Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "simt::enqueue: pass exactly as many arguments as the kernel has parameters");
  kernel<<<grid, block, dynamic_shared_bytes>>>(std::forward<Args>(args)...);
  detail::check(cudaGetLastError(), "simt::enqueue");
}

/// Waits for every queued kernel; throws KernelError if one of them failed.
inline void synchronize() {
  detail::check(cudaDeviceSynchronize(), "simt::synchronize (while the kernels ran)");
}

/// Returns the most dynamic shared memory `kernel` can opt in to on the current device: the
/// device's per-block opt-in limit less the kernel's own static __shared__ memory, which the
/// limit also covers.
template <class... Params>
std::size_t max_dynamic_shared_bytes(void (*kernel)(Params...)) {
  int device = 0;
  int bytes = 0;
  cudaFuncAttributes attributes{};
  detail::check(cudaGetDevice(&device), "simt::max_dynamic_shared_bytes");
  detail::check(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                "simt::max_dynamic_shared_bytes");
  detail::check(cudaFuncGetAttributes(&attributes, kernel), "simt::max_dynamic_shared_bytes");
  const std::size_t limit = static_cast<std::size_t>(bytes);
  return limit > attributes.sharedSizeBytes ? limit - attributes.sharedSizeBytes : 0;
}

/// The emulator's declaration of `kernel`'s static __shared__ bytes: nothing to do on a GPU,
/// where the runtime knows them from the compiled kernel (max_dynamic_shared_bytes reads them).
template <class... Params>
void declare_static_shared_bytes(void (*kernel)(Params...), std::size_t bytes) {
  (void)kernel;
  (void)bytes;
}

/// Lets launches of `kernel` use up to `bytes` of dynamic shared memory (above the default
/// 48 KiB); throws KernelError if the device refuses.
template <class... Params>
void set_max_dynamic_shared_bytes(void (*kernel)(Params...), std::size_t bytes) {
  detail::check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(bytes)),
                "simt::set_max_dynamic_shared_bytes");
}

/// Returns the number of CUDA devices, 0 when there is no driver or no device.
inline int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return count;
}

/// Device memory from cudaMalloc.
template <class T>
using DeviceBuffer = BasicDeviceBuffer<T, detail::CudaMemory>;

}  // namespace cuda
}  // namespace simt

/// Declares `type* name`, the block's dynamic shared memory, sized by the launch. One byte
/// array per name, 16-byte aligned, all of them aliasing the same memory as CUDA defines.
#define SIMT_DYNAMIC_SHARED(type, name)                              \
  extern __shared__ __align__(16) unsigned char name##_simt_bytes[]; \
  type* const name = reinterpret_cast<type*>(name##_simt_bytes)

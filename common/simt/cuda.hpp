// The one header CUDA kernel source includes, so that the same source builds for a GPU (nvcc)
// and for the CPU emulator (g++ or clang++).
//
// Under nvcc it pulls in the real CUDA headers and adds only the portable helpers; elsewhere it
// provides the CUDA dialect on the host. Either way the same names exist:
//   simt::launch(kernel, grid, block, dynamic_shared_bytes, args...)   instead of <<<...>>>
//   SIMT_DYNAMIC_SHARED(type, name);                                   instead of extern __shared__
//   simt::DeviceBuffer<T>, simt::KernelError, simt::cuda_device_count(),
//   simt::max_dynamic_shared_bytes(kernel), simt::set_max_dynamic_shared_bytes(kernel, bytes),
//   simt::declare_static_shared_bytes(kernel, bytes) (the emulator cannot see __shared__ sizes),
//   nvcuda::wmma (CUDA's <mma.h> under nvcc, the emulator's subset in emu/wmma.hpp), and the
//   asynchronous copies __pipeline_memcpy_async / __pipeline_commit / __pipeline_wait_prior
//   (CUDA's <cuda_pipeline.h> under nvcc, emu/pipeline.hpp here).
// SIMT_BACKEND names the backend's inline namespace (cuda or emu); put backend-specific code in
// `namespace your::ns::SIMT_BACKEND` so both builds of one file can share an executable.
#pragma once

#if defined(__CUDACC__)

#define SIMT_BACKEND cuda
#define SIMT_BACKEND_NAME "cuda"
#include "simt/gpu/runtime.hpp"

#else

#define SIMT_BACKEND emu
#define SIMT_BACKEND_NAME "emulator"
#include "simt/emu/dialect.hpp"
#include "simt/emu/fp16.hpp"
#include "simt/emu/runtime.hpp"
#include "simt/emu/wmma.hpp"
#include "simt/emu/pipeline.hpp"

#endif

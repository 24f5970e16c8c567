// Kernels and their host-side drivers written once for both backends: test_kernels.cpp runs
// them on the emulator, cuda_probe.cu compiles them with nvcc. They use only what a real CUDA
// build offers, through simt/cuda.hpp.
#pragma once

#include <cstddef>
#include <vector>

#include "simt/cuda.hpp"

namespace simt_tests::SIMT_BACKEND {

/// [axpy]
/// y[i] = a * x[i] + y[i] for every i below n: one thread per element. The grid is rounded up
/// to whole blocks, so the last block may hold threads past n; the guard sends them home.
__global__ void axpy_kernel(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);  // the global index
  if (i < n) y[i] = a * x[i] + y[i];
}
/// [axpy]

/// [tree_reduce]
/// out[blockIdx.x] = sum of in[blockIdx.x * kThreads + t] over the block's kThreads threads,
/// by halving a shared-memory array: each round needs the barrier, or a thread adds a partner
/// value that has not been written yet.
template <int kThreads>
__global__ void tree_reduce_kernel(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float partial[kThreads];  // [kThreads]
  const int t = static_cast<int>(threadIdx.x);
  partial[t] = in[blockIdx.x * kThreads + t];
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}
/// [tree_reduce]

/// [shuffle_reduce]
/// The same sums with warp shuffles: a butterfly inside each warp, the warp totals through
/// shared memory, then one more butterfly in the first warp (vLLM's block_sum pattern).
template <int kThreads>
__global__ void shuffle_reduce_kernel(const float* __restrict__ in, float* __restrict__ out) {
  constexpr int kWarps = kThreads / 32;
  __shared__ float warp_sums[kWarps];  // [kWarps]
  const int t = static_cast<int>(threadIdx.x);
  const int lane = t % 32;
  const int warp = t / 32;
  float v = in[blockIdx.x * kThreads + t];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? warp_sums[lane] : 0.0f;
    for (int offset = kWarps / 2; offset > 0; offset /= 2)
      v += __shfl_xor_sync(0xffffffffu, v, offset);
    v = __shfl_sync(0xffffffffu, v, 0);
    if (lane == 0) out[blockIdx.x] = v;
  }
}
/// [shuffle_reduce]

/// [dynamic_shared]
/// Reverses each block's n values through dynamic shared memory sized by the launch.
__global__ void reverse_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  SIMT_DYNAMIC_SHARED(float, buffer);  // [n], n * sizeof(float) bytes from the launch
  const int t = static_cast<int>(threadIdx.x);
  const float* block_in = in + blockIdx.x * n;
  for (int i = t; i < n; i += static_cast<int>(blockDim.x)) buffer[n - 1 - i] = block_in[i];
  __syncthreads();
  for (int i = t; i < n; i += static_cast<int>(blockDim.x)) out[blockIdx.x * n + i] = buffer[i];
}
/// [dynamic_shared]

/// [last_block_sum]
/// out[0] = the sum of all of `in` ([gridDim.x * 32]) in one launch of one-warp blocks:
/// each block writes its partial sum, and the block that counts itself last adds up the
/// partials; out[1] = that block's index. `arrivals` holds 0 before the launch, and again
/// after it.
__global__ void last_block_sum_kernel(const float* __restrict__ in, float* partials,
                                      unsigned* arrivals, float* __restrict__ out) {
  __shared__ bool is_last;
  const unsigned lane = threadIdx.x;  // one warp per block
  float v = in[blockIdx.x * 32 + lane];
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (lane == 0) {
    partials[blockIdx.x] = v;  // partials: [gridDim.x]
    __threadfence();           // the partial is visible to all before it is counted
    is_last = atomicAdd(arrivals, 1u) == gridDim.x - 1;
    if (is_last) {
      atomicExch(arrivals, 0u);  // every block has counted: ready for the next launch
      __threadfence();           // the partials are read only after the count
    }
  }
  __syncthreads();  // every lane sees is_last
  if (!is_last) return;
  const volatile float* done = partials;  // volatile: each read goes to memory
  v = 0.0f;
  for (unsigned b = lane; b < gridDim.x; b += 32) v += done[b];
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (lane == 0) {
    out[0] = v;
    out[1] = static_cast<float>(blockIdx.x);
  }
}
/// [last_block_sum]

/// Rounds each value to half and to bfloat16 on the device and converts them back.
__global__ void round_trip_kernel(const float* __restrict__ in, __half* __restrict__ halves,
                                  __nv_bfloat16* __restrict__ bf16s, float* __restrict__ back,
                                  int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  halves[i] = __float2half(in[i]);
  bf16s[i] = __float2bfloat16(in[i]);
  back[2 * i] = __half2float(halves[i]);
  back[2 * i + 1] = __bfloat162float(bf16s[i]);
}

// ---- Host drivers --------------------------------------------------------------------------

/// [axpy_host]
/// Returns a * x + y, computed on the device with `threads` threads per block.
inline std::vector<float> axpy(float a, const std::vector<float>& x, std::vector<float> y,
                               int threads) {
  const int n = static_cast<int>(x.size());
  simt::DeviceBuffer<float> d_x(x.size());  // device memory: [n] each
  simt::DeviceBuffer<float> d_y(y.size());
  d_x.upload(x.data(), x.size());  // host to device
  d_y.upload(y.data(), y.size());
  const int blocks = (n + threads - 1) / threads;  // rounded up: every element gets a thread
  simt::launch(axpy_kernel, dim3(blocks), dim3(threads), 0, n, a, d_x.data(), d_y.data());
  d_y.download(y.data(), y.size());  // device to host, once the kernel has finished
  return y;
}
/// [axpy_host]

/// Returns the per-block sums of `in` ([blocks * kThreads]) by the tree or the shuffle kernel.
template <int kThreads>
std::vector<float> block_sums(const std::vector<float>& in, bool use_shuffles) {
  const int blocks = static_cast<int>(in.size() / kThreads);
  simt::DeviceBuffer<float> d_in(in.size());  // [blocks * kThreads]
  simt::DeviceBuffer<float> d_out(blocks);    // [blocks]
  d_in.upload(in.data(), in.size());
  if (use_shuffles) {
    simt::launch(shuffle_reduce_kernel<kThreads>, dim3(blocks), dim3(kThreads), 0, d_in.data(),
                 d_out.data());
  } else {
    simt::launch(tree_reduce_kernel<kThreads>, dim3(blocks), dim3(kThreads), 0, d_in.data(),
                 d_out.data());
  }
  std::vector<float> out(blocks);
  d_out.download(out.data(), out.size());
  return out;
}

/// Returns `in` ([blocks * n]) with each block's n values reversed, through n floats of
/// dynamic shared memory, opting in above the default limit when n needs it.
inline std::vector<float> reverse_blocks(const std::vector<float>& in, int n, int threads) {
  const int blocks = static_cast<int>(in.size()) / n;
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(n);
  if (bytes > simt::kDefaultDynamicSharedBytes) {
    if (bytes > simt::max_dynamic_shared_bytes(reverse_kernel))
      throw simt::KernelError("too large");
    simt::set_max_dynamic_shared_bytes(reverse_kernel, bytes);
  }
  simt::DeviceBuffer<float> d_in(in.size());   // [blocks * n]
  simt::DeviceBuffer<float> d_out(in.size());  // [blocks * n]
  d_in.upload(in.data(), in.size());
  simt::launch(reverse_kernel, dim3(blocks), dim3(threads), bytes, d_in.data(), d_out.data(), n);
  std::vector<float> out(in.size());
  d_out.download(out.data(), out.size());
  return out;
}

/// What `launches` launches of last_block_sum_kernel over `in` ([blocks * 32]) leave: each
/// launch's sum and merging block, and the counter after the last launch.
struct LastBlockSums {
  std::vector<float> sums;   // [launches]
  std::vector<int> mergers;  // [launches]
  unsigned arrivals_after = 0;
};

inline LastBlockSums last_block_sums(const std::vector<float>& in, int launches) {
  const int blocks = static_cast<int>(in.size() / 32);
  simt::DeviceBuffer<float> d_in(in.size());     // [blocks * 32]
  simt::DeviceBuffer<float> d_partials(blocks);  // [blocks]
  simt::DeviceBuffer<unsigned> d_arrivals(1);    // zero between launches
  simt::DeviceBuffer<float> d_out(2);            // [sum, merging block]
  d_in.upload(in.data(), in.size());
  const unsigned zero = 0;
  d_arrivals.upload(&zero, 1);
  LastBlockSums r;
  for (int i = 0; i < launches; ++i) {
    simt::launch(last_block_sum_kernel, dim3(blocks), dim3(32), 0, d_in.data(), d_partials.data(),
                 d_arrivals.data(), d_out.data());
    float out[2];
    d_out.download(out, 2);
    r.sums.push_back(out[0]);
    r.mergers.push_back(static_cast<int>(out[1]));
  }
  d_arrivals.download(&r.arrivals_after, 1);
  return r;
}

/// Returns, for each value, its half and bfloat16 bits and both converted back to float
/// ([2 * n]: half then bfloat16).
struct RoundTrip {
  std::vector<__half> halves;
  std::vector<__nv_bfloat16> bf16s;
  std::vector<float> back;
};

inline RoundTrip round_trip(const std::vector<float>& in) {
  const int n = static_cast<int>(in.size());
  simt::DeviceBuffer<float> d_in(in.size());
  simt::DeviceBuffer<__half> d_halves(in.size());
  simt::DeviceBuffer<__nv_bfloat16> d_bf16s(in.size());
  simt::DeviceBuffer<float> d_back(2 * in.size());
  d_in.upload(in.data(), in.size());
  simt::launch(round_trip_kernel, dim3((n + 127) / 128), dim3(128), 0, d_in.data(), d_halves.data(),
               d_bf16s.data(), d_back.data(), n);
  RoundTrip r{std::vector<__half>(in.size()), std::vector<__nv_bfloat16>(in.size()),
              std::vector<float>(2 * in.size())};
  d_halves.download(r.halves.data(), in.size());
  d_bf16s.download(r.bf16s.data(), in.size());
  d_back.download(r.back.data(), 2 * in.size());
  return r;
}

}  // namespace simt_tests::SIMT_BACKEND

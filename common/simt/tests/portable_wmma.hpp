// A tensor-core GEMM through nvcuda::wmma, written once for both backends: test_wmma.cpp runs
// it on the emulator, cuda_probe.cu compiles it with nvcc for sm_80 and sm_90.
#pragma once

#include <type_traits>
#include <vector>

#include "simt/cuda.hpp"

namespace simt_tests::SIMT_BACKEND {

/// How one GEMM lies in memory and what the kernel does besides multiplying.
struct WmmaGemmShape {
  int m = 0, n = 0, k = 0;  // multiples of 16
  unsigned lda = 0;         // elements between rows of A (row_major) or its columns (col_major)
  unsigned ldb = 0;         // the same for B
  unsigned ldc = 0;         // the same for C, laid out as c_layout
  unsigned ldd = 0;         // the same for D, laid out as d_layout
  bool c_row_major = true;
  bool d_row_major = true;
  bool with_c = false;   // D = A * B + C; otherwise D = A * B
  float a_scale = 1.0f;  // every x[i] of every A fragment is multiplied by it (exact: 2^j)
  float d_scale = 1.0f;  // and every x[i] of the accumulator, before the store
  int warps_per_block = 2;
};

/// [wmma_gemm]
/// D = (a_scale * A) * B (+ C), times d_scale, one 16x16 tile of D per warp, K in steps of 16.
///   A: [m, k] of T, row_major a[row * lda + col] or col_major a[col * lda + row]
///   B: [k, n] of T, likewise with ldb
///   C: [m, n] of float (nullptr without C), D: [m, n] of float, laid out as the shape says
template <class T, class LayoutA, class LayoutB>
__global__ void wmma_gemm_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                 const float* __restrict__ c, float* __restrict__ d,
                                 WmmaGemmShape shape) {
  using namespace nvcuda;
  constexpr bool kRowA = std::is_same_v<LayoutA, wmma::row_major>;
  constexpr bool kRowB = std::is_same_v<LayoutB, wmma::row_major>;
  const int tile =
      static_cast<int>(blockIdx.x) * shape.warps_per_block + static_cast<int>(threadIdx.x) / 32;
  const int tiles_n = shape.n / 16;
  if (tile >= (shape.m / 16) * tiles_n) return;  // the whole warp leaves together
  const int row = tile / tiles_n * 16;           // the tile's first row and column of D
  const int col = tile % tiles_n * 16;
  const auto at = [](int r, int c, unsigned ld, bool row_major) {
    return row_major ? r * ld + c : c * ld + r;  // element (r, c) of a matrix
  };
  const wmma::layout_t c_layout = shape.c_row_major ? wmma::mem_row_major : wmma::mem_col_major;
  const wmma::layout_t d_layout = shape.d_row_major ? wmma::mem_row_major : wmma::mem_col_major;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c_frag;
  if (shape.with_c) {
    wmma::load_matrix_sync(c_frag, c + at(row, col, shape.ldc, shape.c_row_major), shape.ldc,
                           c_layout);
  } else {
    wmma::fill_fragment(c_frag, 0.0f);
  }
  const T a_scale = T(shape.a_scale);
  for (int k0 = 0; k0 < shape.k; k0 += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, LayoutA> a_frag;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, LayoutB> b_frag;
    wmma::load_matrix_sync(a_frag, a + at(row, k0, shape.lda, kRowA), shape.lda);
    wmma::load_matrix_sync(b_frag, b + at(k0, col, shape.ldb, kRowB), shape.ldb);
    // Element-wise work on x[]: right whatever lane holds whatever element.
    for (int i = 0; i < a_frag.num_elements; ++i) a_frag.x[i] = a_frag.x[i] * a_scale;
    if (k0 == 0) {
      wmma::mma_sync(acc, a_frag, b_frag, c_frag);
    } else {
      wmma::mma_sync(acc, a_frag, b_frag, acc);  // in place, as CUDA allows
    }
  }
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] *= shape.d_scale;
  wmma::store_matrix_sync(d + at(row, col, shape.ldd, shape.d_row_major), acc, shape.ldd, d_layout);
}
/// [wmma_gemm]

/// Returns D ([m, n] as the shape lays it out, ldd * (m or n) floats) from A and B (already
/// rounded to T, laid out as LayoutA / LayoutB) and C; `d` gives D's initial contents, so a test
/// can see that the store wrote nothing outside the tile.
template <class T, class LayoutA, class LayoutB>
std::vector<float> wmma_gemm(const std::vector<T>& a, const std::vector<T>& b,
                             const std::vector<float>& c, std::vector<float> d,
                             const WmmaGemmShape& shape) {
  simt::DeviceBuffer<T> d_a(a.size());
  simt::DeviceBuffer<T> d_b(b.size());
  simt::DeviceBuffer<float> d_c(c.empty() ? 1 : c.size());
  simt::DeviceBuffer<float> d_d(d.size());
  d_a.upload(a.data(), a.size());
  d_b.upload(b.data(), b.size());
  if (!c.empty()) d_c.upload(c.data(), c.size());
  d_d.upload(d.data(), d.size());
  const int tiles = (shape.m / 16) * (shape.n / 16);
  const int blocks = (tiles + shape.warps_per_block - 1) / shape.warps_per_block;
  simt::launch(wmma_gemm_kernel<T, LayoutA, LayoutB>, dim3(blocks),
               dim3(32 * shape.warps_per_block), 0, d_a.data(), d_b.data(),
               shape.with_c ? d_c.data() : nullptr, d_d.data(), shape);
  d_d.download(d.data(), d.size());
  return d;
}

}  // namespace simt_tests::SIMT_BACKEND

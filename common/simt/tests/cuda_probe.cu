// Compile-only proof that the portable kernels, simt::launch, DeviceBuffer, the shared-memory
// opt-in and the nvcuda::wmma GEMM build with nvcc, through the same simt/cuda.hpp (built for
// sm_80 and sm_90 by common/simt/CMakeLists.txt when CMake finds CUDA). Nothing runs it: this
// machine has no GPU.
#include "portable_kernels.hpp"
#include "portable_pipeline.hpp"
#include "portable_wmma.hpp"

namespace simt_tests::SIMT_BACKEND {

static_assert(sizeof(SIMT_BACKEND_NAME) == sizeof("cuda"), "nvcc must select the CUDA backend");

/// Calls every host driver once, so that nvcc instantiates every launch and buffer operation.
void probe_every_driver() {
  const std::vector<float> values(4 * 128, 1.0f);
  (void)axpy(2.0f, values, values, 128);
  (void)block_sums<128>(values, false);
  (void)block_sums<128>(values, true);
  (void)reverse_blocks(values, 128, 64);
  (void)round_trip(values);
  (void)last_block_sums(values, 2);
  (void)simt::cuda_device_count();
  (void)async_copy_groups(values);
  (void)async_copy_zfill(values, 4);
  (void)async_copy_neighbour(values, 64, true);
  (void)ring_column_sums(values, 1, 2, 1);
}

/// Instantiates the wmma GEMM for both input types and every layout of A and B.
template <class T>
void probe_wmma_gemm() {
  using nvcuda::wmma::col_major;
  using nvcuda::wmma::row_major;
  WmmaGemmShape shape;
  shape.m = shape.n = shape.k = 16;
  shape.lda = shape.ldb = shape.ldc = shape.ldd = 16;
  const std::vector<T> a(256, T(1.0f));
  const std::vector<float> c(256, 0.0f);
  (void)wmma_gemm<T, row_major, row_major>(a, a, c, c, shape);
  (void)wmma_gemm<T, row_major, col_major>(a, a, c, c, shape);
  (void)wmma_gemm<T, col_major, row_major>(a, a, c, c, shape);
  (void)wmma_gemm<T, col_major, col_major>(a, a, c, c, shape);
}

void probe_every_wmma_gemm() {
  probe_wmma_gemm<__half>();
  probe_wmma_gemm<__nv_bfloat16>();
}

}  // namespace simt_tests::SIMT_BACKEND

// Compile-only proof that the portable kernels, simt::launch, DeviceBuffer and the shared-memory
// opt-in build with nvcc, through the same simt/cuda.hpp (built for sm_80 and sm_90 by
// common/simt/CMakeLists.txt when CMake finds CUDA). Nothing runs it: this machine has no GPU.
#include "portable_kernels.hpp"

namespace simt_tests::SIMT_BACKEND {

static_assert(sizeof(SIMT_BACKEND_NAME) == sizeof("cuda"), "nvcc must select the CUDA backend");

/// Calls every host driver once, so that nvcc instantiates every launch and buffer operation.
void probe_every_driver() {
  const std::vector<float> values(4 * 128, 1.0f);
  (void)block_sums<128>(values, false);
  (void)block_sums<128>(values, true);
  (void)reverse_blocks(values, 128, 64);
  (void)round_trip(values);
  (void)simt::cuda_device_count();
}

}  // namespace simt_tests::SIMT_BACKEND

/// \file
/// Where a CUDA lab's kernels run: the SIMT emulator (every build) or a CUDA GPU (builds in
/// which CMake found nvcc). A CUDA lab compiles its kernel file once per backend, into
/// namespaces `emu` and `cuda`; its given api.cpp asks pick_backend which build to call.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace pa {

/// [backend]
/// Where a kernel runs: the SIMT emulator on the CPU (every machine) or a CUDA GPU.
enum class Backend { kEmulator, kCuda };
/// [backend]

/// Returns "emulator" or "cuda".
inline std::string backend_name(Backend backend) {
  return backend == Backend::kCuda ? "cuda" : "emulator";
}

/// Returns `emulator` or `*cuda` for `backend`; `cuda` is null in a build without the CUDA
/// backend, and asking for it then throws std::runtime_error naming `function`.
template <class Api>
const Api& pick_backend(Backend backend, const Api& emulator, const Api* cuda,
                        std::string_view function) {
  if (backend == Backend::kEmulator) return emulator;
  if (cuda == nullptr) {
    throw std::runtime_error(std::string(function) +
                             ": this build has no CUDA backend (CMake found no CUDA compiler); "
                             "use Backend::kEmulator");
  }
  return *cuda;
}

}  // namespace pa

/// `&cuda::x` in a build with the CUDA backend, nullptr otherwise: the one place a CUDA lab's
/// dispatch needs to know whether nvcc built its kernels.
#if PA_HAVE_CUDA_BACKEND
#define PA_CUDA_BACKEND_OR_NULL(expr) (&(expr))
#else
#define PA_CUDA_BACKEND_OR_NULL(expr) nullptr
#endif

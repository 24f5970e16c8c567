/// \file
/// What the CUDA labs' tests share on top of pa/testing.hpp and pa/decode_problems.hpp: a fixture
/// that runs every test once per backend (and GoogleTest's names for a Backend parameter), and a
/// guard that restores the emulator's schedule. Header-only; the test programs that include it
/// link the emulator (pa_simt).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>

#include "pa/backend.hpp"
#include "simt/errors_and_settings.hpp"

namespace pa {
/// Lets GoogleTest print a Backend parameter by name: "emulator", "cuda".
inline void PrintTo(Backend backend, std::ostream* os) { *os << backend_name(backend); }
}  // namespace pa

namespace pa::testing {

/// Returns "Emulator" or "Cuda": the suffix of a backend-parameterised test's name.
inline std::string backend_test_name(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kCuda ? "Cuda" : "Emulator";
}

/// [backend_test]
/// A test parameterised by Backend: skipped "no CUDA device" on CUDA where `DevicePresent()` says
/// there is none, and run with the emulator's shared memory filled with NaN at every block start,
/// so a kernel that reads shared memory it never wrote fails (a GPU would hand it whatever the
/// last block left behind). Instantiate with
/// INSTANTIATE_TEST_SUITE_P(, Suite, ::testing::Values(Backend::kEmulator, Backend::kCuda),
///                          pa::testing::backend_test_name);
template <bool (*DevicePresent)()>
class BackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (backend() == Backend::kCuda && !DevicePresent()) GTEST_SKIP() << "no CUDA device";
    saved_nan_fill_ = simt::fill_shared_with_nan();
    simt::set_fill_shared_with_nan(true);
  }
  void TearDown() override { simt::set_fill_shared_with_nan(saved_nan_fill_); }
  Backend backend() const { return GetParam(); }

 private:
  bool saved_nan_fill_ = false;
};
/// [backend_test]

/// Restores the emulator's schedule when a test that changes it ends.
struct RestoreSchedule {
  simt::Schedule schedule = simt::schedule();
  std::uint64_t seed = simt::schedule_seed();
  ~RestoreSchedule() { simt::set_schedule(schedule, seed); }
};

}  // namespace pa::testing

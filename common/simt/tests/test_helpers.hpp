// Small helpers shared by the emulator's tests.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "simt/cuda.hpp"

namespace simt_tests {

/// Runs everything in its scope under one schedule and restores the previous one after.
class ScopedSchedule {
 public:
  explicit ScopedSchedule(simt::Schedule schedule, std::uint64_t seed = 0)
      : previous_(simt::schedule()), previous_seed_(simt::schedule_seed()) {
    simt::set_schedule(schedule, seed);
  }
  ~ScopedSchedule() { simt::set_schedule(previous_, previous_seed_); }
  ScopedSchedule(const ScopedSchedule&) = delete;
  ScopedSchedule& operator=(const ScopedSchedule&) = delete;

 private:
  simt::Schedule previous_;
  std::uint64_t previous_seed_;
};

/// Turns the NaN fill of dynamic shared memory on or off for its scope.
class ScopedSharedNan {
 public:
  explicit ScopedSharedNan(bool on) : previous_(simt::fill_shared_with_nan()) {
    simt::set_fill_shared_with_nan(on);
  }
  ~ScopedSharedNan() { simt::set_fill_shared_with_nan(previous_); }
  ScopedSharedNan(const ScopedSharedNan&) = delete;
  ScopedSharedNan& operator=(const ScopedSharedNan&) = delete;

 private:
  bool previous_;
};

/// Turns the memory checker on or off for its scope.
class ScopedMemoryChecks {
 public:
  explicit ScopedMemoryChecks(bool on) : previous_(simt::memory_checks()) {
    simt::set_memory_checks(on);
  }
  ~ScopedMemoryChecks() { simt::set_memory_checks(previous_); }
  ScopedMemoryChecks(const ScopedMemoryChecks&) = delete;
  ScopedMemoryChecks& operator=(const ScopedMemoryChecks&) = delete;

 private:
  bool previous_;
};

/// n small integers in [-1000, 1000] drawn from `seed`: every partial sum of up to 8,000 of them
/// is exact in float, so any summation order gives the same bits and sums compare exactly.
inline std::vector<float> small_integers(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-1000, 1000);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(dist(gen));
  return v;
}

/// Returns "<this test file's base name>:<line>", as the emulator names call sites.
inline std::string site(const char* file, int line) {
  std::string path = file;
  return path.substr(path.find_last_of('/') + 1) + ":" + std::to_string(line);
}

/// Expects `run` to throw simt::KernelError whose message contains every fragment.
inline void ExpectKernelError(const std::function<void()>& run,
                              std::initializer_list<std::string> fragments) {
  try {
    run();
    ADD_FAILURE() << "expected simt::KernelError, but nothing was thrown";
  } catch (const simt::KernelError& e) {
    const std::string message = e.what();
    for (const std::string& fragment : fragments) {
      EXPECT_NE(message.find(fragment), std::string::npos) << "missing \"" << fragment << "\" in:\n"
                                                           << message;
    }
  }
}

}  // namespace simt_tests

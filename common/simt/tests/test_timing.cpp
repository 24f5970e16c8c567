// The benchmarks' timing pieces on the emulator: a timed span covers its work, the yardsticks
// run over the buffers they are given and refuse buffers their 16-byte loads cannot read.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "simt/cuda.hpp"
#include "simt/timing.hpp"

namespace simt_tests {
namespace {

TEST(SimtTiming, FlushedTimerSpansItsWorkOnce) {
  simt::FlushedTimer clock;
  int runs = 0;
  const double seconds = clock.time([&] {
    ++runs;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  EXPECT_EQ(runs, 1);
  EXPECT_GE(seconds, 0.005);  // the emulator's clock is the host's: the sleep is inside the span
  EXPECT_LT(seconds, 5.0);    // and the span ends when the work does (generous: a busy machine)
}

TEST(SimtTiming, SessionTimingRunsTheLaunchAndBothYardsticks) {
  simt::DeviceBuffer<float> keys(1024), values(256);  // 4 KiB and 1 KiB: 16-byte multiples
  keys.fill_bytes(0x3C);
  values.fill_bytes(0x3C);
  const std::vector<simt::DeviceSpan> caches = {{keys.data(), keys.size() * sizeof(float)},
                                                {values.data(), values.size() * sizeof(float)}};
  simt::SessionTiming timing;
  int launches = 0;
  EXPECT_GE(timing.launch([&] { ++launches; }), 0.0);
  EXPECT_EQ(launches, 1);
  for (int repeat = 0; repeat < 2; ++repeat) {  // built at the first call, reused at the second
    EXPECT_GE(timing.read_roofline(caches), 0.0);
    EXPECT_GE(timing.cache_copy(caches), 0.0);
  }
  EXPECT_EQ(simt::ReadRoofline(caches).bytes(), 5 * 1024u);
}

TEST(SimtTiming, ReadRooflineRefusesWhatItsSixteenByteLoadsCannotRead) {
  simt::DeviceBuffer<unsigned char> bytes(64);
  EXPECT_THROW(simt::ReadRoofline({{bytes.data() + 4, 48}}), std::invalid_argument);  // misaligned
  EXPECT_THROW(simt::ReadRoofline({{bytes.data(), 40}}), std::invalid_argument);  // 40 % 16 != 0
  EXPECT_NO_THROW(simt::ReadRoofline({{bytes.data(), 64}}));
  const simt::DeviceSpan span{bytes.data(), 64};
  EXPECT_THROW(simt::ReadRoofline({span, span, span, span, span}), std::invalid_argument);  // > 4
}

// The yardstick must read every byte it is credited with, once: its sink is the XOR of every
// 32-bit word it loaded, so a word skipped or read twice changes it (random words: a miss
// cancels nothing by chance). Sizes leave a ragged tail after the four-loads-in-flight steps.
TEST(SimtTiming, ReadRooflineReadsEveryWordOfEveryBufferOnce) {
  std::mt19937 rng(2024);
  std::vector<unsigned int> host_keys(4 * 1037), host_values(4 * 211);  // 16-byte words: 1037, 211
  unsigned int expected = 0;
  for (auto* host : {&host_keys, &host_values}) {
    for (unsigned int& w : *host) {
      w = static_cast<unsigned int>(rng());
      expected ^= w;
    }
  }
  simt::DeviceBuffer<unsigned int> keys(host_keys.size()), values(host_values.size());
  keys.upload(host_keys.data(), host_keys.size());
  values.upload(host_values.data(), host_values.size());
  simt::ReadRoofline roofline({{keys.data(), host_keys.size() * 4},
                               {values.data(), host_values.size() * 4}});
  EXPECT_GE(roofline.timed(), 0.0);
  EXPECT_EQ(roofline.fold(), expected) << "the read pass skipped or repeated some words";
  roofline.timed();
  EXPECT_EQ(roofline.fold(), 0u) << "two passes over the same words must cancel";
}

}  // namespace
}  // namespace simt_tests

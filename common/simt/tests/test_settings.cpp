// The schedule and the other settings: their spellings, and the rule that the API wins over
// the environment, which is read once.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "simt/cuda.hpp"
#include "src/settings.hpp"

namespace simt_tests {
namespace {

using simt::Schedule;

// Every test starts and ends with no variables set and no API settings made.
class SimtSettings : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name : {"SIMT_SCHEDULE", "SIMT_SHARED_NAN", "SIMT_WATCHDOG_SECONDS"})
      unsetenv(name);
    simt::detail::reset_settings();
  }
};

TEST_F(SimtSettings, ParseScheduleAcceptsEverySpelling) {
  EXPECT_EQ(simt::parse_schedule("forward").schedule, Schedule::Forward);
  EXPECT_EQ(simt::parse_schedule("reverse").schedule, Schedule::Reverse);
  EXPECT_EQ(simt::parse_schedule("random").schedule, Schedule::Random);
  EXPECT_EQ(simt::parse_schedule("random").seed, 0u);
  const simt::ScheduleChoice seeded = simt::parse_schedule("random:18446744073709551615");
  EXPECT_EQ(seeded.schedule, Schedule::Random);
  EXPECT_EQ(seeded.seed, 18446744073709551615ull);
}

TEST_F(SimtSettings, ParseScheduleRejectsEverythingElse) {
  for (const char* bad : {"", "Forward", "backward", "random:", "random:x", "random:-1",
                          "random:12abc", "random:99999999999999999999", " forward"}) {
    try {
      simt::parse_schedule(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("expected forward, reverse, random or random:SEED"), std::string::npos)
          << message;
      EXPECT_NE(message.find("got \"" + std::string(bad) + "\""), std::string::npos) << message;
    }
  }
}

TEST_F(SimtSettings, EnvironmentIsReadOnceAndTheApiWins) {
  setenv("SIMT_SCHEDULE", "random:42", 1);
  EXPECT_EQ(simt::schedule(), Schedule::Random);
  EXPECT_EQ(simt::schedule_seed(), 42u);
  setenv("SIMT_SCHEDULE", "reverse", 1);  // too late: already read
  EXPECT_EQ(simt::schedule(), Schedule::Random);
  simt::set_schedule(Schedule::Forward);
  EXPECT_EQ(simt::schedule(), Schedule::Forward);

  // An API call before the first read wins over the variable too.
  simt::detail::reset_settings();
  simt::set_schedule(Schedule::Reverse);
  setenv("SIMT_SCHEDULE", "random:5", 1);
  EXPECT_EQ(simt::schedule(), Schedule::Reverse);
}

TEST_F(SimtSettings, EnvironmentSetsTheNanFillAndTheWatchdog) {
  EXPECT_FALSE(simt::fill_shared_with_nan());  // the defaults
  EXPECT_EQ(simt::watchdog_seconds(), 10.0);
  simt::detail::reset_settings();
  setenv("SIMT_SHARED_NAN", "1", 1);
  setenv("SIMT_WATCHDOG_SECONDS", "2.5", 1);
  EXPECT_TRUE(simt::fill_shared_with_nan());
  EXPECT_EQ(simt::watchdog_seconds(), 2.5);
  for (const char* off : {"0", "off", "false", "no"}) {
    setenv("SIMT_SHARED_NAN", off, 1);
    EXPECT_EQ(simt::detail::read_environment().fill_shared_with_nan, false) << off;
  }
  setenv("SIMT_WATCHDOG_SECONDS", "0", 1);
  EXPECT_EQ(simt::detail::read_environment().watchdog_seconds, 0.0);
}

TEST_F(SimtSettings, BadEnvironmentValuesNameTheVariable) {
  const auto expect_rejected = [](const char* name, const char* value) {
    setenv(name, value, 1);
    try {
      simt::detail::read_environment();
      ADD_FAILURE() << name << "=" << value << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("environment variable ") + name),
                std::string::npos)
          << e.what();
    }
    unsetenv(name);
  };
  expect_rejected("SIMT_SCHEDULE", "sideways");
  expect_rejected("SIMT_SHARED_NAN", "maybe");
  expect_rejected("SIMT_WATCHDOG_SECONDS", "-1");
  expect_rejected("SIMT_WATCHDOG_SECONDS", "10s");
}

__global__ void nothing_kernel() {}

TEST_F(SimtSettings, ALaunchFailsWhileTheScheduleVariableIsBad) {
  setenv("SIMT_SCHEDULE", "sideways", 1);
  EXPECT_THROW(simt::launch(nothing_kernel, dim3(1), dim3(1), 0), std::invalid_argument);
}

TEST_F(SimtSettings, NegativeWatchdogLimitIsRejected) {
  EXPECT_THROW(simt::set_watchdog_seconds(-1.0), std::invalid_argument);
}

}  // namespace
}  // namespace simt_tests

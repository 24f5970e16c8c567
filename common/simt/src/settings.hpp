// The emulator's settings as one launch sees them, and the environment variables behind them.
#pragma once

#include <optional>

#include "simt/errors_and_settings.hpp"

namespace simt::inline emu::detail {

/// Everything a launch reads from the settings, taken once at its start.
struct LaunchSettings {
  ScheduleChoice schedule;
  bool fill_shared_with_nan = false;
  double watchdog_seconds = 10.0;
};

/// What the environment asks for; an empty optional where a variable is unset.
struct EnvironmentSettings {
  std::optional<ScheduleChoice> schedule;    // SIMT_SCHEDULE
  std::optional<bool> fill_shared_with_nan;  // SIMT_SHARED_NAN
  std::optional<double> watchdog_seconds;    // SIMT_WATCHDOG_SECONDS
};

/// Parses SIMT_SCHEDULE, SIMT_SHARED_NAN and SIMT_WATCHDOG_SECONDS; throws std::invalid_argument
/// naming the variable, what it accepts and what it holds when a value does not parse.
EnvironmentSettings read_environment();

/// Returns the settings for a launch starting now (reading the environment the first time).
LaunchSettings launch_settings();

/// Forgets every setting made through the API and the environment read so far, so that the
/// next query reads the environment again (for tests of the precedence rules).
void reset_settings();

}  // namespace simt::inline emu::detail

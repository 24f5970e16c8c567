// Schedules, the NaN fill and the watchdog limit: API calls win, the environment fills in the
// rest once, defaults cover what neither names.
#include "settings.hpp"

#include <charconv>
#include <cstdlib>
#include <mutex>
#include <string>

namespace simt {
namespace {

constexpr double kDefaultWatchdogSeconds = 10.0;

struct Settings {
  std::mutex mutex;
  bool environment_read = false;
  // Which values the API has set; the environment must not overwrite those.
  bool schedule_from_api = false;
  bool nan_from_api = false;
  bool watchdog_from_api = false;
  ScheduleChoice schedule;
  bool fill_shared_with_nan = false;
  double watchdog_seconds = kDefaultWatchdogSeconds;
};

Settings& settings() {
  static Settings s;
  return s;
}

std::invalid_argument bad_value(const char* who, const char* expected, std::string_view got) {
  return std::invalid_argument(std::string(who) + " — expected " + expected + ", got \"" +
                               std::string(got) + "\"");
}

ScheduleChoice parse_schedule_as(std::string_view text, const char* who) {
  constexpr const char* kExpected =
      "forward, reverse, random or random:SEED (SEED a decimal integer)";
  if (text == "forward") return {Schedule::Forward, 0};
  if (text == "reverse") return {Schedule::Reverse, 0};
  if (text == "random") return {Schedule::Random, 0};
  constexpr std::string_view kRandomWithSeed = "random:";
  if (text.substr(0, kRandomWithSeed.size()) == kRandomWithSeed) {
    const std::string_view digits = text.substr(kRandomWithSeed.size());
    std::uint64_t seed = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), seed);
    if (!digits.empty() && error == std::errc() && end == digits.data() + digits.size()) {
      return {Schedule::Random, seed};
    }
  }
  throw bad_value(who, kExpected, text);
}

// Must be called with the mutex held. Marks the environment read only once it parsed, so a bad
// value keeps failing every launch rather than being forgotten after the first.
void load_environment(Settings& s) {
  if (s.environment_read) return;
  const detail::EnvironmentSettings env = detail::read_environment();
  if (env.schedule && !s.schedule_from_api) s.schedule = *env.schedule;
  if (env.fill_shared_with_nan && !s.nan_from_api)
    s.fill_shared_with_nan = *env.fill_shared_with_nan;
  if (env.watchdog_seconds && !s.watchdog_from_api) s.watchdog_seconds = *env.watchdog_seconds;
  s.environment_read = true;
}

}  // namespace

ScheduleChoice parse_schedule(std::string_view text) {
  return parse_schedule_as(text, "simt::parse_schedule: text");
}

void set_schedule(Schedule schedule, std::uint64_t seed) {
  Settings& s = settings();
  const std::lock_guard lock(s.mutex);
  s.schedule = {schedule, seed};
  s.schedule_from_api = true;
}

Schedule schedule() {
  Settings& s = settings();
  const std::lock_guard lock(s.mutex);
  load_environment(s);
  return s.schedule.schedule;
}

std::uint64_t schedule_seed() {
  Settings& s = settings();
  const std::lock_guard lock(s.mutex);
  load_environment(s);
  return s.schedule.seed;
}

const char* schedule_name(Schedule schedule) {
  switch (schedule) {
    case Schedule::Forward:
      return "forward";
    case Schedule::Reverse:
      return "reverse";
    case Schedule::Random:
      return "random";
  }
  return "unknown";
}

void set_fill_shared_with_nan(bool on) {
  Settings& s = settings();
  const std::lock_guard lock(s.mutex);
  s.fill_shared_with_nan = on;
  s.nan_from_api = true;
}

bool fill_shared_with_nan() {
  Settings& s = settings();
  const std::lock_guard lock(s.mutex);
  load_environment(s);
  return s.fill_shared_with_nan;
}

void set_watchdog_seconds(double seconds) {
  if (!(seconds >= 0.0)) {
    throw std::invalid_argument("simt::set_watchdog_seconds: seconds — expected >= 0, got " +
                                std::to_string(seconds));
  }
  Settings& s = settings();
  const std::lock_guard lock(s.mutex);
  s.watchdog_seconds = seconds;
  s.watchdog_from_api = true;
}

double watchdog_seconds() {
  Settings& s = settings();
  const std::lock_guard lock(s.mutex);
  load_environment(s);
  return s.watchdog_seconds;
}

}  // namespace simt

namespace simt::inline emu::detail {

EnvironmentSettings read_environment() {
  EnvironmentSettings env;
  if (const char* text = std::getenv("SIMT_SCHEDULE"); text != nullptr && *text != '\0') {
    env.schedule = parse_schedule_as(text, "environment variable SIMT_SCHEDULE");
  }
  if (const char* text = std::getenv("SIMT_SHARED_NAN"); text != nullptr && *text != '\0') {
    const std::string_view v = text;
    if (v == "1" || v == "on" || v == "true" || v == "yes") {
      env.fill_shared_with_nan = true;
    } else if (v == "0" || v == "off" || v == "false" || v == "no") {
      env.fill_shared_with_nan = false;
    } else {
      throw bad_value("environment variable SIMT_SHARED_NAN",
                      "1, on, true, yes, 0, off, false or no", v);
    }
  }
  if (const char* text = std::getenv("SIMT_WATCHDOG_SECONDS"); text != nullptr && *text != '\0') {
    const std::string_view v = text;
    double seconds = -1.0;
    const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), seconds);
    if (error != std::errc() || end != v.data() + v.size() || !(seconds >= 0.0)) {
      throw bad_value("environment variable SIMT_WATCHDOG_SECONDS",
                      "a number of seconds >= 0 (0 turns the watchdog off)", v);
    }
    env.watchdog_seconds = seconds;
  }
  return env;
}

LaunchSettings launch_settings() {
  Settings& s = settings();
  const std::lock_guard lock(s.mutex);
  load_environment(s);
  return {s.schedule, s.fill_shared_with_nan, s.watchdog_seconds};
}

void reset_settings() {
  Settings& s = settings();
  const std::lock_guard lock(s.mutex);
  s.environment_read = false;
  s.schedule_from_api = s.nan_from_api = s.watchdog_from_api = false;
  s.schedule = ScheduleChoice{};
  s.fill_shared_with_nan = false;
  s.watchdog_seconds = kDefaultWatchdogSeconds;
}

}  // namespace simt::inline emu::detail

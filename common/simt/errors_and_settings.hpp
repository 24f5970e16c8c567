// What both backends share: the error type and the emulator's run-time controls.
//
// These declarations are the same under nvcc and under g++/clang++, so they live in plain
// `namespace simt` (not in the backend's inline namespace): a test built with g++ catches the
// same simt::KernelError that a .cu file compiled by nvcc throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace simt {

/// Thrown by a launch that failed, or by a kernel bug the backend detected (a divergent
/// barrier, a shuffle whose partners never arrive); the message names the block, the threads
/// and the source lines involved.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The order in which the emulator runs the threads of a block between two synchronisation
/// points. Correct kernels give the same result under every schedule; a missing barrier shows
/// up as results that depend on it.
enum class Schedule { Forward, Reverse, Random };

/// A schedule and, for Schedule::Random, the seed that makes it reproducible.
struct ScheduleChoice {
  Schedule schedule = Schedule::Forward;
  std::uint64_t seed = 0;
};

/// The largest dynamic shared memory a launch may use before the kernel opts in to more
/// (CUDA's default limit, kept by the emulator too so that a missing opt-in fails on the CPU).
inline constexpr std::size_t kDefaultDynamicSharedBytes = 48 * 1024;

// ---- Emulator controls -------------------------------------------------------------------
// They are defined in the emulator library (pa_simt) and have no effect on a GPU. Each setting
// made through this API wins over the environment variable named beside it, which is read once,
// at the first launch or the first query.

/// Parses "forward", "reverse", "random" or "random:SEED" (SEED a decimal integer); throws
/// std::invalid_argument naming the accepted spellings for anything else.
ScheduleChoice parse_schedule(std::string_view text);

/// Makes every later emulator launch use `schedule` (`seed` matters for Schedule::Random only).
/// Environment: SIMT_SCHEDULE=forward|reverse|random|random:SEED.
void set_schedule(Schedule schedule, std::uint64_t seed = 0);

/// Returns the schedule emulator launches use now.
Schedule schedule();

/// Returns the seed of Schedule::Random that emulator launches use now.
std::uint64_t schedule_seed();

/// Returns "forward", "reverse" or "random", for test names and messages.
const char* schedule_name(Schedule schedule);

/// Makes every later emulator launch fill the dynamic shared memory with 0xFF bytes (a NaN in
/// float, half and bfloat16) at the start of each block, so reads of unwritten shared memory
/// poison the result. Environment: SIMT_SHARED_NAN=1.
void set_fill_shared_with_nan(bool on);

/// Returns whether emulator launches fill dynamic shared memory with NaN at block start.
bool fill_shared_with_nan();

/// Sets how many seconds of CPU time one kernel thread may run without reaching a barrier, a
/// warp collective or its end before the emulator aborts the process with a diagnosis (a spin
/// wait never ends on cooperative fibers); 0 turns the watchdog off. Environment:
/// SIMT_WATCHDOG_SECONDS (default 10).
void set_watchdog_seconds(double seconds);

/// Returns the watchdog's limit in seconds of CPU time (0: off).
double watchdog_seconds();

/// Turns the memory checker (races and out-of-bounds accesses of instrumented kernels, see
/// the emulator's README) on or off for later launches. Environment: SIMT_CHECK=0 turns it off.
void set_memory_checks(bool on);

/// Returns whether the memory checker watches later launches (on unless turned off).
bool memory_checks();

}  // namespace simt

// The watchdog: ends the process with a diagnosis when a kernel thread runs too long without
// switching. Fibers switch only at barriers and warp collectives, so a thread that spins on a
// flag another thread of its block must set can never be interrupted; rather than hang, the
// emulator aborts with a message that explains why.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

namespace simt::inline emu::detail {

/// What the watchdog thread can see of one running launch; written by the emulating thread on
/// every switch (relaxed atomics: a handful of plain stores).
struct LaunchProbe {
  std::atomic<std::uint64_t> switches{0};
  std::atomic<unsigned> block_x{0}, block_y{0}, block_z{0};
  std::atomic<unsigned> thread{0};
  std::atomic<const char*> file{nullptr};  // where that thread last waited; nullptr: nowhere yet
  std::atomic<int> line{0};
};

/// Watches `probe` while it lives: if its switch count stands still for `seconds` of the
/// emulating thread's CPU time (so a paused debugger never trips it), prints a diagnosis and
/// aborts. Does nothing when `seconds` is 0.
class WatchdogScope {
 public:
  WatchdogScope(const LaunchProbe& probe, double seconds);
  ~WatchdogScope();
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  const LaunchProbe* probe_;
  bool active_;
};

}  // namespace simt::inline emu::detail

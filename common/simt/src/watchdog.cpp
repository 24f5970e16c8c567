// One background thread per process, started at the first watched launch, polling every
// watched launch's switch counter against its thread's CPU clock.
#include "watchdog.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <thread>
#include <vector>

namespace simt::inline emu::detail {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(100);

double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

[[noreturn]] void bark(const LaunchProbe& probe, double seconds) {
  const char* file = probe.file.load(std::memory_order_relaxed);
  char where[512];
  if (file != nullptr) {
    std::snprintf(where, sizeof where, "it last waited at %s:%d", file,
                  probe.line.load(std::memory_order_relaxed));
  } else {
    std::snprintf(where, sizeof where, "it has not reached any yet");
  }
  std::fprintf(stderr,
               "simt watchdog: block (%u, %u, %u), thread %u ran for %.1f s of CPU time without "
               "reaching __syncthreads, a warp collective or its end (%s).\n"
               "On the emulator a thread switches only at those points, so a loop that waits "
               "for another thread of the block (a spin lock, a flag in shared memory) never "
               "ends. Aborting. (SIMT_WATCHDOG_SECONDS changes the limit; 0 turns it off.)\n",
               probe.block_x.load(std::memory_order_relaxed),
               probe.block_y.load(std::memory_order_relaxed),
               probe.block_z.load(std::memory_order_relaxed),
               probe.thread.load(std::memory_order_relaxed), seconds, where);
  std::fflush(stderr);
  std::abort();
}

class Watchdog {
 public:
  void add(const LaunchProbe& probe, double seconds) {
    clockid_t clock{};
    pthread_getcpuclockid(pthread_self(), &clock);
    const std::lock_guard lock(mutex_);
    // A forked child (a death test) inherits the bookkeeping but not the thread: start anew.
    if (owner_ != getpid()) {
      owner_ = getpid();
      watched_.clear();
      std::thread([this] { loop(); }).detach();
    }
    watched_.push_back({&probe, clock, seconds, probe.switches.load(), cpu_seconds(clock)});
    wake_.notify_one();
  }

  void remove(const LaunchProbe& probe) {
    const std::lock_guard lock(mutex_);
    std::erase_if(watched_, [&](const Entry& e) { return e.probe == &probe; });
  }

 private:
  struct Entry {
    const LaunchProbe* probe;
    clockid_t clock;
    double limit;
    std::uint64_t switches;  // the count when we last saw it move
    double cpu_at_switch;    // the thread's CPU time then
  };

  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (watched_.empty()) {
        wake_.wait(lock);
        continue;
      }
      wake_.wait_for(lock, kPollInterval);
      for (Entry& e : watched_) {
        const std::uint64_t now = e.probe->switches.load(std::memory_order_relaxed);
        const double cpu = cpu_seconds(e.clock);
        if (now != e.switches) {
          e.switches = now;
          e.cpu_at_switch = cpu;
        } else if (cpu - e.cpu_at_switch > e.limit) {
          bark(*e.probe, cpu - e.cpu_at_switch);
        }
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Entry> watched_;
  pid_t owner_ = 0;
};

// Never destroyed: the detached thread may still be waiting on it while the process exits.
Watchdog& watchdog() {
  static Watchdog* dog = new Watchdog;
  return *dog;
}

}  // namespace

WatchdogScope::WatchdogScope(const LaunchProbe& probe, double seconds)
    : probe_(&probe), active_(seconds > 0.0) {
  if (active_) watchdog().add(probe, seconds);
}

WatchdogScope::~WatchdogScope() {
  if (active_) watchdog().remove(*probe_);
}

}  // namespace simt::inline emu::detail

// simt::launch on the emulator: check the configuration as CUDA would, then run the blocks one
// at a time in the schedule's order. Also the built-in variables and emulated device memory.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "block.hpp"
#include "settings.hpp"
#include "simt/sanitizer.hpp"

#if SIMT_HAS_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

// The built-in variables (declared in simt/emu/dialect.hpp). Per OS thread, like the rest of
// the emulator: each launch runs wholly on the thread that calls it.
thread_local constinit uint3 threadIdx{};
thread_local constinit uint3 blockIdx{};
thread_local constinit dim3 blockDim{};
thread_local constinit dim3 gridDim{};

namespace simt::inline emu::detail {
namespace {

std::string dims(dim3 d) {
  std::string text = "(";  // appended piece by piece: GCC 12 misfires -Wrestrict on "(" + string
  text += std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
  return text;
}

[[noreturn]] void bad_launch(const std::string& argument, const std::string& expected,
                             const std::string& got) {
  throw KernelError("simt::launch: " + argument + " — expected " + expected + ", got " + got);
}

// CUDA's limits for every current GPU; the launch fails up front, as cudaLaunchKernel does.
void check_configuration(dim3 grid, dim3 block, std::size_t shared_bytes,
                         std::size_t shared_limit, std::size_t shared_opt_in) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    bad_launch("grid", "every dimension >= 1", dims(grid));
  if (grid.x > 2147483647u || grid.y > 65535u || grid.z > 65535u) {
    bad_launch("grid", "x <= 2^31 - 1, y and z <= 65535", dims(grid));
  }
  if (block.x == 0 || block.y == 0 || block.z == 0)
    bad_launch("block", "every dimension >= 1", dims(block));
  if (block.x > 1024u || block.y > 1024u || block.z > 64u) {
    bad_launch("block", "x and y <= 1024, z <= 64", dims(block));
  }
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (threads > 1024) {
    bad_launch("block", "at most 1024 threads",
               dims(block) + " = " + std::to_string(threads) + " threads");
  }
  if (shared_bytes > shared_limit) {
    bad_launch("dynamic_shared_bytes",
               "at most " + std::to_string(shared_limit) +
                   " for this kernel (more needs simt::set_max_dynamic_shared_bytes(kernel, bytes) "
                   "first, up to " +
                   std::to_string(shared_opt_in) + ")",
               std::to_string(shared_bytes));
  }
}

// The launch's dynamic shared memory: an allocation of exactly the requested size, with a
// guard page before it in the memory checker's arena (or, under AddressSanitizer, on the heap,
// whose red zones ASan watches), so that an access one byte past either end is reported.
class DynamicShared {
 public:
  explicit DynamicShared(std::size_t bytes)
      : data_(static_cast<unsigned char*>(checked_allocate(bytes, Region::DynamicShared))) {}
  ~DynamicShared() { checked_free(data_); }
  DynamicShared(const DynamicShared&) = delete;
  DynamicShared& operator=(const DynamicShared&) = delete;
  unsigned char* data() const { return data_; }

 private:
  unsigned char* data_ = nullptr;
};

// Marks the OS thread as inside a launch for as long as it lives, however the launch ends.
class Launching {
 public:
  Launching(Emulator& emulator, unsigned char* dynamic_shared) : emulator_(emulator) {
    emulator_.launching = true;
    emulator_.dynamic_shared = dynamic_shared;
    launching_emulator = &emulator_;
  }
  ~Launching() {
    emulator_.checker.end_launch();
    emulator_.launching = false;
    emulator_.dynamic_shared = nullptr;
    launching_emulator = nullptr;
  }
  Launching(const Launching&) = delete;
  Launching& operator=(const Launching&) = delete;

 private:
  Emulator& emulator_;
};

struct SharedLimits {
  std::mutex mutex;
  std::unordered_map<const void*, std::size_t> by_kernel;         // the opted-in dynamic limit
  std::unordered_map<const void*, std::size_t> static_by_kernel;  // declared __shared__ arrays
};

#if SIMT_HAS_ASAN
// A sanitizer report shows the kernel's source line but not which CUDA thread ran it; this adds
// the block and thread just before the process dies.
void name_the_running_thread() {
  if (launching_emulator != nullptr && launching_emulator->block.running() != nullptr) {
    const std::string who = launching_emulator->block.describe_running();
    std::fprintf(stderr, "%s was running when the sanitizer stopped the program.\n", who.c_str());
  }
}
#endif

SharedLimits& shared_limits() {
  static SharedLimits limits;
  return limits;
}

}  // namespace

void run_grid(const KernelBody& body, const void* kernel, dim3 grid, dim3 block,
              std::size_t dynamic_shared_bytes) {
  Emulator& emulator = this_emulator();
  if (emulator.launching) {
    throw KernelError(
        "simt::launch: called from inside a kernel; the emulator has no dynamic "
        "parallelism");
  }
  check_configuration(grid, block, dynamic_shared_bytes, dynamic_shared_limit(kernel),
                      kMaxDynamicSharedOptIn - static_shared_bytes(kernel));
  const LaunchSettings settings = launch_settings();
#if SIMT_HAS_ASAN
  __sanitizer_set_death_callback(&name_the_running_thread);
#endif

  DynamicShared shared(dynamic_shared_bytes);
  LaunchProbe probe;
  const WatchdogScope watchdog(probe, settings.watchdog_seconds);
  const Launching launching(emulator, shared.data());
  emulator.checker.begin_launch(kernel, block.x * block.y * block.z, shared.data(),
                                dynamic_shared_bytes);
  gridDim = grid;
  blockDim = block;
  emulator.block.use_wmma_mapping(settings.schedule);

  // The schedule orders the blocks too: a kernel whose blocks race (on a global flag, say)
  // sees them in a different order under each schedule.
  SplitMix64 rng(settings.schedule.seed);
  const std::uint64_t count = 1ull * grid.x * grid.y * grid.z;
  std::vector<std::uint64_t> random_order;
  if (settings.schedule.schedule == Schedule::Random) {
    random_order.resize(count);
    for (std::uint64_t i = 0; i < count; ++i) random_order[i] = i;
    shuffle(random_order, rng);
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t id = i;
    if (settings.schedule.schedule == Schedule::Reverse) id = count - 1 - i;
    if (settings.schedule.schedule == Schedule::Random) id = random_order[i];
    blockIdx = {static_cast<unsigned>(id % grid.x), static_cast<unsigned>(id / grid.x % grid.y),
                static_cast<unsigned>(id / (1ull * grid.x * grid.y))};
    if (settings.fill_shared_with_nan && dynamic_shared_bytes > 0) {
      std::memset(shared.data(), 0xFF, dynamic_shared_bytes);
    }
    probe.block_x.store(blockIdx.x, std::memory_order_relaxed);
    probe.block_y.store(blockIdx.y, std::memory_order_relaxed);
    probe.block_z.store(blockIdx.z, std::memory_order_relaxed);
    emulator.block.run(body, blockIdx, block, settings.schedule.schedule, rng, probe);
  }
}

std::size_t static_shared_bytes(const void* kernel) {
  SharedLimits& limits = shared_limits();
  const std::lock_guard lock(limits.mutex);
  const auto it = limits.static_by_kernel.find(kernel);
  return it == limits.static_by_kernel.end() ? 0 : it->second;
}

void set_static_shared_bytes(const void* kernel, std::size_t bytes) {
  // A GPU caps a block's static shared memory at the default 48 KiB; only dynamic memory opts in.
  if (bytes > kDefaultDynamicSharedBytes) {
    throw KernelError("simt::declare_static_shared_bytes: bytes — expected at most " +
                      std::to_string(kDefaultDynamicSharedBytes) + " (static __shared__ arrays " +
                      "cannot opt in beyond the default " +
                      std::to_string(kDefaultDynamicSharedBytes / 1024) + " KiB), got " +
                      std::to_string(bytes));
  }
  SharedLimits& limits = shared_limits();
  const std::lock_guard lock(limits.mutex);
  limits.static_by_kernel[kernel] = bytes;
}

std::size_t dynamic_shared_limit(const void* kernel) {
  const std::size_t static_bytes = static_shared_bytes(kernel);
  SharedLimits& limits = shared_limits();
  const std::lock_guard lock(limits.mutex);
  const auto it = limits.by_kernel.find(kernel);
  return it == limits.by_kernel.end() ? kDefaultDynamicSharedBytes - static_bytes : it->second;
}

void set_dynamic_shared_limit(const void* kernel, std::size_t bytes) {
  const std::size_t static_bytes = static_shared_bytes(kernel);
  if (bytes > kMaxDynamicSharedOptIn - static_bytes) {
    throw KernelError("simt::set_max_dynamic_shared_bytes: bytes — expected at most " +
                      std::to_string(kMaxDynamicSharedOptIn - static_bytes) +
                      " on the emulator" +
                      (static_bytes > 0 ? " (" + std::to_string(kMaxDynamicSharedOptIn / 1024) +
                                              " KiB less the kernel's " +
                                              std::to_string(static_bytes) +
                                              " bytes of static shared memory)"
                                        : std::string()) +
                      ", got " + std::to_string(bytes));
  }
  SharedLimits& limits = shared_limits();
  const std::lock_guard lock(limits.mutex);
  limits.by_kernel[kernel] = bytes;
}

void* device_allocate(std::size_t bytes) {
  return checked_allocate(bytes, Region::Global);
}

void device_free(void* p) noexcept {
  checked_free(p);
}

}  // namespace simt::inline emu::detail

// The block scheduler: runs the CUDA threads of one block as fibers on the calling OS thread,
// releases __syncthreads barriers, meets warp collectives, and turns every way a block can get
// stuck into a KernelError that says where each thread is.
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "checker.hpp"
#include "fiber.hpp"
#include "random.hpp"
#include "simt/emu/runtime.hpp"
#include "watchdog.hpp"
#include "wmma.hpp"

namespace simt::inline emu::detail {

enum class ThreadState : std::uint8_t { Runnable, AtBarrier, AtWarp, Exited };

/// One asynchronous copy a thread has started and not yet landed (see pipeline.cpp).
struct AsyncCopy {
  unsigned char* dst = nullptr;
  unsigned char bytes[16] = {};  // the source's bytes, then the zero fill, as they will land
  std::uint8_t size = 0;         // bytes written to dst: 4, 8 or 16
  std::uint32_t group = 0;       // the commit group it belongs to (the thread's count then)
  SourceSite site{nullptr, 0};
};

/// One CUDA thread of the running block.
struct KernelThread {
  Fiber fiber;
  Stack stack;
  uint3 index{};
  unsigned linear = 0;  // x + y * blockDim.x + z * blockDim.x * blockDim.y; warp = linear / 32
  ThreadState state = ThreadState::Runnable;
  SourceSite site{nullptr, 0};  // where it waits now, or waited last
  // Its part in a warp collective, valid while state == AtWarp.
  WarpOp op = WarpOp::Sync;
  unsigned mask = 0;
  int operand = 0;
  int width = 0;
  std::uint64_t value = 0;
  std::uint64_t result = 0;
  // Its asynchronous copies in flight, oldest first, and how many groups it has committed.
  std::vector<AsyncCopy> copies;
  std::uint32_t committed = 0;
};

/// Returns whether two call sites are the same file and line.
inline bool same_site(SourceSite a, SourceSite b) {
  return a.line == b.line && (a.file == b.file || std::strcmp(a.file, b.file) == 0);
}

/// Returns whether `op` is one of the wmma collectives, which always take the whole warp.
inline bool is_wmma(WarpOp op) {
  return op == WarpOp::WmmaLoad || op == WarpOp::WmmaStore || op == WarpOp::WmmaMma;
}

/// Which lanes of one warp exist, wait in a collective, or have exited (bit i = lane i).
struct WarpLanes {
  unsigned exist = 0;
  unsigned waiting = 0;
  unsigned exited = 0;
};

/// Thrown into the fibers of a failed block to unwind their stacks; never leaves the emulator.
struct AbortBlock {};

class Block {
 public:
  Block(StackPool& stacks, Checker& checker) : stacks_(stacks), checker_(checker) {}

  /// Runs block `index` (of `dim` threads) to the end; rethrows the first exception a kernel
  /// thread throws and throws KernelError when the block cannot go on.
  void run(const KernelBody& body, uint3 index, dim3 dim, Schedule schedule, SplitMix64& rng,
           LaunchProbe& probe);

  /// Returns the kernel thread running now, or nullptr outside a kernel thread.
  KernelThread* running() const { return current_; }

  /// Returns "simt: block (x, y, z), thread t (warp w, lane l)" for the running thread.
  std::string describe_running() const { return current_ != nullptr ? where(*current_) : where(); }

  /// The running thread waits at __syncthreads `site` until the whole block is there.
  void barrier(SourceSite site);

  /// The running thread meets the lanes of `mask` in its warp; returns its result of `op`.
  std::uint64_t collective(WarpOp op, unsigned mask, std::uint64_t value, int operand, int width,
                           SourceSite site);

  /// The running thread meets its whole warp in the wmma collective `op` (see wmma.cpp).
  void wmma(WarpOp op, const WmmaCall& call, SourceSite site);

  /// Throws the memory checker's report, if it has one, in the running thread.
  void raise_checker_error();

  /// Lands the running thread's asynchronous copies of every group before `group` (pipeline.cpp).
  void land_copies(KernelThread& thread, std::uint32_t group);

  /// Makes the wmma fragments of the following launch follow `choice`'s element mapping.
  void use_wmma_mapping(ScheduleChoice choice) { wmma_mapping_.use_schedule(choice); }

 private:
  static void thread_entry(ctx::transfer_t from);
  void run_thread() noexcept;
  KernelThread* next_in_pass();
  void activate(KernelThread& thread);
  void resume(KernelThread& thread);
  void wait(KernelThread& thread);
  void set_state(KernelThread& thread, ThreadState state);
  void release_barrier_or_throw();
  void abort_all() noexcept;
  [[noreturn]] void fail_with_thread_error();

  // warp.cpp
  void check_arrival(const KernelThread& thread, unsigned lane, const WarpLanes& warp) const;
  bool group_complete(unsigned warp_index, const KernelThread& arriving);
  void complete(unsigned warp_index, const KernelThread& arriving);
  void check_one_collective(unsigned warp_index, const KernelThread& arriving);

  // wmma.cpp
  void complete_wmma(unsigned warp_index, const KernelThread& arriving);
  WmmaStage& wmma_stage(unsigned warp_index);
  KernelThread& lane_thread(unsigned warp_index, unsigned lane) {
    return threads_[warp_index * 32 + lane];
  }

  // report.cpp
  std::string where() const;                            // "simt: block (x, y, z)"
  std::string where(unsigned warp_index) const;         // "simt: block (x, y, z), warp w"
  std::string where(const KernelThread& thread) const;  // "..., thread t (warp w, lane l)"
  std::string describe_stall() const;

  StackPool& stacks_;
  Checker& checker_;
  Fiber scheduler_;  // the OS thread's own context, where run() waits while a pass runs
  const KernelBody* body_ = nullptr;
  LaunchProbe* probe_ = nullptr;
  uint3 index_{};
  std::vector<KernelThread> threads_;  // by linear index
  std::vector<WarpLanes> warps_;
  std::vector<unsigned> order_;  // the schedule: the order in which a pass resumes threads
  std::size_t cursor_ = 0;       // the position in order_ that the running pass has reached
  KernelThread* current_ = nullptr;
  unsigned runnable_ = 0;
  unsigned exited_ = 0;
  bool aborting_ = false;
  std::exception_ptr error_;            // the first exception a kernel thread threw
  std::vector<WmmaStage> wmma_stages_;  // by warp, grown on a warp's first wmma collective
  WmmaMapping wmma_mapping_;
};

/// Returns whether waiting lanes `a` and `b` take part in one and the same collective: the same
/// operation at the same call site. __syncwarp is the exception: from sm_70 on, lanes may meet
/// at different __syncwarp calls (only sm_6x and below require the same one).
inline bool same_collective(const KernelThread& a, const KernelThread& b) {
  return a.op == b.op && (a.op == WarpOp::Sync || same_site(a.site, b.site));
}

/// Everything the emulator keeps per OS thread: one launch at a time runs on it.
struct Emulator {
  Emulator();
  StackPool stacks;
  Checker checker;
  Block block;
  bool launching = false;                   // inside simt::launch
  unsigned char* dynamic_shared = nullptr;  // the launch's dynamic shared memory
};

/// Returns the calling OS thread's emulator.
Emulator& this_emulator();

/// The OS thread's emulator while it runs a launch, else nullptr; constinit, so the kernel-side
/// calls read it without the guard a thread_local object with a constructor needs.
extern thread_local constinit Emulator* launching_emulator;

}  // namespace simt::inline emu::detail

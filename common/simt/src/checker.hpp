// The memory checker: races and out-of-bounds accesses of kernel code, seen through GCC's
// ThreadSanitizer instrumentation (see checker.cpp for how, README.md for what it proves).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "simt/emu/runtime.hpp"

namespace simt::inline emu::detail {

/// The kinds of memory the checker watches.
enum class Region : std::uint8_t { None, Global, DynamicShared, StaticShared };

/// One access as the shadow remembers it: when (the checker's clock), who and where.
struct AccessRecord {
  std::uint32_t clock = 0;  // 0: no access recorded
  std::uint16_t thread = 0;  // the thread's linear index in its block (the warp's, if WarpWide)
  std::uint8_t flags = 0;
  std::uint8_t unused = 0;
  std::uintptr_t pc = 0;  // the access's return address, or kSiteTag | index of a SourceSite
};

/// The shadow of one byte: its last write and its last two reads by different threads.
struct ByteShadow {
  AccessRecord write;
  AccessRecord read[2];
};

/// What the checker keeps of one finished block of the running launch, for accesses of later
/// blocks to the same global memory.
struct BlockLog {
  std::uint32_t start = 0;                // the clock when the block began
  uint3 index{};                          // its blockIdx
  std::vector<std::uint32_t> published;   // per thread: its accesses below this clock are
                                          // published by a __threadfence() + atomic handshake
};

/// The checker of one OS thread's launches (one block at a time, as the emulator runs them).
class Checker {
 public:
  /// Starts a launch of `kernel` over `threads` threads a block with `dynamic_bytes` of dynamic
  /// shared memory at `dynamic`; reads whether checks are on.
  void begin_launch(const void* kernel, unsigned threads, const unsigned char* dynamic,
                    std::size_t dynamic_bytes);
  void end_launch();
  void begin_block(uint3 index);
  void end_block();

  /// The thread the scheduler resumes next.
  void set_thread(unsigned linear) { thread_ = linear; }

  /// Sync events: a __syncthreads opened; the lanes of `mask` in warp `warp` met.
  void barrier();
  void warp_sync(unsigned warp, unsigned mask, unsigned existing);

  /// An instrumented load or store of `bytes` at p by the running thread.
  void access(const void* p, std::size_t bytes, bool write, std::uintptr_t pc);
  /// A wmma load or store by the whole of warp `warp` (call warp_sync first).
  void warp_access(const void* p, std::size_t bytes, bool write, unsigned warp, SourceSite site);
  void atomic(const void* p, std::size_t bytes, SourceSite site);
  void fence();
  void async_started(const void* src, std::size_t src_bytes, const void* dst,
                     std::size_t dst_bytes, SourceSite site);
  void async_landed(const void* dst, std::size_t bytes, SourceSite site);

  /// Whether a check failed; the message, for the emulator to throw at the thread's next step.
  bool failed() const { return !error_.empty(); }
  std::string take_error();
  bool on() const { return on_; }

 private:
  struct Where {
    Region region = Region::None;
    ByteShadow* shadow = nullptr;  // of the first byte
  };
  Where locate(const void* p, std::size_t bytes, bool write, std::uintptr_t pc, bool warp_wide);
  void check_and_record(const Where& w, const void* p, std::size_t bytes, bool write,
                        AccessRecord cur);
  bool ordered(const AccessRecord& prev, const AccessRecord& cur) const;
  bool cross_block_ordered(const AccessRecord& prev, const AccessRecord& cur) const;
  const BlockLog* block_of(std::uint32_t clock) const;
  std::uintptr_t site_pc(SourceSite site);
  void race(Region region, const void* p, const AccessRecord& prev, bool prev_write,
            const AccessRecord& cur, bool cur_write, const char* why);
  void not_landed(const void* p, const AccessRecord& copy, const AccessRecord& cur, bool write);
  void out_of_bounds(const void* p, std::size_t bytes, bool write, const AccessRecord& cur);
  std::string who(const AccessRecord& r) const;
  std::string line(std::uintptr_t pc) const;
  std::string memory_text(Region region, const void* p) const;
  std::string kernel_name() const;
  std::string block_text(uint3 index) const;

  bool on_ = false;
  const void* kernel_ = nullptr;
  unsigned threads_ = 0;
  unsigned thread_ = 0;
  uint3 block_{};
  const unsigned char* dynamic_ = nullptr;
  std::size_t dynamic_bytes_ = 0;
  std::uint32_t launch_start_ = 0;
  std::uint32_t block_start_ = 0;
  std::uint32_t last_barrier_ = 0;
  std::vector<std::uint32_t> barriers_;                        // this block's barrier clocks
  std::vector<std::pair<unsigned, std::uint32_t>> fences_;     // (thread, clock)
  std::vector<std::pair<unsigned, std::uint32_t>> atomics_;    // (thread, clock)
  std::vector<std::uint32_t> first_atomic_;                    // per thread, 0: none yet
  bool acquired_by_block_ = false;  // an atomic, then a barrier: every thread may read
  std::vector<std::uint32_t> full_sync_;                       // per warp: last whole-warp sync
  std::vector<std::vector<std::uint32_t>> pair_sync_;          // per warp: [32 * a + b]
  std::vector<BlockLog> blocks_;                               // this launch's finished blocks
  std::vector<SourceSite> sites_;
  std::uintptr_t tls_lo_ = 0;
  std::size_t tls_bytes_ = 0;
  std::vector<ByteShadow> tls_shadow_;
  std::string error_;
};

/// The running launch's checker while a block runs with checks on, else nullptr (what every
/// instrumented access reads first).
extern thread_local constinit Checker* active_checker;

/// Device memory from the checker's arena, with a guard page before every allocation, so that an
/// access past either end of a buffer is seen as one; falls back to the heap if the arena is
/// full or could not be reserved. `region` is Global or DynamicShared.
void* checked_allocate(std::size_t bytes, Region region);
void checked_free(void* p) noexcept;

/// Names the device allocation that starts at p in the checker's messages ("query").
void name_device_memory(const void* p, const char* name);

/// Calls from the emulator's own (uninstrumented) code.
void checker_async_started(const void* src, std::size_t src_bytes, const void* dst,
                           std::size_t dst_bytes, SourceSite site);
void checker_async_landed(const void* dst, std::size_t bytes, SourceSite site);

}  // namespace simt::inline emu::detail

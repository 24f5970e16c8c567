// Fibers: a pooled stack plus a Boost.Context execution context, and the only ways to switch
// between them, each annotated for AddressSanitizer.
//
// Why the raw fcontext functions (make_fcontext / jump_fcontext) rather than
// boost::context::fiber: the fiber class switches stacks behind our back (once when it is
// created, and again to unwind a fiber that is destroyed unfinished). AddressSanitizer must be
// told about every switch, or it reports false stack errors; with the raw functions every
// switch is one of ours. (Debian builds Boost.Context without its own ASan support.)
//
// Switches are symmetric: any fiber can hand over to any other, the scheduler's own context
// included, so a thread that waits passes control straight to the next one to run instead of
// going through the scheduler (half the switches).
#pragma once

#include <boost/context/detail/fcontext.hpp>

#include <cstddef>
#include <vector>

namespace simt::inline emu::detail {

namespace ctx = boost::context::detail;

/// A fiber stack: [base, base + size), growing down from base + size, with a guard page below.
struct Stack {
  unsigned char* base = nullptr;
  std::size_t size = 0;
};

/// Stacks for one OS thread's fibers, mapped once and then reused, so that starting a block
/// costs no system call.
class StackPool {
 public:
  explicit StackPool(std::size_t stack_bytes);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  /// Returns a free stack, mapping a new one only when none is free.
  Stack acquire();
  /// Returns `stack` to the pool; the fiber that ran on it must have finished.
  void release(Stack stack);

 private:
  std::size_t bytes_;
  std::size_t page_;
  std::vector<Stack> free_;
  std::vector<Stack> mapped_;
};

/// One execution context: where it stopped, and its stack as AddressSanitizer must know it. A
/// default Fiber stands for the OS thread's own stack (the scheduler), whose bounds the first
/// switch away from it reports.
struct Fiber {
  ctx::fcontext_t context = nullptr;
  const void* stack_bottom = nullptr;
  std::size_t stack_size = 0;
  void* asan_fake_stack = nullptr;  // ASan's detect_stack_use_after_return frames, while away
};

/// Makes `fiber` run `entry` on `stack` the first time something switches to it; `entry` must
/// call enter_fiber first and end with finish_fiber.
void prepare_fiber(Fiber& fiber, Stack stack, void (*entry)(ctx::transfer_t));

/// Suspends the running context `from` and runs `to`; returns when some fiber switches back.
void switch_fiber(Fiber& from, Fiber& to);

/// Called first thing in a fiber's entry function: completes the switch that started it.
void enter_fiber(ctx::transfer_t from);

/// Leaves the finished fiber `from` for good and runs `to`.
[[noreturn]] void finish_fiber(Fiber& from, Fiber& to);

}  // namespace simt::inline emu::detail

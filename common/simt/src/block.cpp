// The scheduler loop and __syncthreads.
//
// A pass runs every runnable thread once, in the schedule's order; each runs until it waits (at
// a barrier or in a warp collective) or ends, and then hands over directly to the next runnable
// thread of the pass, the last one back to the scheduler. When a pass leaves nobody runnable,
// either every live thread waits at one and the same __syncthreads, and the barrier opens, or
// the block is stuck and the error says where each thread is.

#include "block.hpp"
#include "report.hpp"
#include "simt/sanitizer.hpp"

namespace simt::inline emu::detail {
namespace {

// Fibers use a few KiB; the rest of the stack is address space only (see StackPool). ASan's
// redzones make frames several times larger.
constexpr std::size_t kStackBytes = SIMT_HAS_ASAN ? 1024 * 1024 : 256 * 1024;

}  // namespace

Emulator::Emulator() : stacks(kStackBytes), block(stacks, checker) {}

Emulator& this_emulator() {
  thread_local Emulator emulator;
  return emulator;
}

thread_local constinit Emulator* launching_emulator = nullptr;

void Block::run(const KernelBody& body, uint3 index, dim3 dim, Schedule schedule, SplitMix64& rng,
                LaunchProbe& probe) {
  body_ = &body;
  probe_ = &probe;
  index_ = index;
  const unsigned n = dim.x * dim.y * dim.z;
  threads_.assign(n, KernelThread{});
  warps_.assign((n + 31) / 32, WarpLanes{});

  // Every path out of this function has finished every fiber first, so the stacks are free.
  struct ReleaseStacks {
    Block& block;
    ~ReleaseStacks() {
      for (KernelThread& t : block.threads_) {
        if (t.stack.base != nullptr) block.stacks_.release(t.stack);
      }
    }
  } release{*this};

  for (unsigned i = 0; i < n; ++i) {
    KernelThread& t = threads_[i];
    t.linear = i;
    t.index = {i % dim.x, (i / dim.x) % dim.y, i / (dim.x * dim.y)};
    t.stack = stacks_.acquire();
    prepare_fiber(t.fiber, t.stack, &Block::thread_entry);
    warps_[i / 32].exist |= 1u << (i % 32);
  }
  order_.resize(n);
  for (unsigned i = 0; i < n; ++i) order_[i] = schedule == Schedule::Reverse ? n - 1 - i : i;
  runnable_ = n;
  exited_ = 0;
  aborting_ = false;
  error_ = nullptr;
  checker_.begin_block(index);

  while (exited_ < n) {
    if (runnable_ == 0) {
      release_barrier_or_throw();
      continue;
    }
    if (schedule == Schedule::Random) shuffle(order_, rng);
    cursor_ = 0;
    if (KernelThread* first = next_in_pass()) resume(*first);  // returns when the pass ends
    if (error_) fail_with_thread_error();
  }
  checker_.end_block();
}

void Block::raise_checker_error() {
  if (checker_.failed()) throw KernelError(checker_.take_error());
}

void Block::barrier(SourceSite site) {
  KernelThread& t = *current_;
  if (aborting_) throw AbortBlock{};
  raise_checker_error();
  t.site = site;
  set_state(t, ThreadState::AtBarrier);
  wait(t);
}

void Block::thread_entry(ctx::transfer_t from) {
  enter_fiber(from);
  Block& block = launching_emulator->block;
  KernelThread& thread = *block.current_;  // set by whoever switched here
  block.run_thread();
  // Copies still in flight land when their thread ends, as they would on a GPU.
  if (!block.aborting_ && !block.error_) block.land_copies(thread, thread.committed + 1);
  block.set_state(thread, ThreadState::Exited);
  block.warps_[thread.linear / 32].exited |= 1u << (thread.linear % 32);
  KernelThread* next = block.next_in_pass();
  if (next != nullptr) block.activate(*next);
  finish_fiber(thread.fiber, next != nullptr ? next->fiber : block.scheduler_);
}

void Block::run_thread() noexcept {
  if (aborting_) return;  // the block failed before this thread ever ran
  try {
    body_->invoke(body_->frame);
    raise_checker_error();  // an access since the thread's last step into the emulator
  } catch (const AbortBlock&) {
    // Unwound on purpose: another thread's error is the one to report.
  } catch (...) {
    if (!error_) error_ = std::current_exception();
  }
}

KernelThread* Block::next_in_pass() {
  // After an error the pass stops, so the scheduler can unwind the block.
  if (error_ || aborting_) return nullptr;
  while (cursor_ < order_.size()) {
    KernelThread& t = threads_[order_[cursor_++]];
    if (t.state == ThreadState::Runnable) return &t;
  }
  return nullptr;
}

void Block::activate(KernelThread& thread) {
  current_ = &thread;
  threadIdx = thread.index;
  checker_.set_thread(thread.linear);
  probe_->thread.store(thread.linear, std::memory_order_relaxed);
  probe_->file.store(thread.site.file, std::memory_order_relaxed);
  probe_->line.store(thread.site.line, std::memory_order_relaxed);
  probe_->switches.store(probe_->switches.load(std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
}

void Block::resume(KernelThread& thread) {
  activate(thread);
  switch_fiber(scheduler_, thread.fiber);
  current_ = nullptr;
}

void Block::wait(KernelThread& thread) {
  KernelThread* next = next_in_pass();
  if (next != nullptr) activate(*next);
  switch_fiber(thread.fiber, next != nullptr ? next->fiber : scheduler_);
  if (aborting_) throw AbortBlock{};
}

void Block::set_state(KernelThread& thread, ThreadState state) {
  if (thread.state == ThreadState::Runnable) --runnable_;
  if (state == ThreadState::Runnable) ++runnable_;
  if (state == ThreadState::Exited) ++exited_;
  thread.state = state;
}

void Block::release_barrier_or_throw() {
  const KernelThread* first = nullptr;
  bool one_site = true;
  bool in_warp = false;
  for (const KernelThread& t : threads_) {
    if (t.state == ThreadState::AtWarp) in_warp = true;
    if (t.state != ThreadState::AtBarrier) continue;
    if (first == nullptr) {
      first = &t;
    } else if (!same_site(first->site, t.site)) {
      one_site = false;
    }
  }
  // The barrier opens only if every thread of the block waits at it: one that has exited will
  // never arrive (on a GPU that is undefined behaviour, often a hang).
  if (first != nullptr && one_site && !in_warp && exited_ == 0) {
    checker_.barrier();
    for (KernelThread& t : threads_) t.state = ThreadState::Runnable;
    runnable_ = static_cast<unsigned>(threads_.size());
    return;
  }
  std::string message = describe_stall();  // before abort_all changes the states
  abort_all();
  throw KernelError(message);
}

void Block::abort_all() noexcept {
  aborting_ = true;
  // A waiting thread resumes into AbortBlock and unwinds; one that never ran returns at once.
  // Either way one resume ends it, since every later barrier throws before it can wait, and
  // next_in_pass sends it straight back here.
  for (KernelThread& t : threads_) {
    if (t.state != ThreadState::Exited) resume(t);
  }
}

void Block::fail_with_thread_error() {
  const std::exception_ptr error = error_;
  abort_all();
  std::rethrow_exception(error);
}

// ---- The entry points behind the kernel-side macros --------------------------------------

namespace {

Emulator& emulator_of_running_thread(const char* what, SourceSite site) {
  Emulator* emulator = launching_emulator;
  if (emulator == nullptr || emulator->block.running() == nullptr) {
    throw KernelError(std::string("simt: ") + what + " at " + site_text(site) +
                      " was called outside a kernel thread");
  }
  return *emulator;
}

}  // namespace

void syncthreads(SourceSite site) {
  emulator_of_running_thread("__syncthreads", site).block.barrier(site);
}

std::uint64_t warp_collective(WarpOp op, unsigned mask, std::uint64_t value, int operand, int width,
                              SourceSite site) {
  return emulator_of_running_thread("a warp collective", site)
      .block.collective(op, mask, value, operand, width, site);
}

void wmma_collective(WarpOp op, const WmmaCall& call, SourceSite site) {
  emulator_of_running_thread(op_name(op), site).block.wmma(op, call, site);
}

unsigned char* dynamic_shared(SourceSite site) {
  return emulator_of_running_thread("SIMT_DYNAMIC_SHARED", site).dynamic_shared;
}

}  // namespace simt::inline emu::detail

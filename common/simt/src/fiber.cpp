// Stack pool and annotated context switches (see fiber.hpp for why they are done by hand).
#include "fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <new>

#include "simt/sanitizer.hpp"

#if SIMT_HAS_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace simt::inline emu::detail {
namespace {

// AddressSanitizer keeps its own idea of which stack is running: it needs it to unwind for a
// report, to unpoison a stack when an exception leaves frames behind, and to keep the "fake
// stacks" of detect_stack_use_after_return apart. start_* announces a switch to a stack,
// finish_* confirms the arrival and learns the stack we came from.
inline void asan_start_switch(void** fake_stack_save, const void* bottom, std::size_t size) {
#if SIMT_HAS_ASAN
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#else
  (void)fake_stack_save, (void)bottom, (void)size;
#endif
}

inline void asan_finish_switch(void* fake_stack_save, const void** bottom_old,
                               std::size_t* size_old) {
#if SIMT_HAS_ASAN
  __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
#else
  (void)fake_stack_save, (void)bottom_old, (void)size_old;
#endif
}

}  // namespace

StackPool::StackPool(std::size_t stack_bytes)
    : bytes_(stack_bytes), page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {}

StackPool::~StackPool() {
  for (const Stack& s : mapped_) munmap(s.base - page_, s.size + page_);
}

Stack StackPool::acquire() {
  if (!free_.empty()) {
    Stack s = free_.back();
    free_.pop_back();
#if SIMT_HAS_ASAN
    // The last fiber on this stack ended inside its entry function, whose frame never returned,
    // so its redzones are still poisoned; a new fiber starts from a clean stack.
    ASAN_UNPOISON_MEMORY_REGION(s.base, s.size);
#endif
    return s;
  }
  // MAP_NORESERVE: a fiber touches a few pages of its stack; the rest costs address space only.
  void* p = mmap(nullptr, bytes_ + page_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  // The lowest page is a guard: a kernel thread that overflows its stack faults at once instead
  // of overwriting its neighbour's.
  mprotect(p, page_, PROT_NONE);
  Stack s{static_cast<unsigned char*>(p) + page_, bytes_};
  mapped_.push_back(s);
  return s;
}

void StackPool::release(Stack stack) {
  free_.push_back(stack);
}

namespace {

// Every jump passes the context it leaves as its data; the side that arrives stores where that
// context stopped, so it can be resumed later, and (for the OS thread's stack, which only ASan
// can measure) learns its bounds.
void arrived(ctx::transfer_t from, void* my_fake_stack) {
  Fiber& previous = *static_cast<Fiber*>(from.data);
  previous.context = from.fctx;
  asan_finish_switch(my_fake_stack, &previous.stack_bottom, &previous.stack_size);
}

}  // namespace

void prepare_fiber(Fiber& fiber, Stack stack, void (*entry)(ctx::transfer_t)) {
  fiber.context = ctx::make_fcontext(stack.base + stack.size, stack.size, entry);
  fiber.stack_bottom = stack.base;
  fiber.stack_size = stack.size;
  fiber.asan_fake_stack = nullptr;
}

void switch_fiber(Fiber& from, Fiber& to) {
  asan_start_switch(&from.asan_fake_stack, to.stack_bottom, to.stack_size);
  const ctx::transfer_t back = ctx::jump_fcontext(to.context, &from);
  arrived(back, from.asan_fake_stack);
}

void enter_fiber(ctx::transfer_t from) {
  arrived(from, nullptr);  // a new fiber has no fake stack to restore
}

void finish_fiber(Fiber& from, Fiber& to) {
  // nullptr: `from` never runs again, so ASan may free its fake stack.
  asan_start_switch(nullptr, to.stack_bottom, to.stack_size);
  ctx::jump_fcontext(to.context, &from);
  std::abort();  // a finished fiber is never resumed
}

}  // namespace simt::inline emu::detail

// Asynchronous copies: __pipeline_memcpy_async, __pipeline_commit, __pipeline_wait_prior.
//
// A copy reads its source when it starts (a GPU may read it any time before the wait; a kernel
// that changes the source meanwhile is wrong on both) and writes its destination only when its
// thread waits for its group, so a read of the destination before then sees the old bytes, as
// it may on a GPU. Groups are numbered per thread: copies started after the thread's k-th commit
// belong to group k; __pipeline_wait_prior(n) lands every group below committed - n.
#include <cstring>
#include <string>

#include "block.hpp"
#include "checker.hpp"
#include "report.hpp"

namespace simt::inline emu::detail {
namespace {

KernelThread& running_thread(const char* what, SourceSite site) {
  Emulator* emulator = launching_emulator;
  if (emulator == nullptr || emulator->block.running() == nullptr) {
    throw KernelError(std::string("simt: ") + what + " at " + site_text(site) +
                      " was called outside a kernel thread");
  }
  emulator->block.raise_checker_error();
  return *emulator->block.running();
}

}  // namespace

void Block::land_copies(KernelThread& thread, std::uint32_t group) {
  std::size_t landed = 0;
  while (landed < thread.copies.size() && thread.copies[landed].group < group) {
    const AsyncCopy& copy = thread.copies[landed];
    std::memcpy(copy.dst, copy.bytes, copy.size);
    checker_async_landed(copy.dst, copy.size, copy.site);
    ++landed;
  }
  thread.copies.erase(thread.copies.begin(),
                      thread.copies.begin() + static_cast<std::ptrdiff_t>(landed));
}

void pipeline_memcpy_async(SourceSite site, void* dst, const void* src, std::size_t size,
                           std::size_t zfill) {
  KernelThread& thread = running_thread("__pipeline_memcpy_async", site);
  const auto fail = [&](const std::string& problem) {
    throw KernelError(launching_emulator->block.describe_running() +
                      ": __pipeline_memcpy_async at " + site_text(site) + ": " + problem);
  };
  if (size != 4 && size != 8 && size != 16) {
    fail("size — expected 4, 8 or 16 bytes, got " + std::to_string(size));
  }
  if (zfill > size) {
    fail("zfill — expected at most the size (" + std::to_string(size) + " bytes), got " +
         std::to_string(zfill));
  }
  const auto misaligned = [&](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % size; };
  if (misaligned(dst) != 0) {
    fail("dst — expected a pointer aligned to the size (" + std::to_string(size) +
         " bytes), got one " + std::to_string(misaligned(dst)) + " bytes past such a boundary");
  }
  if (misaligned(src) != 0) {
    fail("src — expected a pointer aligned to the size (" + std::to_string(size) +
         " bytes), got one " + std::to_string(misaligned(src)) + " bytes past such a boundary");
  }
  AsyncCopy copy;
  copy.dst = static_cast<unsigned char*>(dst);
  copy.size = static_cast<std::uint8_t>(size);
  copy.group = thread.committed;
  copy.site = site;
  const std::size_t copied = size - zfill;
  checker_async_started(src, copied, dst, size, site);
  launching_emulator->block.raise_checker_error();
  if (copied > 0) std::memcpy(copy.bytes, src, copied);
  thread.copies.push_back(copy);
}

void pipeline_commit(SourceSite site) {
  ++running_thread("__pipeline_commit", site).committed;
}

void pipeline_wait_prior(SourceSite site, std::size_t prior) {
  KernelThread& thread = running_thread("__pipeline_wait_prior", site);
  if (prior >= thread.committed) return;  // that many groups are in flight at most
  launching_emulator->block.land_copies(
      thread, thread.committed - static_cast<std::uint32_t>(prior));
}

}  // namespace simt::inline emu::detail

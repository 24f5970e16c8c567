// The memory checker: races on shared and global memory and accesses past the ends of device
// buffers and dynamic shared memory, found while the kernel runs on the emulator.
//
// How it sees the accesses. The kernels' translation units (each SIMT lab's given/launchers.cpp
// and the emulator's test_checker.cpp) are compiled with GCC's -fsanitize=thread
// instrumentation but linked without its runtime: every load and store of theirs calls one of
// the __tsan_read*/__tsan_write* hooks at the end of this file, which ask the running launch's
// checker. Everything else (the emulator, host code, the tests' other files) is not
// instrumented and costs nothing. The checker looks only at three ranges of addresses, a
// compare each: the arena of device memory and dynamic shared memory, and the OS thread's
// thread-local block (where `__shared__` variables live, see dialect.hpp); the fibers' stacks
// and the heap are never looked at.
//
// Out of bounds. Device buffers and each launch's dynamic shared memory come from one arena
// reserved at start-up; every allocation starts on a page of its own, after a page nobody owns.
// A table of valid bytes per page says whether an access lies inside a live allocation; one
// that does not is named by the nearest allocation: "12 bytes past the end of key_cache".
//
// Races. Every byte of watched memory has a shadow: the last write and the last two reads by
// different threads, each with the checker's clock at the time, the thread and the return
// address of the access (turned into file:line by addr2line, only when reporting). The clock
// ticks at every sync event. Two accesses of one block are ordered when they are by the same
// thread, when a __syncthreads opened after the first one, or, for two lanes of one warp, when
// a warp collective both took part in (__syncwarp, a shuffle or vote, a wmma call) completed
// after it. Across blocks of one launch (global memory only) the only synchronisation is the
// __threadfence() + atomic handshake of a fused merge: the earlier block's access is published
// if a __threadfence() after it (by its thread, or by any thread after a barrier that follows
// it) is followed by an atomic in that block, and the later access is acquired if its thread,
// or its block before a barrier, did an atomic first. Launches are ordered with each other.
//
// A failed check cannot throw from the hook (the instrumented code expects it not to), so it
// records the message; the thread's next step into the emulator (a barrier, a collective, an
// async-copy call or its end) throws it as a KernelError.
#include "checker.hpp"

#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "block.hpp"
#include "report.hpp"
#include "simt/sanitizer.hpp"

namespace simt::inline emu::detail {
namespace {

constexpr std::uint8_t kAtomic = 1;
constexpr std::uint8_t kWarpWide = 2;  // thread holds the warp: a wmma collective's access
constexpr std::uint8_t kPending = 4;   // an asynchronous copy that has not landed
constexpr std::uintptr_t kSiteTag = std::uintptr_t{1} << 63;

constexpr std::size_t kPage = 4096;
// Arena::page_valid: valid bytes in the low 16 bits, the Region above them, and a flag set by
// the first checked write to the page (until then its shadow holds nothing of this allocation).
constexpr std::uint32_t kRegionBits = 0xFFu << 16;
constexpr std::uint32_t kShadowWritten = 1u << 31;
// One shadow entry per 2 bytes: the smallest element the labs share between threads is a
// 16-bit __half, and two threads writing neighbouring bytes of one granule would be reported.
constexpr unsigned kGranuleShift = 1;

// The number of granules that [p, p + bytes) touches.
std::size_t granules(const void* p, std::size_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return ((a + bytes - 1) >> kGranuleShift) - (a >> kGranuleShift) + 1;
}
// Address space only: pages are backed when touched, and the shadow is 48 bytes per byte.
constexpr std::size_t kArenaBytes = std::size_t{2} << 30;

// The clock: one for the process, so that records of any launch compare; 0 means "never".
std::atomic<std::uint32_t> g_clock{1};
std::uint32_t now() {
  return g_clock.load(std::memory_order_relaxed);
}
std::uint32_t tick() {
  return g_clock.fetch_add(1, std::memory_order_relaxed) + 1;
}

struct Allocation {
  std::size_t bytes = 0;
  Region region = Region::Global;
  std::string name;
};

// The arena of checked device memory. page_valid[p] is how many bytes from page p's start
// belong to a live allocation (allocations start on page boundaries, so it is a prefix), with
// the region in the bits above 16.
struct Arena {
  Arena() {
    if (SIMT_HAS_ASAN) return;
    void* data = mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void* shadow = mmap(nullptr, (kArenaBytes >> kGranuleShift) * sizeof(ByteShadow),
                        PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void* pages = mmap(nullptr, kArenaBytes / kPage * sizeof(std::uint32_t),
                       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (data == MAP_FAILED || shadow == MAP_FAILED || pages == MAP_FAILED) return;  // unchecked
    base = reinterpret_cast<std::uintptr_t>(data);
    this->shadow = static_cast<ByteShadow*>(shadow);
    page_valid = static_cast<std::uint32_t*>(pages);
    bump = kPage;  // the first allocation has a guard page before it too
  }
  std::uintptr_t base = 0;  // 0: the arena could not be reserved
  ByteShadow* shadow = nullptr;
  std::uint32_t* page_valid = nullptr;
  std::mutex mutex;
  std::size_t bump = 0;  // offset of the first page never handed out
  std::multimap<std::size_t, std::size_t> free_spans;  // pages -> offset of a free span
  std::map<std::uintptr_t, Allocation> live;          // by start address

  bool contains(std::uintptr_t a) const { return a - base < kArenaBytes; }
};

// Never destroyed: a device buffer owned by a static object (a benchmark's prepared session)
// is freed during exit, possibly after this file's statics would have been destroyed.
Arena& arena() {
  static Arena& instance = *new Arena;
  return instance;
}

// ---- Settings ----------------------------------------------------------------------------

struct CheckSetting {
  std::mutex mutex;
  bool read_env = false;
  bool on = true;
};
CheckSetting& check_setting() {
  static CheckSetting& s = *new CheckSetting;  // never destroyed, as arena()
  return s;
}

// ---- Source lines ------------------------------------------------------------------------

struct ObjectOf {
  std::uintptr_t pc;
  std::string file;
  std::uintptr_t offset = 0;
};

// Returns addr2line's "function\nfile:line" pairs for `pc` (innermost inlined frame first).
std::vector<std::pair<std::string, std::string>> frames_of(std::uintptr_t pc) {
  ObjectOf object{pc, {}, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto& o = *static_cast<ObjectOf*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && o.pc >= lo && o.pc < lo + ph.p_memsz) {
            o.file = info->dlpi_name;
            if (o.file.empty()) {  // the main program: its own path (addr2line's /proc/self
              char path[4096];     // would be addr2line)
              const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
              o.file = n > 0 ? std::string(path, static_cast<std::size_t>(n)) : "";
            }
            o.offset = o.pc - info->dlpi_addr;
            return 1;
          }
        }
        return 0;
      },
      &object);
  std::vector<std::pair<std::string, std::string>> frames;
  if (object.file.empty()) return frames;
  char command[4200];
  std::snprintf(command, sizeof command, "addr2line -C -f -i -e '%s' 0x%" PRIxPTR " 2>/dev/null",
                object.file.c_str(), object.offset);
  FILE* out = popen(command, "r");
  if (out == nullptr) return frames;
  char function[4096];
  char place[4096];
  while (std::fgets(function, sizeof function, out) != nullptr &&
         std::fgets(place, sizeof place, out) != nullptr) {
    std::string f = function, p = place;
    while (!f.empty() && f.back() == '\n') f.pop_back();
    while (!p.empty() && p.back() == '\n') p.pop_back();
    if (const auto d = p.find(" (discriminator"); d != std::string::npos) p.erase(d);
    frames.push_back({f, p});
  }
  pclose(out);
  return frames;
}

std::string base_name(const std::string& path) {
  return path.substr(path.find_last_of('/') + 1);
}

// "query (4096 bytes)", "dynamic shared memory of gqa_decode_kernel (8192 bytes)".
std::string allocation_text(const std::pair<const std::uintptr_t, Allocation>& e,
                            const std::string& kernel) {
  std::string name = e.second.name;
  if (e.second.region == Region::DynamicShared) name = "dynamic shared memory of " + kernel;
  if (name.empty()) name = "an unnamed device buffer";
  return name + " (" + std::to_string(e.second.bytes) + " bytes)";
}

std::string hex(std::uintptr_t v) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%" PRIxPTR, v);
  return text;
}

// The thread-local block of the main program, where every `__shared__` variable is.
std::pair<std::uintptr_t, std::size_t> static_tls_block() {
#if defined(__x86_64__)
  std::pair<std::size_t, std::size_t> size_align{0, 1};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        if (info->dlpi_tls_modid != 1) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type == PT_TLS) {
            *static_cast<std::pair<std::size_t, std::size_t>*>(data) = {
                info->dlpi_phdr[i].p_memsz, info->dlpi_phdr[i].p_align};
          }
        }
        return 1;
      },
      &size_align);
  // x86-64 (TLS variant II): the executable's block ends at the thread pointer.
  const auto align = std::max<std::size_t>(size_align.second, 1);
  const std::size_t bytes = (size_align.first + align - 1) / align * align;
  std::uintptr_t tp = 0;
  asm volatile("mov %%fs:0, %0" : "=r"(tp));  // the thread pointer
  const auto lo = tp - bytes;
  // Trust it only if the emulator's own thread-locals lie inside.
  const auto probe = reinterpret_cast<std::uintptr_t>(&threadIdx);
  if (bytes == 0 || probe < lo || probe >= tp) return {0, 0};
  return {lo, bytes};
#else
  return {0, 0};  // elsewhere static __shared__ memory goes unchecked
#endif
}

}  // namespace

thread_local constinit Checker* active_checker = nullptr;

// ---- Allocation --------------------------------------------------------------------------

void* checked_allocate(std::size_t bytes, Region region) {
  if (bytes == 0) return nullptr;
  Arena& a = arena();
  const std::size_t pages = (bytes + kPage - 1) / kPage;
  // Under AddressSanitizer the heap's red zones do this job, and ASan knows nothing of the arena.
  if (!SIMT_HAS_ASAN && a.base != 0 && bytes <= kArenaBytes / 4) {
    const std::lock_guard lock(a.mutex);
    std::size_t offset = 0;
    // A span is its pages plus the guard page before them.
    if (auto it = a.free_spans.lower_bound(pages + 1); it != a.free_spans.end()) {
      const std::size_t span = it->first;
      offset = it->second;
      a.free_spans.erase(it);
      if (span > pages + 1) a.free_spans.insert({span - pages - 1, offset + (pages + 1) * kPage});
    } else if (a.bump + (pages + 1) * kPage <= kArenaBytes) {
      offset = a.bump;
      a.bump += (pages + 1) * kPage;
    }
    if (offset != 0) {
      const std::size_t start = offset + kPage;
      const std::size_t first_page = start / kPage;
      for (std::size_t i = 0; i < pages; ++i) {
        const std::size_t valid = std::min(kPage, bytes - i * kPage);
        a.page_valid[first_page + i] =
            static_cast<std::uint32_t>(valid) | static_cast<std::uint32_t>(region) << 16;
      }
      a.live[a.base + start] = Allocation{bytes, region, {}};
      return reinterpret_cast<void*>(a.base + start);
    }
  }
  void* p = nullptr;
  // 256-byte alignment, as cudaMalloc guarantees.
  if (posix_memalign(&p, 256, bytes) != 0) throw std::bad_alloc();
  return p;
}

void checked_free(void* p) noexcept {
  if (p == nullptr) return;
  Arena& a = arena();
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  if (a.base == 0 || !a.contains(address)) {
    std::free(p);
    return;
  }
  const std::lock_guard lock(a.mutex);
  const auto it = a.live.find(address);
  if (it == a.live.end()) return;
  const std::size_t pages = (it->second.bytes + kPage - 1) / kPage;
  const std::size_t start = address - a.base;
  for (std::size_t i = 0; i < pages; ++i) a.page_valid[start / kPage + i] = 0;
  // The shadow stays: its records are older than any later launch, which ignores them.
  a.live.erase(it);
  a.free_spans.insert({pages + 1, start - kPage});
}

void name_device_memory(const void* p, const char* name) {
  Arena& a = arena();
  const std::lock_guard lock(a.mutex);
  const auto it = a.live.find(reinterpret_cast<std::uintptr_t>(p));
  if (it != a.live.end()) it->second.name = name;
}

// ---- Launches and blocks -----------------------------------------------------------------

void Checker::begin_launch(const void* kernel, unsigned threads, const unsigned char* dynamic,
                           std::size_t dynamic_bytes) {
  on_ = memory_checks();
  kernel_ = kernel;
  threads_ = threads;
  dynamic_ = dynamic;
  dynamic_bytes_ = dynamic_bytes;
  launch_start_ = tick();
  blocks_.clear();
  error_.clear();
  if (on_ && tls_lo_ == 0) {
    const auto [lo, bytes] = static_tls_block();
    tls_lo_ = lo;
    tls_bytes_ = bytes;
    tls_shadow_.assign((bytes >> kGranuleShift) + 1, ByteShadow{});
  }
}

void Checker::end_launch() {
  active_checker = nullptr;
  blocks_.clear();
}

void Checker::begin_block(uint3 index) {
  block_ = index;
  block_start_ = tick();
  last_barrier_ = 0;
  barriers_.clear();
  fences_.clear();
  atomics_.clear();
  first_atomic_.assign(threads_, 0);
  acquired_by_block_ = false;
  full_sync_.assign((threads_ + 31) / 32, 0);
  pair_sync_.assign((threads_ + 31) / 32, {});
  active_checker = on_ ? this : nullptr;
}

void Checker::end_block() {
  if (!on_) return;
  active_checker = nullptr;
  BlockLog log;
  log.start = block_start_;
  log.index = block_;
  log.published.assign(threads_, 0);
  for (const auto& [f, fence_clock] : fences_) {
    const bool followed = std::any_of(atomics_.begin(), atomics_.end(), [&](const auto& at) {
      if (at.second < fence_clock) return false;
      if (at.first == f) return true;
      return std::any_of(barriers_.begin(), barriers_.end(),
                         [&](std::uint32_t b) { return b > fence_clock && b <= at.second; });
    });
    if (!followed) continue;
    log.published[f] = std::max(log.published[f], fence_clock + 1);
    std::uint32_t before = 0;  // the last barrier before the fence: everybody's earlier accesses
    for (const std::uint32_t b : barriers_) {
      if (b <= fence_clock) before = std::max(before, b);
    }
    for (auto& limit : log.published) limit = std::max(limit, before);
  }
  blocks_.push_back(std::move(log));
}

void Checker::barrier() {
  if (!on_) return;
  last_barrier_ = tick();
  barriers_.push_back(last_barrier_);
  if (!atomics_.empty()) acquired_by_block_ = true;
}

void Checker::warp_sync(unsigned warp, unsigned mask, unsigned existing) {
  if (!on_) return;
  const std::uint32_t clock = tick();
  if ((mask & existing) == existing) {
    full_sync_[warp] = clock;
    return;
  }
  auto& pairs = pair_sync_[warp];
  if (pairs.empty()) pairs.assign(32 * 32, 0);
  for (unsigned a = 0; a < 32; ++a) {
    if ((mask >> a & 1u) == 0) continue;
    for (unsigned b = 0; b < 32; ++b) {
      if ((mask >> b & 1u) != 0) pairs[32 * a + b] = clock;
    }
  }
}

std::string Checker::take_error() {
  std::string e;
  e.swap(error_);
  return e;
}

// ---- The accesses ------------------------------------------------------------------------

Checker::Where Checker::locate(const void* p, std::size_t bytes, bool write, std::uintptr_t pc,
                               bool warp_wide) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  Arena& a = arena();
  if (a.contains(address)) {
    const std::size_t offset = address - a.base;
    std::uint32_t& info = a.page_valid[offset / kPage];
    const std::size_t valid = info & 0xFFFFu;
    const bool straddles = offset % kPage + bytes > kPage;
    bool inside = offset % kPage + bytes <= valid;
    if (!inside && straddles && valid == kPage) {
      // Straddles two pages: the next one must hold the rest.
      const std::uint32_t next = a.page_valid[offset / kPage + 1];
      inside = (next & 0xFFFFu) >= offset % kPage + bytes - kPage &&
               (next & kRegionBits) == (info & kRegionBits);
    }
    if (!inside) {
      AccessRecord cur{now(), static_cast<std::uint16_t>(thread_),
                       static_cast<std::uint8_t>(warp_wide ? kWarpWide : 0), 0, pc};
      out_of_bounds(p, bytes, write, cur);
      return {};
    }
    const auto region = static_cast<Region>((info & kRegionBits) >> 16);
    if (write) {
      info |= kShadowWritten;
      if (straddles) a.page_valid[offset / kPage + 1] |= kShadowWritten;
    } else if (region == Region::Global && (info & kShadowWritten) == 0 && !straddles) {
      // No kernel has written this page since it was allocated (the caches, the query): there
      // is no write to check the read against, and global reads are not recorded (below).
      return {region, nullptr};
    }
    return {region, a.shadow + (offset >> kGranuleShift)};
  }
  if (address - tls_lo_ < tls_bytes_) {
    // The emulator's built-in variables are read by everyone and written by the scheduler.
    const auto builtin = [&](const void* v, std::size_t n) {
      return address - reinterpret_cast<std::uintptr_t>(v) < n;
    };
    if (builtin(&threadIdx, sizeof threadIdx) || builtin(&blockIdx, sizeof blockIdx) ||
        builtin(&blockDim, sizeof blockDim) || builtin(&gridDim, sizeof gridDim)) {
      return {};
    }
    if (address - tls_lo_ + bytes > tls_bytes_) return {};
    return {Region::StaticShared, tls_shadow_.data() + ((address - tls_lo_) >> kGranuleShift)};
  }
  return {};
}

bool Checker::ordered(const AccessRecord& prev, const AccessRecord& cur) const {
  const bool prev_wide = (prev.flags & kWarpWide) != 0;
  const bool cur_wide = (cur.flags & kWarpWide) != 0;
  if (!prev_wide && !cur_wide && prev.thread == cur.thread) return true;
  if (last_barrier_ > prev.clock) return true;
  const unsigned prev_warp = prev_wide ? prev.thread : prev.thread / 32u;
  const unsigned cur_warp = cur_wide ? cur.thread : cur.thread / 32u;
  if (prev_warp != cur_warp) return false;
  // A lane's access after a wmma call of its warp comes after the call's loads and stores.
  if (prev_wide) return true;
  // Before the call's own accesses, only a warp sync orders a lane's earlier access (the
  // emulator ticks the wmma call's own sync after them): __syncwarp(), a shuffle, a vote.
  if (cur_wide) return full_sync_[cur_warp] > prev.clock;
  if (full_sync_[cur_warp] > prev.clock) return true;
  const auto& pairs = pair_sync_[cur_warp];
  return !pairs.empty() && pairs[32 * (prev.thread % 32u) + cur.thread % 32u] > prev.clock;
}

const BlockLog* Checker::block_of(std::uint32_t clock) const {
  const auto it = std::upper_bound(blocks_.begin(), blocks_.end(), clock,
                                   [](std::uint32_t c, const BlockLog& b) { return c < b.start; });
  return it == blocks_.begin() ? nullptr : &*std::prev(it);
}

bool Checker::cross_block_ordered(const AccessRecord& prev, const AccessRecord& cur) const {
  const bool prev_atomic = (prev.flags & kAtomic) != 0;
  const bool cur_atomic = (cur.flags & kAtomic) != 0;
  bool published = prev_atomic;
  if (!published) {
    const BlockLog* log = block_of(prev.clock);
    const unsigned t = (prev.flags & kWarpWide) != 0 ? prev.thread * 32u : prev.thread;
    published = log != nullptr && t < log->published.size() && prev.clock < log->published[t];
  }
  const bool acquired = cur_atomic || acquired_by_block_ ||
                        (cur.thread < first_atomic_.size() && first_atomic_[cur.thread] != 0 &&
                         (cur.flags & kWarpWide) == 0);
  return published && acquired;
}

void Checker::check_and_record(const Where& w, const void* p, std::size_t bytes, bool write,
                               AccessRecord cur) {
  const std::uint32_t horizon = w.region == Region::Global ? launch_start_ : block_start_;
  // Reads of global memory are checked against its writes but not recorded: a write after
  // another thread's read of global memory goes unseen, and the inputs (megabytes of cache)
  // cost no shadow. Shared memory records both.
  const bool record_reads = w.region != Region::Global;
  const auto conflict = [&](const AccessRecord& prev, bool prev_write) -> const char* {
    if (prev.clock < horizon || prev.clock == 0) return nullptr;
    if (prev.clock < block_start_) {  // another block of this launch (global memory only)
      if ((prev.flags & kAtomic) != 0 && (cur.flags & kAtomic) != 0) return nullptr;
      return cross_block_ordered(prev, cur) ? nullptr : "block";
    }
    if ((prev.flags & kAtomic) != 0 && (cur.flags & kAtomic) != 0) return nullptr;
    (void)prev_write;
    return ordered(prev, cur) ? nullptr : "thread";
  };
  const auto first = reinterpret_cast<std::uintptr_t>(p) >> kGranuleShift << kGranuleShift;
  const std::size_t n = granules(p, bytes);
  for (std::size_t i = 0; i < n; ++i) {
    ByteShadow& s = w.shadow[i];
    const void* byte = reinterpret_cast<const void*>(first + (i << kGranuleShift));
    if ((s.write.flags & kPending) != 0 && s.write.clock >= block_start_) {
      not_landed(byte, s.write, cur, write);
      return;
    }
    if (const char* why = conflict(s.write, true)) {
      race(w.region, byte, s.write, true, cur, write, why);
      return;
    }
    if (write) {
      for (const AccessRecord& r : s.read) {
        if (const char* why = conflict(r, false)) {
          race(w.region, byte, r, false, cur, write, why);
          return;
        }
      }
      s.write = cur;
      s.read[0] = s.read[1] = AccessRecord{};
    } else if (!record_reads) {
      continue;
    } else if (s.read[0].thread == cur.thread && s.read[0].flags == cur.flags) {
      s.read[0] = cur;
    } else {
      s.read[1] = s.read[0];
      s.read[0] = cur;
    }
  }
}

void Checker::access(const void* p, std::size_t bytes, bool write, std::uintptr_t pc) {
  if (failed()) return;
  const Where w = locate(p, bytes, write, pc, false);
  if (w.shadow == nullptr) return;
  check_and_record(w, p, bytes, write,
                   AccessRecord{now(), static_cast<std::uint16_t>(thread_), 0, 0, pc});
}

void Checker::warp_access(const void* p, std::size_t bytes, bool write, unsigned warp,
                          SourceSite site) {
  if (failed()) return;
  const std::uintptr_t pc = site_pc(site);
  const unsigned saved = thread_;
  thread_ = warp;  // a warp-wide record names its warp
  const Where w = locate(p, bytes, write, pc, true);
  if (w.shadow != nullptr) {
    check_and_record(w, p, bytes, write,
                     AccessRecord{now(), static_cast<std::uint16_t>(warp), kWarpWide, 0, pc});
  }
  thread_ = saved;
}

void Checker::atomic(const void* p, std::size_t bytes, SourceSite site) {
  if (failed()) return;
  const std::uintptr_t pc = site_pc(site);
  const std::uint32_t clock = now();
  atomics_.push_back({thread_, clock});
  if (thread_ < first_atomic_.size() && first_atomic_[thread_] == 0) first_atomic_[thread_] = clock;
  const Where w = locate(p, bytes, true, pc, false);
  if (w.shadow == nullptr) return;
  check_and_record(w, p, bytes, true,
                   AccessRecord{clock, static_cast<std::uint16_t>(thread_), kAtomic, 0, pc});
}

void Checker::fence() {
  fences_.push_back({thread_, now()});
}

void Checker::async_started(const void* src, std::size_t src_bytes, const void* dst,
                            std::size_t dst_bytes, SourceSite site) {
  if (failed()) return;
  const std::uintptr_t pc = site_pc(site);
  const AccessRecord cur{now(), static_cast<std::uint16_t>(thread_), 0, 0, pc};
  if (src_bytes > 0) {
    const Where from = locate(src, src_bytes, false, pc, false);
    if (from.shadow != nullptr) check_and_record(from, src, src_bytes, false, cur);
  }
  const Where to = locate(dst, dst_bytes, true, pc, false);
  if (failed() || to.shadow == nullptr) return;
  check_and_record(to, dst, dst_bytes, true, cur);  // as the write it will be
  if (failed()) return;
  for (std::size_t i = 0; i < granules(dst, dst_bytes); ++i) to.shadow[i].write.flags |= kPending;
}

void Checker::async_landed(const void* dst, std::size_t bytes, SourceSite site) {
  if (failed()) return;
  const std::uintptr_t pc = site_pc(site);
  const Where to = locate(dst, bytes, true, pc, false);
  if (to.shadow == nullptr) return;
  for (std::size_t i = 0; i < granules(dst, bytes); ++i) {
    to.shadow[i].write = AccessRecord{now(), static_cast<std::uint16_t>(thread_), 0, 0, pc};
    to.shadow[i].read[0] = to.shadow[i].read[1] = AccessRecord{};
  }
}

std::uintptr_t Checker::site_pc(SourceSite site) {
  for (std::size_t i = 0; i < sites_.size(); ++i) {
    if (same_site(sites_[i], site)) return kSiteTag | i;
  }
  sites_.push_back(site);
  return kSiteTag | (sites_.size() - 1);
}

// ---- Reports -----------------------------------------------------------------------------

std::string Checker::line(std::uintptr_t pc) const {
  if ((pc & kSiteTag) != 0) return site_text(sites_[pc & ~kSiteTag]);
  const auto frames = frames_of(pc - 1);  // the call instruction, not the one after it
  if (frames.empty() || frames.front().second.rfind("??", 0) == 0) return "address " + hex(pc);
  std::string text = base_name(frames.front().second);
  // A helper inlined into the kernel: say where the kernel called it too.
  for (std::size_t i = 1; i < frames.size() && i < 3; ++i) {
    if (frames[i].second.rfind("??", 0) == 0) break;
    text += " (inlined at " + base_name(frames[i].second) + ")";
  }
  return text;
}

std::string Checker::kernel_name() const {
  const auto frames = frames_of(reinterpret_cast<std::uintptr_t>(kernel_));
  if (frames.empty() || frames.back().first == "??") return "the kernel";
  std::string name = frames.back().first;
  for (std::size_t at; (at = name.find("(anonymous namespace)::")) != std::string::npos;) {
    name.erase(at, sizeof "(anonymous namespace)::" - 1);
  }
  // "void ns::name<args>(params)" -> "name"
  int depth = 0;
  std::size_t end = name.size();
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if ((name[i] == '(' || name[i] == '<') && depth <= 1) {
      end = i;
      break;
    }
  }
  name.erase(end);
  if (const auto colon = name.rfind("::"); colon != std::string::npos) name.erase(0, colon + 2);
  if (const auto space = name.rfind(' '); space != std::string::npos) name.erase(0, space + 1);
  return name;
}

std::string Checker::block_text(uint3 b) const {
  return "block (" + std::to_string(b.x) + ", " + std::to_string(b.y) + ", " +
         std::to_string(b.z) + ")";
}

std::string Checker::who(const AccessRecord& r) const {
  if ((r.flags & kWarpWide) != 0) return "warp " + std::to_string(r.thread) + " (a wmma call)";
  return "thread " + std::to_string(r.thread) + " (warp " + std::to_string(r.thread / 32) +
         ", lane " + std::to_string(r.thread % 32) + ")";
}

std::string Checker::memory_text(Region region, const void* p) const {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  if (region == Region::StaticShared) {
    return "static __shared__ memory (" + hex(address) + ")";
  }
  const std::string kernel = kernel_name();
  Arena& a = arena();
  const std::lock_guard lock(a.mutex);
  auto it = a.live.upper_bound(address);
  if (it == a.live.begin()) return "device memory at " + hex(address);
  --it;
  return "byte " + std::to_string(address - it->first) + " of " + allocation_text(*it, kernel);
}

void Checker::race(Region region, const void* p, const AccessRecord& prev, bool prev_write,
                   const AccessRecord& cur, bool cur_write, const char* why) {
  const bool cross_block = std::strcmp(why, "block") == 0;
  std::string prev_who = who(prev);
  if (cross_block) {
    const BlockLog* log = block_of(prev.clock);
    if (log != nullptr) prev_who += " of " + block_text(log->index);
  }
  std::string text = "simt: race in " + kernel_name() + ", " + block_text(block_) + ": " +
                     who(cur) + (cur_write ? " writes " : " reads ") + memory_text(region, p) +
                     " at " + line(cur.pc) + ", which " + prev_who +
                     (prev_write ? (prev.flags & kAtomic ? " updated atomically" : " wrote")
                                 : " read") +
                     " at " + line(prev.pc);
  if (cross_block) {
    text +=
        ", and nothing orders the two blocks: the block that writes must publish with "
        "__threadfence() and then an atomic (a counter), and the block that reads must read only "
        "after an atomic of its own has seen that count (and a __syncthreads() for its other "
        "threads)";
  } else {
    const bool same_warp = ((prev.flags & kWarpWide) ? prev.thread : prev.thread / 32u) ==
                           ((cur.flags & kWarpWide) ? cur.thread : cur.thread / 32u);
    text += ", with no barrier between them: ";
    text += same_warp ? "a __syncwarp() (or __syncthreads()) between the two accesses orders them"
                      : "a __syncthreads() between the two accesses orders them (the threads are "
                        "in different warps, so __syncwarp() cannot)";
  }
  error_ = text;
}

void Checker::not_landed(const void* p, const AccessRecord& copy, const AccessRecord& cur,
                         bool write) {
  const Region region = locate(p, 1, false, cur.pc, false).region;
  error_ = "simt: race in " + kernel_name() + ", " + block_text(block_) + ": " + who(cur) +
           (write ? " writes " : " reads ") + memory_text(region, p) + " at " + line(cur.pc) +
           ", the destination of " + who(copy) + "'s __pipeline_memcpy_async at " +
           line(copy.pc) +
           ", which has not landed: the copying thread must __pipeline_wait_prior for its group" +
           (copy.thread == cur.thread ? "" : ", and then a __syncthreads() must follow,") +
           " before anyone " + (write ? "writes" : "reads") + " it";
}

void Checker::out_of_bounds(const void* p, std::size_t bytes, bool write,
                            const AccessRecord& cur) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::string what = "memory that no device buffer holds (" + hex(address) + ")";
  const std::string kernel = kernel_name();
  {
    Arena& a = arena();
    const std::lock_guard lock(a.mutex);
    // The nearest allocation: the one it runs past the end of, or the one it comes before.
    auto after = a.live.upper_bound(address);
    const auto named = [&](const std::pair<const std::uintptr_t, Allocation>& e) {
      return allocation_text(e, kernel);
    };
    std::size_t past = SIZE_MAX;
    if (after != a.live.begin()) {
      const auto& e = *std::prev(after);
      const std::uintptr_t end = e.first + e.second.bytes;
      if (address < end) {  // starts inside, ends outside
        past = 0;
        what = "the last " + std::to_string(end - address) + " bytes of " + named(e) +
               " and the " + std::to_string(address + bytes - end) + " after its end";
      } else {
        past = address - end;
        what = std::to_string(past) + " bytes past the end of " + named(e);
      }
    }
    if (after != a.live.end() && after->first - address < past) {
      what = std::to_string(after->first - address) + " bytes before the start of " +
             named(*after);
    }
  }
  error_ = "simt: out of bounds in " + kernel_name() + ", " + block_text(block_) + ": " +
           who(cur) + (write ? " writes " : " reads ") + std::to_string(bytes) + " bytes at " +
           line(cur.pc) + ", " + what;
}

// ---- The emulator's calls ----------------------------------------------------------------

void checker_async_started(const void* src, std::size_t src_bytes, const void* dst,
                           std::size_t dst_bytes, SourceSite site) {
  if (Checker* c = active_checker) c->async_started(src, src_bytes, dst, dst_bytes, site);
}

void checker_async_landed(const void* dst, std::size_t bytes, SourceSite site) {
  if (Checker* c = active_checker) c->async_landed(dst, bytes, site);
}

void checker_atomic(const void* p, std::size_t bytes, const SourceSite& site) {
  if (Checker* c = active_checker) c->atomic(p, bytes, site);
}

void checker_fence() {
  if (Checker* c = active_checker) c->fence();
}

}  // namespace simt::inline emu::detail

namespace simt {

void set_memory_checks(bool on) {
  auto& s = detail::check_setting();
  const std::lock_guard lock(s.mutex);
  s.read_env = true;
  s.on = on;
}

bool memory_checks() {
  auto& s = detail::check_setting();
  const std::lock_guard lock(s.mutex);
  if (!s.read_env) {
    s.read_env = true;
    if (const char* text = std::getenv("SIMT_CHECK"); text != nullptr && *text != '\0') {
      s.on = std::strcmp(text, "0") != 0;
    }
  }
  return s.on;
}

}  // namespace simt

// ---- The instrumentation's hooks ---------------------------------------------------------
// GCC's -fsanitize=thread calls these from every load and store of an instrumented translation
// unit; libtsan is never linked, so these are the definitions. Only accesses made while a
// checked block runs reach the checker.
#define SIMT_PC reinterpret_cast<std::uintptr_t>(__builtin_return_address(0))
#define SIMT_HOOK(name, bytes, write)                                                   \
  extern "C" void name(void* p) {                                                       \
    if (auto* c = ::simt::detail::active_checker) c->access(p, bytes, write, SIMT_PC); \
  }
SIMT_HOOK(__tsan_read1, 1, false)
SIMT_HOOK(__tsan_read2, 2, false)
SIMT_HOOK(__tsan_read4, 4, false)
SIMT_HOOK(__tsan_read8, 8, false)
SIMT_HOOK(__tsan_read16, 16, false)
SIMT_HOOK(__tsan_write1, 1, true)
SIMT_HOOK(__tsan_write2, 2, true)
SIMT_HOOK(__tsan_write4, 4, true)
SIMT_HOOK(__tsan_write8, 8, true)
SIMT_HOOK(__tsan_write16, 16, true)
SIMT_HOOK(__tsan_unaligned_read2, 2, false)
SIMT_HOOK(__tsan_unaligned_read4, 4, false)
SIMT_HOOK(__tsan_unaligned_read8, 8, false)
SIMT_HOOK(__tsan_unaligned_read16, 16, false)
SIMT_HOOK(__tsan_unaligned_write2, 2, true)
SIMT_HOOK(__tsan_unaligned_write4, 4, true)
SIMT_HOOK(__tsan_unaligned_write8, 8, true)
SIMT_HOOK(__tsan_unaligned_write16, 16, true)
SIMT_HOOK(__tsan_volatile_read1, 1, false)
SIMT_HOOK(__tsan_volatile_read2, 2, false)
SIMT_HOOK(__tsan_volatile_read4, 4, false)
SIMT_HOOK(__tsan_volatile_read8, 8, false)
SIMT_HOOK(__tsan_volatile_read16, 16, false)
SIMT_HOOK(__tsan_volatile_write1, 1, true)
SIMT_HOOK(__tsan_volatile_write2, 2, true)
SIMT_HOOK(__tsan_volatile_write4, 4, true)
SIMT_HOOK(__tsan_volatile_write8, 8, true)
SIMT_HOOK(__tsan_volatile_write16, 16, true)
#undef SIMT_HOOK

extern "C" {
void __tsan_read_range(void* p, unsigned long bytes) {
  if (auto* c = ::simt::detail::active_checker) c->access(p, bytes, false, SIMT_PC);
}
void __tsan_write_range(void* p, unsigned long bytes) {
  if (auto* c = ::simt::detail::active_checker) c->access(p, bytes, true, SIMT_PC);
}
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}
void __tsan_atomic_thread_fence(int) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
void __tsan_atomic_signal_fence(int) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
}

// Host code in an instrumented file may use std::atomic (shared_ptr's counts): the operations
// themselves, done sequentially consistent (kernel code has no std::atomic).
#define SIMT_ATOMICS(bits, T)                                                                  \
  extern "C" {                                                                                 \
  T __tsan_atomic##bits##_load(const volatile T* a, int) {                                     \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                               \
  }                                                                                            \
  void __tsan_atomic##bits##_store(volatile T* a, T v, int) {                                  \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                  \
  }                                                                                            \
  T __tsan_atomic##bits##_exchange(volatile T* a, T v, int) {                                  \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                        \
  }                                                                                            \
  T __tsan_atomic##bits##_fetch_add(volatile T* a, T v, int) {                                 \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                         \
  }                                                                                            \
  T __tsan_atomic##bits##_fetch_sub(volatile T* a, T v, int) {                                 \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                         \
  }                                                                                            \
  T __tsan_atomic##bits##_fetch_and(volatile T* a, T v, int) {                                 \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                         \
  }                                                                                            \
  T __tsan_atomic##bits##_fetch_or(volatile T* a, T v, int) {                                  \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                          \
  }                                                                                            \
  T __tsan_atomic##bits##_fetch_xor(volatile T* a, T v, int) {                                 \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                         \
  }                                                                                            \
  T __tsan_atomic##bits##_fetch_nand(volatile T* a, T v, int) {                                \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                        \
  }                                                                                            \
  int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {      \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
  }                                                                                            \
  int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {        \
    return __atomic_compare_exchange_n(a, c, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
  }                                                                                            \
  T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T c, T v, int, int) {            \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);          \
    return c;                                                                                  \
  }                                                                                            \
  }
SIMT_ATOMICS(8, unsigned char)
SIMT_ATOMICS(16, unsigned short)
SIMT_ATOMICS(32, unsigned int)
SIMT_ATOMICS(64, unsigned long)
#undef SIMT_ATOMICS

// The wmma collectives: load_matrix_sync, store_matrix_sync and mma_sync over 16x16 tiles.
//
// Each lane copies its input fragments into its warp's stage when it arrives and waits like a
// shuffle (warp.cpp matches the lanes: the whole warp, at the same call). The last lane to
// arrive checks what CUDA requires of the arguments, then does the warp's work once: reads or
// writes the tile in memory, or multiplies, through the schedule's element mapping; each lane
// then copies its own output elements back into its fragment.
#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "block.hpp"
#include "report.hpp"

namespace simt::inline emu::detail {
namespace {

// The tables of WmmaMapping, in order: (use, elements per lane).
constexpr std::pair<WmmaUse, int> kTables[] = {{WmmaUse::MatrixA, 8},
                                               {WmmaUse::MatrixA, 16},
                                               {WmmaUse::MatrixB, 8},
                                               {WmmaUse::MatrixB, 16},
                                               {WmmaUse::Accumulator, 8}};

// Forward's fixed permutations are drawn from this seed; Random's from the schedule's seed.
constexpr std::uint64_t kForwardSeed = 0x776D6D61'66697865ull;  // "wmmafixe"
constexpr std::uint64_t kRandomSalt = 0x776D6D61'72616E64ull;   // "wmmarand"

std::size_t table_index(WmmaUse use, int per_lane) {
  for (std::size_t i = 0; i < std::size(kTables); ++i) {
    if (kTables[i].first == use && kTables[i].second == per_lane) return i;
  }
  throw KernelError("simt: no wmma fragment has " + std::to_string(per_lane) +
                    " elements per lane");  // unreachable: emu/wmma.hpp has no such fragment
}

int element_bytes(WmmaElement element) {
  return element == WmmaElement::Float ? 4 : 2;
}

const char* element_name(WmmaElement element) {
  switch (element) {
    case WmmaElement::Half:
      return "__half";
    case WmmaElement::BFloat16:
      return "__nv_bfloat16";
    case WmmaElement::Float:
      break;
  }
  return "float";
}

const char* use_name(WmmaUse use) {
  switch (use) {
    case WmmaUse::MatrixA:
      return "matrix_a";
    case WmmaUse::MatrixB:
      return "matrix_b";
    case WmmaUse::Accumulator:
      break;
  }
  return "accumulator";
}

const char* layout_name(WmmaLayout layout) {
  return layout == WmmaLayout::RowMajor ? "row_major" : "col_major";
}

// The bytes of one lane's x[] for a fragment of `use` holding `element`.
std::size_t fragment_bytes(WmmaUse use, WmmaElement element) {
  return static_cast<std::size_t>(wmma_elements_per_lane(use, element) * element_bytes(element));
}

// The offset, in elements, of element e (= row * 16 + col) of a tile laid out as `layout`.
std::size_t tile_offset(unsigned e, WmmaLayout layout, unsigned ldm) {
  const std::size_t row = e / kWmmaTile;
  const std::size_t col = e % kWmmaTile;
  return layout == WmmaLayout::RowMajor ? row * ldm + col : col * ldm + row;
}

float to_float(const unsigned char* bytes, WmmaElement element) {
  if (element == WmmaElement::Float) {
    float f;
    std::memcpy(&f, bytes, sizeof f);
    return f;
  }
  unsigned short bits;
  std::memcpy(&bits, bytes, sizeof bits);
  return element == WmmaElement::Half ? __half2float(__ushort_as_half(bits))
                                      : __bfloat162float(__ushort_as_bfloat16(bits));
}

std::string pointer_text(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%" PRIxPTR, reinterpret_cast<std::uintptr_t>(p));
  return text;
}

// The template arguments of a call's fragments, as CUDA code spells them.
std::string fragments_text(WarpOp op, const WmmaCall& c) {
  if (op == WarpOp::WmmaMma) {
    return std::string("matrix_a ") + element_name(c.element) + " " + layout_name(c.layout) +
           " and matrix_b " + element_name(c.element) + " " + layout_name(c.b_layout);
  }
  std::string text =
      std::string("fragment<") + use_name(c.use) + ", 16, 16, 16, " + element_name(c.element);
  if (c.use != WmmaUse::Accumulator) text += std::string(", ") + layout_name(c.layout);
  return text + ">";
}

using Calls = std::array<const WmmaCall*, 32>;

// Calls fn(lane, i, entry) for every slot of a fragment with `per_lane` elements per lane, where
// entry is the slot's table entry (element + 256 * copy): x[i] of lane `lane`.
template <class Fn>
void for_each_slot(const std::vector<std::uint16_t>& map, std::size_t per_lane, Fn fn) {
  const std::uint16_t* entry = map.data();
  for (unsigned lane = 0; lane < 32; ++lane) {
    for (std::size_t i = 0; i < per_lane; ++i) fn(lane, i, *entry++);
  }
}

// Throws unless `key` is the same for every lane's call; the message groups the lanes by what
// they pass, as `text` writes it.
// `at()` returns the message prefix "simt: block (...), warp w: <call> at <site>", built only on
// failure: the checks run on every collective.
template <class At, class Key, class Text>
void require_same(const Calls& calls, const At& at, const char* what, Key key, Text text) {
  const auto first = key(*calls[0]);
  if (std::all_of(calls.begin(), calls.end(), [&](const WmmaCall* c) { return key(*c) == first; }))
    return;
  std::vector<std::pair<std::string, std::vector<unsigned>>> groups;
  for (unsigned lane = 0; lane < 32; ++lane) {
    const std::string value = text(*calls[lane]);
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == value; });
    if (it == groups.end()) {
      groups.push_back({value, {lane}});
    } else {
      it->second.push_back(lane);
    }
  }
  std::string list;
  for (const auto& [value, lanes] : groups) {
    list += (list.empty() ? "" : ", ") + std::string(lanes.size() == 1 ? "lane " : "lanes ") +
            id_ranges(lanes) + " pass " + value;
  }
  throw KernelError(at() + ": " + list + ". Every lane of the warp must pass the same " + what +
                    " (CUDA leaves the result undefined otherwise)");
}

// Reads the 16x16 matrix that fragments of `use` hold in the stage (`member` of each lane) into
// `out` ([row * 16 + col]). A fragment with two copies of each element must hold equal ones:
// copies that differ mean the kernel changed x[] by position, so its answer hangs on a mapping
// CUDA leaves unspecified. (This runs on every mma_sync: fixed-size copies, no allocation.)
template <class At>
void gather(const WmmaStage& stage, unsigned char (WmmaStage::Lane::*member)[32], WmmaUse use,
            WmmaElement element, const std::vector<std::uint16_t>& map, const At& at, float* out) {
  const std::size_t per_lane = static_cast<std::size_t>(wmma_elements_per_lane(use, element));
  const auto bytes = [&](std::size_t slot) {
    return (stage.lanes[slot / per_lane].*member) + (slot % per_lane) * element_bytes(element);
  };
  if (element == WmmaElement::Float) {
    for_each_slot(map, per_lane, [&](unsigned lane, std::size_t i, unsigned entry) {
      std::memcpy(&out[entry], (stage.lanes[lane].*member) + i * 4, 4);
    });
    return;
  }
  std::uint16_t bits[2 * kWmmaTileElements];  // [copy * 256 + element]
  for_each_slot(map, per_lane, [&](unsigned lane, std::size_t i, unsigned entry) {
    std::memcpy(&bits[entry], (stage.lanes[lane].*member) + i * 2, 2);
  });
  for (unsigned e = 0; e < kWmmaTileElements; ++e) {
    out[e] = element == WmmaElement::Half ? __half2float(__ushort_as_half(bits[e]))
                                          : __bfloat162float(__ushort_as_bfloat16(bits[e]));
  }
  if (map.size() == kWmmaTileElements) return;  // one copy of each element
  for (unsigned e = 0; e < kWmmaTileElements; ++e) {
    if (bits[e] == bits[kWmmaTileElements + e]) continue;
    const auto holder = [&](unsigned copy) {
      const auto slot = static_cast<std::size_t>(
          std::find(map.begin(), map.end(), copy * kWmmaTileElements + e) - map.begin());
      char value[32];
      std::snprintf(value, sizeof value, "%g", static_cast<double>(to_float(bytes(slot), element)));
      return "lane " + std::to_string(slot / per_lane) + " as x[" +
             std::to_string(slot % per_lane) + "] (" + value + ")";
    };
    throw KernelError(at() + ": " + use_name(use) + " element (" + std::to_string(e / kWmmaTile) +
                      ", " + std::to_string(e % kWmmaTile) + ") is held twice, by " + holder(0) +
                      " and by " + holder(1) + ", and the copies differ. A " +
                      std::to_string(per_lane) + "-element " + element_name(element) +
                      " fragment holds every element twice and CUDA does not say which lane "
                      "holds which: the kernel changed x[i] by position (not the same way for "
                      "every i), or used a fragment it never loaded or filled");
  }
}

}  // namespace

const std::vector<std::uint16_t>& WmmaMapping::table(WmmaUse use, int per_lane) {
  const bool random = choice_.schedule == Schedule::Random;
  if (!built_ || built_for_.schedule != choice_.schedule ||
      (random && built_for_.seed != choice_.seed)) {
    for (std::size_t i = 0; i < std::size(kTables); ++i) {
      std::vector<std::uint16_t>& table = tables_[i];
      table.resize(32 * static_cast<std::size_t>(kTables[i].second));
      std::iota(table.begin(), table.end(), std::uint16_t{0});
      SplitMix64 mix((random ? choice_.seed ^ kRandomSalt : kForwardSeed) + i);
      SplitMix64 rng(mix.next());
      shuffle(table, rng);
      if (choice_.schedule == Schedule::Reverse) std::reverse(table.begin(), table.end());
    }
    built_ = true;
    built_for_ = choice_;
  }
  return tables_[table_index(use, per_lane)];
}

WmmaStage& Block::wmma_stage(unsigned warp) {
  if (wmma_stages_.size() <= warp) wmma_stages_.resize(warps_.size());
  return wmma_stages_[warp];
}

void Block::wmma(WarpOp op, const WmmaCall& call, SourceSite site) {
  KernelThread& t = *current_;
  if (aborting_) throw AbortBlock{};
  raise_checker_error();
  t.op = op;
  t.mask = 0xffffffffu;  // always the whole warp
  t.value = 0;
  t.operand = 0;
  t.width = warpSize;
  t.site = site;
  const unsigned warp = t.linear / 32;
  const unsigned lane = t.linear % 32;
  check_arrival(t, lane, warps_[warp]);

  // Post this lane's arguments and inputs. (The stage is looked up again after waiting: it may
  // have grown.)
  WmmaStage::Lane& in = wmma_stage(warp).lanes[lane];
  in.call = call;
  if (op == WarpOp::WmmaStore) {
    std::memcpy(in.a, call.a, fragment_bytes(WmmaUse::Accumulator, WmmaElement::Float));
  } else if (op == WarpOp::WmmaMma) {
    std::memcpy(in.a, call.a, fragment_bytes(WmmaUse::MatrixA, call.element));
    std::memcpy(in.b, call.b, fragment_bytes(WmmaUse::MatrixB, call.element));
    std::memcpy(in.c, call.c, fragment_bytes(WmmaUse::Accumulator, WmmaElement::Float));
  }

  if (group_complete(warp, t)) {
    complete(warp, t);  // the last lane to arrive does the warp's work
  } else {
    warps_[warp].waiting |= 1u << lane;
    set_state(t, ThreadState::AtWarp);
    wait(t);  // throws AbortBlock if the collective failed
  }

  const WmmaStage::Lane& out = wmma_stages_[warp].lanes[lane];
  if (op == WarpOp::WmmaLoad) std::memcpy(call.d, out.d, fragment_bytes(call.use, call.element));
  if (op == WarpOp::WmmaMma) {
    std::memcpy(call.d, out.d, fragment_bytes(WmmaUse::Accumulator, WmmaElement::Float));
  }
}

void Block::complete_wmma(unsigned warp, const KernelThread& arriving) {
  const WarpOp op = arriving.op;
  WmmaStage& stage = wmma_stages_[warp];
  const WmmaCall& call = stage.lanes[arriving.linear % 32].call;
  const auto at = [&] {
    return where(warp) + ": " + op_name(op) + " at " + site_text(arriving.site);
  };
  Calls calls;
  for (unsigned lane = 0; lane < 32; ++lane) calls[lane] = &stage.lanes[lane].call;

  // CUDA: "the values of mptr, ldm, layout and all template parameters for a must be the same
  // for all threads in the warp".
  require_same(
      calls, at, "fragment types",
      [op](const WmmaCall& c) {
        // (An accumulator's layout is an argument, not a template parameter: checked below.)
        const bool typed_layout = op == WarpOp::WmmaMma || c.use != WmmaUse::Accumulator;
        return static_cast<int>(c.use) << 12 | static_cast<int>(c.element) << 8 |
               (typed_layout ? static_cast<int>(c.layout) << 4 | static_cast<int>(c.b_layout) : 0);
      },
      [op](const WmmaCall& c) { return fragments_text(op, c); });
  if (op == WarpOp::WmmaMma) {
    const auto& map_a = wmma_mapping_.table(WmmaUse::MatrixA,
                                            wmma_elements_per_lane(WmmaUse::MatrixA, call.element));
    const auto& map_b = wmma_mapping_.table(WmmaUse::MatrixB,
                                            wmma_elements_per_lane(WmmaUse::MatrixB, call.element));
    const auto& map_c = wmma_mapping_.table(WmmaUse::Accumulator, 8);
    // [row * 16 + col] of A (M x K), B (K x N), C and D (M x N)
    float a[kWmmaTileElements], b[kWmmaTileElements], c[kWmmaTileElements], d[kWmmaTileElements];
    gather(stage, &WmmaStage::Lane::a, WmmaUse::MatrixA, call.element, map_a, at, a);
    gather(stage, &WmmaStage::Lane::b, WmmaUse::MatrixB, call.element, map_b, at, b);
    gather(stage, &WmmaStage::Lane::c, WmmaUse::Accumulator, WmmaElement::Float, map_c, at, c);
    // Products of 16-bit inputs are exact in double, and so (nearly always) is their sum: each
    // element of D is rounded to float once. A row of D at a time, so that the inner loop runs
    // along a row of B (each element still sums c, then k = 0, 1, ..., 15 in order).
    for (int i = 0; i < kWmmaTile; ++i) {
      double row[kWmmaTile];
      for (int j = 0; j < kWmmaTile; ++j) row[j] = c[i * kWmmaTile + j];
      for (int k = 0; k < kWmmaTile; ++k) {
        const double a_ik = a[i * kWmmaTile + k];
        for (int j = 0; j < kWmmaTile; ++j) row[j] += a_ik * b[k * kWmmaTile + j];
      }
      for (int j = 0; j < kWmmaTile; ++j) d[i * kWmmaTile + j] = static_cast<float>(row[j]);
    }
    for_each_slot(map_c, 8, [&](unsigned lane, std::size_t i, unsigned entry) {
      std::memcpy(stage.lanes[lane].d + i * sizeof(float), &d[entry], sizeof(float));
    });
    return;
  }

  require_same(
      calls, at, "pointer", [](const WmmaCall& c) { return c.memory; },
      [](const WmmaCall& c) { return "pointer " + pointer_text(c.memory); });
  require_same(
      calls, at, "ldm", [](const WmmaCall& c) { return c.ldm; },
      [](const WmmaCall& c) { return "ldm " + std::to_string(c.ldm); });
  require_same(
      calls, at, "layout", [](const WmmaCall& c) { return c.layout; },
      [](const WmmaCall& c) {
        return std::string("layout ") +
               (c.layout == WmmaLayout::RowMajor ? "mem_row_major" : "mem_col_major");
      });

  // CUDA: "mptr must be a 256-bit aligned pointer", "ldm ... must be a multiple of 8 for __half
  // element type or multiple of 4 for float element type" (16 bytes either way).
  const auto address = reinterpret_cast<std::uintptr_t>(call.memory);
  if (address == 0) throw KernelError(at() + ": lanes 0-31 pass a null pointer");
  if (address % 32 != 0) {
    throw KernelError(at() + ": lanes 0-31 pass pointer " + pointer_text(call.memory) +
                      ", which is not 256-bit (32-byte) aligned: it lies " +
                      std::to_string(address % 32) +
                      " bytes past a 32-byte boundary. CUDA requires the tile's first element "
                      "to be 32-byte aligned");
  }
  const int size = element_bytes(call.element);
  const unsigned multiple = 16u / static_cast<unsigned>(size);
  if (call.ldm % multiple != 0) {
    throw KernelError(at() + ": ldm — expected a multiple of " + std::to_string(multiple) +
                      " for " + element_name(call.element) + " elements (16 bytes), got " +
                      std::to_string(call.ldm));
  }

  auto* base = static_cast<unsigned char*>(call.memory);
  const int per_lane = wmma_elements_per_lane(call.use, call.element);
  const auto& map = wmma_mapping_.table(call.use, per_lane);
  const auto bytes = static_cast<std::size_t>(size);
  // The memory checker sees the tile as accessed by the whole warp, row by row (column by
  // column), before anything moves.
  for (unsigned line = 0; line < kWmmaTile; ++line) {
    checker_.warp_access(base + static_cast<std::size_t>(line) * call.ldm * bytes,
                         kWmmaTile * bytes, op == WarpOp::WmmaStore, warp, arriving.site);
  }
  raise_checker_error();
  for_each_slot(map, static_cast<std::size_t>(per_lane),
                [&](unsigned lane, std::size_t i, unsigned entry) {
                  unsigned char* memory =
                      base + tile_offset(entry % kWmmaTileElements, call.layout, call.ldm) * bytes;
                  if (op == WarpOp::WmmaLoad) {
                    std::memcpy(stage.lanes[lane].d + i * bytes, memory, bytes);
                  } else {
                    std::memcpy(memory, stage.lanes[lane].a + i * bytes, bytes);
                  }
                });
}

}  // namespace simt::inline emu::detail

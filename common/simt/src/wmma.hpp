// The emulator's side of nvcuda::wmma: which lane holds which element of a fragment, and the
// per-warp staging area through which a collective's inputs and outputs pass.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "simt/emu/wmma.hpp"
#include "simt/errors_and_settings.hpp"

namespace simt::inline emu::detail {

/// The tile side: every fragment is 16x16 (matrix_a is M x K, matrix_b K x N, accumulator M x N).
inline constexpr int kWmmaTile = 16;
inline constexpr int kWmmaTileElements = kWmmaTile * kWmmaTile;

/// Where every element of a fragment lives. A fragment of `per_lane` elements per lane has
/// 32 * per_lane slots, slot s being x[s % per_lane] of lane s / per_lane; the table gives, for
/// each slot, element + 256 * copy, the element numbered row * 16 + col of the fragment's
/// matrix. A 16-element __half fragment has 512 slots, so each element has two copies.
///
/// The table is a permutation of the slots that depends on the schedule: Forward a fixed
/// pseudo-random one, Reverse the same read backwards, Random:SEED one drawn from the seed. A
/// kernel that treats x[] uniformly never notices; one that assumes element i sits at a given
/// row or column gets answers that change with the schedule.
class WmmaMapping {
 public:
  /// Makes later tables follow `choice` (rebuilt only when it changes).
  void use_schedule(ScheduleChoice choice) { choice_ = choice; }

  /// Returns the slot table of fragments of `use` with `per_lane` elements per lane.
  const std::vector<std::uint16_t>& table(WmmaUse use, int per_lane);

 private:
  ScheduleChoice choice_;
  ScheduleChoice built_for_;
  bool built_ = false;
  // [matrix_a / 8, matrix_a / 16, matrix_b / 8, matrix_b / 16, accumulator / 8]
  std::array<std::vector<std::uint16_t>, 5> tables_;
};

/// One warp's staging area: each lane copies its arguments and input fragments here when it
/// arrives, the last lane computes from them, and each lane copies its output back after the
/// collective. A lane touches only its own row, so no fiber ever reads another fiber's stack.
struct WmmaStage {
  static constexpr int kFragmentBytes = 32;  // the largest x[]: 16 halves or 8 floats
  struct Lane {
    WmmaCall call;  // (its pointers to the lane's own fragments are used by that lane only)
    alignas(8) unsigned char a[kFragmentBytes];
    alignas(8) unsigned char b[kFragmentBytes];
    alignas(8) unsigned char c[kFragmentBytes];
    alignas(8) unsigned char d[kFragmentBytes];
  };
  Lane lanes[32];
};

}  // namespace simt::inline emu::detail

/// \file
/// How many pieces to split each unit of split-KV work into, from how many thread blocks the GPU
/// runs at once: FlashAttention-2's wave-efficiency rule (flash_api.cpp's split heuristic), for
/// every lab that sizes a split grid.
///
/// A grid of N blocks on a GPU that holds S of them at once (blocks per SM × SMs, the "slots")
/// runs in ceil(N / S) waves; the last one is partly empty, and the GPU's memory system idles in
/// that gap. The *wave efficiency* N / (S · ceil(N / S)) is the busy fraction. The rule: with
/// enough blocks already (N ≥ 80 % of S) do not split; otherwise try every split count s whose
/// chunks differ from s - 1's, take the best efficiency, and return the *smallest* s within
/// 85 % of it (more splits cost a larger merge and shorter, less efficient partitions).
#pragma once

#include <cstdint>
#include <span>

namespace pa::waves {

/// [waves]
/// The fraction of the slots busy over the waves of `blocks` blocks on `slots` slots:
/// blocks / (slots · ceil(blocks / slots)); 0 for an empty grid.
constexpr double efficiency(std::int64_t blocks, std::int64_t slots) {
  if (blocks <= 0 || slots <= 0) return 0.0;
  const std::int64_t waves = (blocks + slots - 1) / slots;
  return static_cast<double>(blocks) / static_cast<double>(waves * slots);
}

/// Waves of `blocks` on `slots`, fractional (1.55 = one full wave and 55 % of a second).
constexpr double waves(std::int64_t blocks, std::int64_t slots) {
  return slots <= 0 ? 0.0 : static_cast<double>(blocks) / static_cast<double>(slots);
}

/// A grid below this fraction of the slots is split (FA2's 0.8).
inline constexpr double kSplitBelow = 0.8;
/// Among the split counts, the smallest whose efficiency is at least this fraction of the best
/// wins (FA2's 0.85).
inline constexpr double kNearBest = 0.85;

/// Returns how many pieces FA2's rule above splits each unit of work into. There are `units` of
/// them, each `chunks` indivisible chunks long (tiles, cache blocks), on `slots` slots, and at
/// most `max_splits` pieces. A split count whose ceil(chunks / s) equals s - 1's gives the same
/// partitions and is skipped. Always in [1, max(1, min(max_splits, chunks))].
constexpr int num_splits(std::int64_t units, std::int64_t chunks, std::int64_t slots,
                         int max_splits) {
  if (units <= 0 || chunks <= 1 || slots <= 0 || max_splits <= 1) return 1;
  if (static_cast<double>(units) >= kSplitBelow * static_cast<double>(slots)) return 1;
  const std::int64_t limit = chunks < max_splits ? chunks : max_splits;
  const auto distinct = [&](std::int64_t s) {
    return s == 1 || (chunks + s - 1) / s != (chunks + s - 2) / (s - 1);
  };
  double best = 0.0;
  for (std::int64_t s = 1; s <= limit; ++s) {
    if (!distinct(s)) continue;
    const double e = efficiency(units * s, slots);
    if (e > best) best = e;
  }
  for (std::int64_t s = 1; s <= limit; ++s) {
    if (distinct(s) && efficiency(units * s, slots) >= kNearBest * best) return static_cast<int>(s);
  }
  return 1;
}

/// Returns the chunk size that FA2's rule prefers among the candidate sizes (in any order). The
/// grid has `units` rows of `length` elements on `slots` slots, and each size in `sizes` gives
/// the split count ceil(length / size); a grid already ≥ 80 % of the slots takes the largest
/// size, otherwise the largest within 85 % of the best efficiency. 0 when `sizes` is empty.
constexpr int pick_chunk_size(std::span<const int> sizes, std::int64_t units, std::int64_t length,
                              std::int64_t slots) {
  int largest = 0;
  for (int size : sizes) largest = size > largest ? size : largest;
  if (largest == 0 || units <= 0 || length <= 0 || slots <= 0) return largest;
  if (static_cast<double>(units) >= kSplitBelow * static_cast<double>(slots)) return largest;
  const auto blocks = [&](int size) { return units * ((length + size - 1) / size); };
  double best = 0.0;
  for (int size : sizes) {
    const double e = efficiency(blocks(size), slots);
    if (e > best) best = e;
  }
  int chosen = 0;
  for (int size : sizes) {
    if (efficiency(blocks(size), slots) >= kNearBest * best && size > chosen) chosen = size;
  }
  return chosen;
}
/// [waves]

}  // namespace pa::waves

// The seeded generator behind Schedule::Random: small, fast and the same on every platform, so
// a seed names one interleaving everywhere.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace simt::inline emu::detail {

/// SplitMix64 (Steele, Lea and Flood, 2014): one 64-bit state, full period, good enough mixing
/// for shuffles.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  /// Returns the next 64 pseudo-random bits.
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

/// Puts `items` in a uniformly random order (Fisher-Yates; the modulo bias is immaterial here).
template <class T>
void shuffle(std::vector<T>& items, SplitMix64& rng) {
  for (std::size_t i = items.size(); i > 1; --i) {
    std::swap(items[i - 1], items[rng.next() % i]);
  }
}

}  // namespace simt::inline emu::detail

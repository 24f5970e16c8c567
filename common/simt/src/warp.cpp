// Warp collectives: shuffles, votes, __syncwarp, and the wmma ones (whose work is in wmma.cpp).
//
// Every lane named in the mask must arrive, with that same mask, before any lane gets a result,
// as the "_sync" intrinsics require. Each arriving lane posts its value and waits; the last one
// to arrive computes every lane's result at once (so values a lane posts later cannot disturb
// it) and makes the others runnable. A lane may wait in a group of its own meanwhile (half
// warps voting separately, say); it joins this group when that one completes. What a GPU leaves
// undefined (a lane outside the block, a lane that has exited, a read from a lane outside the
// mask, one group meeting at different collectives) is an error here; lanes that wait for each
// other in different groups are a deadlock, which the scheduler reports.
//
// Collectives are matched by call site: the lanes of a mask must all wait at the same line. A
// lane that skipped a shuffle the others took would otherwise be paired with them at its next
// shuffle and silently exchange the wrong values; here that is an error naming both lines.
#include <algorithm>
#include <bit>
#include <utility>
#include <vector>

#include "block.hpp"
#include "report.hpp"

namespace simt::inline emu::detail {
namespace {

// The lane a shuffle reads, from PTX's definition of shfl.sync: `width` splits the warp into
// segments; a source outside the lane's own segment (or above it, for xor) means "keep your
// own value". The CUDA intrinsics pass the clamp 0x1f (0 for up) and segment mask 32 - width.
unsigned source_lane(WarpOp op, unsigned lane, int operand, int width) {
  const unsigned segment_mask = static_cast<unsigned>(32 - width);
  const unsigned b = static_cast<unsigned>(operand) & 31u;
  const unsigned clamp = op == WarpOp::Up ? 0u : 31u;
  const int max_lane = static_cast<int>((lane & segment_mask) | (clamp & ~segment_mask));
  int j = static_cast<int>(lane);
  bool in_range = false;
  switch (op) {
    case WarpOp::Up:
      j = static_cast<int>(lane) - static_cast<int>(b);
      in_range = j >= max_lane;
      break;
    case WarpOp::Down:
      j = static_cast<int>(lane + b);
      in_range = j <= max_lane;
      break;
    case WarpOp::Xor:
      j = static_cast<int>(lane ^ b);
      in_range = j <= max_lane;
      break;
    case WarpOp::Idx:
      j = static_cast<int>((lane & segment_mask) | (b & ~segment_mask));
      in_range = j <= max_lane;
      break;
    default:
      break;
  }
  return static_cast<unsigned>(in_range ? j : static_cast<int>(lane));
}

bool is_shuffle(WarpOp op) {
  return op == WarpOp::Idx || op == WarpOp::Up || op == WarpOp::Down || op == WarpOp::Xor;
}

}  // namespace

std::uint64_t Block::collective(WarpOp op, unsigned mask, std::uint64_t value, int operand,
                                int width, SourceSite site) {
  KernelThread& t = *current_;
  if (aborting_) throw AbortBlock{};
  raise_checker_error();
  t.op = op;
  t.mask = mask;
  t.value = value;
  t.operand = operand;
  t.width = width;
  t.site = site;
  const unsigned warp = t.linear / 32;
  check_arrival(t, t.linear % 32, warps_[warp]);
  if (group_complete(warp, t)) {
    complete(warp, t);  // the last lane to arrive: nobody to wait for
    return t.result;
  }
  warps_[warp].waiting |= 1u << (t.linear % 32);
  set_state(t, ThreadState::AtWarp);
  wait(t);
  return t.result;
}

void Block::check_arrival(const KernelThread& t, unsigned lane, const WarpLanes& lanes) const {
  // The message prefix is built only on failure: this runs on every shuffle.
  const auto fail = [&](const std::string& problem) {
    throw KernelError(
        where(t) + ": " + op_name(t.op) + " at " + site_text(t.site) +
        (is_wmma(t.op) ? ", which needs the whole warp" : " with mask " + mask_text(t.mask)) +
        ": " + problem);
  };
  const char* const names = is_wmma(t.op) ? "it needs lanes " : "the mask names lanes ";
  if (t.width < 1 || t.width > 32 || !std::has_single_bit(static_cast<unsigned>(t.width))) {
    fail("width " + std::to_string(t.width) + " — expected a power of two from 1 to 32");
  }
  if ((t.mask >> lane & 1u) == 0) {
    fail("the mask does not name the calling lane " + std::to_string(lane));
  }
  if (const unsigned absent = t.mask & ~lanes.exist) {
    fail(names + lane_ranges(absent) + ", which this block does not have (" +
         std::to_string(threads_.size()) + " threads), so they never arrive");
  }
  if (const unsigned gone = t.mask & lanes.exited) {
    fail(names + lane_ranges(gone) + ", which exited, so they never arrive");
  }
}

bool Block::group_complete(unsigned warp, const KernelThread& arriving) {
  // Quick test first: most arrivals find lanes of the mask still running.
  const unsigned me = 1u << (arriving.linear % 32);
  if (((warps_[warp].waiting | me) & arriving.mask) != arriving.mask) return false;
  for (unsigned lane = 0; lane < 32; ++lane) {
    if ((arriving.mask >> lane & 1u) == 0) continue;
    const KernelThread& o = lane_thread(warp, lane);
    if (&o == &arriving) continue;
    if (o.state != ThreadState::AtWarp || o.mask != arriving.mask) return false;
  }
  return true;
}

void Block::check_one_collective(unsigned warp, const KernelThread& arriving) {
  const unsigned mask = arriving.mask;
  bool one = true;
  for (unsigned lane = 0; lane < 32 && one; ++lane) {
    if ((mask >> lane & 1u) == 0) continue;
    const KernelThread& o = lane_thread(warp, lane);
    one = same_collective(arriving, o) && o.width == arriving.width;
  }
  if (one) return;
  // Say where every lane of the mask is, grouped by collective and line: both lines show.
  std::vector<std::pair<std::string, std::vector<unsigned>>> places;
  for (unsigned lane = 0; lane < 32; ++lane) {
    if ((mask >> lane & 1u) == 0) continue;
    const KernelThread& o = lane_thread(warp, lane);
    std::string place = std::string(op_name(o.op)) + " (" + site_text(o.site);
    if (is_shuffle(o.op) && o.width != 32) place += ", width " + std::to_string(o.width);
    place += ")";
    auto it =
        std::find_if(places.begin(), places.end(), [&](const auto& p) { return p.first == place; });
    if (it == places.end()) {
      places.push_back({place, {lane}});
    } else {
      it->second.push_back(lane);
    }
  }
  std::string text;
  for (const auto& [place, lanes] : places) {
    text += (text.empty() ? "" : ", ") + std::string(lanes.size() == 1 ? "lane " : "lanes ") +
            id_ranges(lanes) + " in " + place;
  }
  const bool wmma = is_wmma(arriving.op);
  throw KernelError(where(warp) + ": the lanes " +
                    (wmma ? "of the warp" : "with mask " + mask_text(mask)) +
                    " meet at different collectives: " + text + ". " +
                    (wmma ? "Every lane of the warp must make the same wmma call at the same line"
                          : "Every lane named in a mask must call the same collective at the same "
                            "line (with the same width)") +
                    "; a lane that skips one (in a branch, say) would be paired with the others "
                    "at its next one");
}

void Block::complete(unsigned warp, const KernelThread& arriving) {
  const unsigned mask = arriving.mask;
  check_one_collective(warp, arriving);
  checker_.warp_sync(warp, mask, warps_[warp].exist);  // before a wmma call's own accesses

  // Compute every result before releasing anyone, so an error leaves no lane half-done.
  std::uint64_t results[32] = {};
  if (is_wmma(arriving.op)) {
    complete_wmma(warp, arriving);  // writes the lanes' outputs to the warp's stage
  } else if (is_shuffle(arriving.op)) {
    for (unsigned lane = 0; lane < 32; ++lane) {
      if ((mask >> lane & 1u) == 0) continue;
      const KernelThread& o = lane_thread(warp, lane);
      const unsigned source = source_lane(o.op, lane, o.operand, o.width);
      if ((mask >> source & 1u) == 0) {
        throw KernelError(where(o) + ": " + op_name(o.op) + " at " + site_text(o.site) +
                          " with mask " + mask_text(mask) + " reads lane " +
                          std::to_string(source) +
                          ", which the mask does not name (a GPU returns an undefined value)");
      }
      results[lane] = lane_thread(warp, source).value;
    }
  } else {
    unsigned ballot = 0;
    for (unsigned lane = 0; lane < 32; ++lane) {
      if ((mask >> lane & 1u) != 0 && lane_thread(warp, lane).value != 0) ballot |= 1u << lane;
    }
    std::uint64_t vote = 0;
    if (arriving.op == WarpOp::Ballot) vote = ballot;
    if (arriving.op == WarpOp::Any) vote = ballot != 0;
    if (arriving.op == WarpOp::All) vote = ballot == mask;
    for (unsigned lane = 0; lane < 32; ++lane) results[lane] = vote;
  }

  for (unsigned lane = 0; lane < 32; ++lane) {
    if ((mask >> lane & 1u) == 0) continue;
    KernelThread& o = lane_thread(warp, lane);
    o.result = results[lane];
    if (&o != &arriving) set_state(o, ThreadState::Runnable);
  }
  warps_[warp].waiting &= ~mask;
}

}  // namespace simt::inline emu::detail

// Error-message text, and the Block's description of where each of its threads is.
#include "report.hpp"

#include <bit>
#include <cstdio>
#include <cstring>
#include <utility>

#include "block.hpp"

namespace simt::inline emu::detail {

std::string id_ranges(const std::vector<unsigned>& sorted_ids) {
  std::string out;
  for (std::size_t i = 0; i < sorted_ids.size();) {
    std::size_t j = i;
    while (j + 1 < sorted_ids.size() && sorted_ids[j + 1] == sorted_ids[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(sorted_ids[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(sorted_ids[j]);
    }
    i = j + 1;
  }
  return out;
}

std::string lane_ranges(unsigned lanes) {
  std::vector<unsigned> ids;
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (lanes >> lane & 1u) ids.push_back(lane);
  }
  return id_ranges(ids);
}

std::string threads_text(const std::vector<unsigned>& sorted_ids) {
  return (sorted_ids.size() == 1 ? "thread " : "threads ") + id_ranges(sorted_ids);
}

std::string mask_text(unsigned mask) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", mask);
  return text;
}

std::string site_text(SourceSite site) {
  const char* slash = std::strrchr(site.file, '/');
  return std::string(slash != nullptr ? slash + 1 : site.file) + ":" + std::to_string(site.line);
}

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::Idx:
      return "__shfl_sync";
    case WarpOp::Up:
      return "__shfl_up_sync";
    case WarpOp::Down:
      return "__shfl_down_sync";
    case WarpOp::Xor:
      return "__shfl_xor_sync";
    case WarpOp::Sync:
      return "__syncwarp";
    case WarpOp::Ballot:
      return "__ballot_sync";
    case WarpOp::Any:
      return "__any_sync";
    case WarpOp::All:
      return "__all_sync";
    case WarpOp::WmmaLoad:
      return "wmma::load_matrix_sync";
    case WarpOp::WmmaStore:
      return "wmma::store_matrix_sync";
    case WarpOp::WmmaMma:
      return "wmma::mma_sync";
  }
  return "a warp collective";
}

namespace {

// The words after "<collective> (<site>)" in a report: " with mask 0x0000ffff", or for the wmma
// collectives, which take no mask, ", which needs the whole warp,".
std::string mask_clause(WarpOp op, unsigned mask) {
  return is_wmma(op) ? ", which needs the whole warp," : " with mask " + mask_text(mask);
}

// What a thread is doing, in words: the key by which the report groups threads.
std::string activity(const KernelThread& t) {
  switch (t.state) {
    case ThreadState::AtBarrier:
      return "__syncthreads (" + site_text(t.site) + ")";
    case ThreadState::AtWarp:
      return std::string(op_name(t.op)) + " (" + site_text(t.site) +
             (is_wmma(t.op) ? ", whole warp" : ", mask " + mask_text(t.mask)) + ")";
    case ThreadState::Exited:
      return "exited";
    case ThreadState::Runnable:
      break;
  }
  return "running";
}

// Ids grouped by a key, groups in order of their first id.
using Groups = std::vector<std::pair<std::string, std::vector<unsigned>>>;

void add(Groups& groups, const std::string& key, unsigned id) {
  for (auto& [k, ids] : groups) {
    if (k == key) {
      ids.push_back(id);
      return;
    }
  }
  groups.push_back({key, {id}});
}

}  // namespace

std::string Block::where() const {
  return "simt: block (" + std::to_string(index_.x) + ", " + std::to_string(index_.y) + ", " +
         std::to_string(index_.z) + ")";
}

std::string Block::where(unsigned warp) const {
  return where() + ", warp " + std::to_string(warp);
}

std::string Block::where(const KernelThread& thread) const {
  return where() + ", thread " + std::to_string(thread.linear) + " (warp " +
         std::to_string(thread.linear / 32) + ", lane " + std::to_string(thread.linear % 32) + ")";
}

std::string Block::describe_stall() const {
  Groups everyone;  // every thread, by activity
  Groups barriers;  // threads at a barrier, by call site
  std::vector<unsigned> exited;
  bool in_warp = false;
  for (const KernelThread& t : threads_) {
    add(everyone, activity(t), t.linear);
    if (t.state == ThreadState::AtBarrier) add(barriers, site_text(t.site), t.linear);
    if (t.state == ThreadState::Exited) exited.push_back(t.linear);
    if (t.state == ThreadState::AtWarp) in_warp = true;
  }

  std::string headline;
  if (in_warp) {
    // For each group of lanes waiting together, say which lanes they wait for and why those
    // lanes never come.
    Groups waits;  // key: "warp W" + what its lanes wait in and for; ids: lanes
    for (const KernelThread& t : threads_) {
      if (t.state != ThreadState::AtWarp) continue;
      const unsigned warp = t.linear / 32;
      Groups reasons;  // lanes of the mask not waiting in this group, by what they do instead
      for (unsigned lane = 0; lane < 32; ++lane) {
        if ((t.mask >> lane & 1u) == 0) continue;  // (the mask names only lanes that exist)
        const KernelThread& o = threads_[warp * 32 + lane];
        if (o.state != ThreadState::AtWarp || o.mask != t.mask || !same_collective(t, o)) {
          add(reasons, activity(o), lane);
        }
      }
      std::string why;
      for (const auto& [reason, lanes] : reasons) {
        const bool one = lanes.size() == 1;
        why += (why.empty() ? "" : ", and ") + std::string(one ? "lane " : "lanes ") +
               id_ranges(lanes) +
               (reason == "exited" ? ", which exited"
                                   : (one ? ", which waits in " : ", which wait in ") + reason);
      }
      add(waits,
          std::to_string(warp) + " in " + op_name(t.op) + " (" + site_text(t.site) + ")" +
              mask_clause(t.op, t.mask) + " for " + why,
          t.linear % 32);
    }
    for (const auto& [text, lanes] : waits) {
      const std::size_t space = text.find(' ');  // text = "W in ...": split off the warp
      headline += (headline.empty() ? "" : "; ") + std::string("warp ") + text.substr(0, space) +
                  (lanes.size() == 1 ? ": lane " : ": lanes ") + id_ranges(lanes) +
                  (lanes.size() == 1 ? " waits" : " wait") + text.substr(space);
    }
    headline += ". Every lane named in a mask must reach the same warp collective";
  } else if (!exited.empty()) {
    std::string waiting;
    for (const auto& [site, ids] : barriers) {
      waiting += (waiting.empty() ? "" : ", ") + threads_text(ids) + " at " + site;
    }
    headline = threads_text(exited) + " exited while others wait at __syncthreads (" + waiting +
               "). Every thread of a block must reach each __syncthreads; an early return skips it";
  } else {
    std::string sites;
    for (const auto& [site, ids] : barriers) {
      sites += (sites.empty() ? "" : ", ") + threads_text(ids) + " wait at " + site;
    }
    headline = "divergent __syncthreads: " + sites +
               ". Every thread of a block must reach the same __syncthreads";
  }

  std::string all;
  for (const auto& [what, ids] : everyone) {
    all += "\n  " + threads_text(ids) + ": " + what;
  }
  return where() + " is stuck: " + headline + ".\nWhere each thread is:" + all;
}

}  // namespace simt::inline emu::detail

// Text for the emulator's error messages: thread and lane ranges, masks, call sites.
#pragma once

#include <string>
#include <vector>

#include "simt/emu/runtime.hpp"

namespace simt::inline emu::detail {

/// Returns sorted ids as compact ranges: {0..63, 65} -> "0-63, 65".
std::string id_ranges(const std::vector<unsigned>& sorted_ids);

/// Returns the set bits of a lane mask as ranges: 0xffff0000 -> "16-31".
std::string lane_ranges(unsigned lanes);

/// Returns "thread 5" or "threads 0-63, 65" for sorted ids.
std::string threads_text(const std::vector<unsigned>& sorted_ids);

/// Returns a mask as CUDA code writes it: "0x0000ffff".
std::string mask_text(unsigned mask);

/// Returns "file.cpp:120": the file's base name keeps messages short, the line finds the call.
std::string site_text(SourceSite site);

/// Returns the CUDA name of a warp collective: "__shfl_xor_sync", "__syncwarp", ...
const char* op_name(WarpOp op);

}  // namespace simt::inline emu::detail

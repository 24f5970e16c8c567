// The memory checker's entry points for the emulator's own code (see checker.cpp).
#pragma once

#include <cstddef>

#include "simt/emu/runtime.hpp"

namespace simt::inline emu::detail {

/// An asynchronous copy of the running thread reads src_bytes at src now and will write
/// dst_bytes at dst when it lands.
void checker_async_started(const void* src, std::size_t src_bytes, const void* dst,
                           std::size_t dst_bytes, SourceSite site);

/// An asynchronous copy of the running thread wrote `bytes` at dst.
void checker_async_landed(const void* dst, std::size_t bytes, SourceSite site);

}  // namespace simt::inline emu::detail

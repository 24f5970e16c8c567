// SIMT_HAS_ASAN is 1 when this translation unit is compiled with AddressSanitizer, else 0.
// GCC announces ASan with __SANITIZE_ADDRESS__, Clang through __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define SIMT_HAS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIMT_HAS_ASAN 1
#endif
#endif

#ifndef SIMT_HAS_ASAN
#define SIMT_HAS_ASAN 0
#endif

/// \file
/// nvcuda::wmma on the emulator: warp-wide 16x16x16 matrix tiles (tensor cores on a GPU).
///
/// The same spellings as CUDA's <mma.h>, for the shapes the labs use: m16n16k16, __half or
/// __nv_bfloat16 matrix_a / matrix_b fragments (row_major or col_major) and float accumulators.
/// load_matrix_sync, store_matrix_sync and mma_sync are warp collectives like the shuffles: every
/// lane of the warp must arrive at the same call, with the same arguments, and the last lane to
/// arrive does the whole tile's work once (src/wmma.cpp). Which lane holds which element of a
/// fragment is unspecified by CUDA; here it is a permutation that depends on the schedule, so a
/// kernel that reads x[i] as "row i / ..." gives different answers under different schedules.
///
/// Included through simt/cuda.hpp when nvcc is not the compiler; under nvcc the real <mma.h> is.
#pragma once

#include <cstdint>
#include <type_traits>

#include "simt/emu/fp16.hpp"
#include "simt/emu/runtime.hpp"

namespace simt {
inline namespace emu {
namespace detail {

/// Which operand of D = A * B + C a fragment holds.
enum class WmmaUse : std::uint8_t { MatrixA, MatrixB, Accumulator };

/// The element types the emulator's fragments hold.
enum class WmmaElement : std::uint8_t { Half, BFloat16, Float };

/// How a 16x16 tile lies in memory: rows contiguous (row major) or columns contiguous.
enum class WmmaLayout : std::uint8_t { RowMajor, ColMajor };

/// The elements one lane holds of a 16x16 fragment (CUDA's num_elements): 16 for a __half
/// matrix_a or matrix_b (every element twice, 512 slots for 256 elements), 8 otherwise.
constexpr int wmma_elements_per_lane(WmmaUse use, WmmaElement element) {
  return use != WmmaUse::Accumulator && element == WmmaElement::Half ? 16 : 8;
}

/// One lane's part in a wmma collective: the arguments every lane must pass alike, and where its
/// own fragments are (read when it arrives, written after the warp's collective completes).
struct WmmaCall {
  WmmaUse use = WmmaUse::Accumulator;          // load / store: the fragment's use
  WmmaElement element = WmmaElement::Float;    // load / store: its element type; mma: A's and B's
  WmmaLayout layout = WmmaLayout::RowMajor;    // load / store: the memory layout; mma: A's layout
  WmmaLayout b_layout = WmmaLayout::RowMajor;  // mma: B's layout
  void* memory = nullptr;                      // load: the tile read; store: the tile written
  unsigned ldm = 0;                            // elements between consecutive rows (columns)
  const void* a = nullptr;                     // store: the accumulator's x[]; mma: A's x[]
  const void* b = nullptr;                     // mma: B's x[]
  const void* c = nullptr;                     // mma: C's x[]
  void* d = nullptr;                           // load: the fragment's x[]; mma: D's x[]
};

/// Makes the calling lane meet its whole warp in the wmma collective `op` (WmmaLoad, WmmaStore
/// or WmmaMma) at `site`; returns once the warp's operation is done and this lane's output
/// fragment, if any, holds its elements. Throws KernelError for a broken rule of the API.
void wmma_collective(WarpOp op, const WmmaCall& call, SourceSite site);

template <class T>
constexpr WmmaElement wmma_element_of() {
  if constexpr (std::is_same_v<T, __half>) {
    return WmmaElement::Half;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return WmmaElement::BFloat16;
  } else {
    static_assert(std::is_same_v<T, float>, "wmma fragments hold __half, __nv_bfloat16 or float");
    return WmmaElement::Float;
  }
}

/// A fragment's storage, with CUDA's public members: num_elements, element_type and x[].
template <class T, int kElements>
struct alignas(8) WmmaFragmentBase {
  enum { num_elements = kElements };
  enum { num_storage_elements = kElements };
  using element_type = T;
  using storage_element_type = T;
  T x[kElements];
};

}  // namespace detail
}  // namespace emu
}  // namespace simt

namespace nvcuda::wmma {

// Tags, as in CUDA: what a fragment holds and how a matrix_a / matrix_b tile lies in memory.
struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;

/// The memory layout of an accumulator tile, given at load and store time.
enum layout_t { mem_row_major, mem_col_major };

/// A warp's share of one matrix tile; each lane holds num_elements of its elements in x[]. Only
/// the specialisations below exist: the emulator's subset of CUDA's.
template <class Use, int m, int n, int k, class T, class Layout = void>
class fragment {
  static_assert(sizeof(Use*) == 0,
                "simt: the emulator's nvcuda::wmma has m16n16k16 fragments only: matrix_a and "
                "matrix_b of __half or __nv_bfloat16 (row_major or col_major), and float "
                "accumulators (no Layout)");
};

template <>
class fragment<matrix_a, 16, 16, 16, __half, row_major>
    : public simt::detail::WmmaFragmentBase<__half, 16> {};
template <>
class fragment<matrix_a, 16, 16, 16, __half, col_major>
    : public simt::detail::WmmaFragmentBase<__half, 16> {};
template <>
class fragment<matrix_b, 16, 16, 16, __half, row_major>
    : public simt::detail::WmmaFragmentBase<__half, 16> {};
template <>
class fragment<matrix_b, 16, 16, 16, __half, col_major>
    : public simt::detail::WmmaFragmentBase<__half, 16> {};
template <>
class fragment<matrix_a, 16, 16, 16, __nv_bfloat16, row_major>
    : public simt::detail::WmmaFragmentBase<__nv_bfloat16, 8> {};
template <>
class fragment<matrix_a, 16, 16, 16, __nv_bfloat16, col_major>
    : public simt::detail::WmmaFragmentBase<__nv_bfloat16, 8> {};
template <>
class fragment<matrix_b, 16, 16, 16, __nv_bfloat16, row_major>
    : public simt::detail::WmmaFragmentBase<__nv_bfloat16, 8> {};
template <>
class fragment<matrix_b, 16, 16, 16, __nv_bfloat16, col_major>
    : public simt::detail::WmmaFragmentBase<__nv_bfloat16, 8> {};
template <>
class fragment<accumulator, 16, 16, 16, float> : public simt::detail::WmmaFragmentBase<float, 8> {};

/// Sets every element this lane holds to `v`. Not a collective (in CUDA it is a plain loop over
/// x[]); call it from every lane with the same `v`, since which elements a lane holds is unknown.
template <class T, int kElements>
inline void fill_fragment(simt::detail::WmmaFragmentBase<T, kElements>& f,
                          const std::type_identity_t<T>& v) {
  for (int i = 0; i < kElements; ++i) f.x[i] = v;
}

// The collectives take the call site first; the macros at the end of this file supply it, so
// kernels write wmma::load_matrix_sync(a, p, ldm) exactly as under nvcc.

/// Loads the 16x16 matrix_a or matrix_b tile at `p` (rows, or columns for col_major, `ldm`
/// elements apart) into `a`. A warp collective: the whole warp, the same p and ldm.
template <class Use, class T, class Layout>
void load_matrix_sync_at(simt::detail::SourceSite site, fragment<Use, 16, 16, 16, T, Layout>& a,
                         const std::type_identity_t<T>* p, unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>,
                "load_matrix_sync of an accumulator takes a layout: "
                "load_matrix_sync(c, p, ldm, wmma::mem_row_major)");
  using simt::detail::WmmaLayout;
  simt::detail::WmmaCall call;
  call.use = std::is_same_v<Use, matrix_a> ? simt::detail::WmmaUse::MatrixA
                                           : simt::detail::WmmaUse::MatrixB;
  call.element = simt::detail::wmma_element_of<T>();
  call.layout = std::is_same_v<Layout, row_major> ? WmmaLayout::RowMajor : WmmaLayout::ColMajor;
  call.memory = const_cast<T*>(p);  // read only
  call.ldm = ldm;
  call.d = a.x;
  simt::detail::wmma_collective(simt::detail::WarpOp::WmmaLoad, call, site);
}

/// Loads the 16x16 float tile at `p` (`ldm` elements between rows for mem_row_major, between
/// columns for mem_col_major) into the accumulator `c`. A warp collective.
inline void load_matrix_sync_at(simt::detail::SourceSite site,
                                fragment<accumulator, 16, 16, 16, float>& c, const float* p,
                                unsigned ldm, layout_t layout) {
  simt::detail::WmmaCall call;
  call.layout = layout == mem_row_major ? simt::detail::WmmaLayout::RowMajor
                                        : simt::detail::WmmaLayout::ColMajor;
  call.memory = const_cast<float*>(p);  // read only
  call.ldm = ldm;
  call.d = c.x;
  simt::detail::wmma_collective(simt::detail::WarpOp::WmmaLoad, call, site);
}

/// Stores the accumulator `c` as the 16x16 float tile at `p`, laid out as `layout` with `ldm`
/// elements between rows (columns). A warp collective.
inline void store_matrix_sync_at(simt::detail::SourceSite site, float* p,
                                 const fragment<accumulator, 16, 16, 16, float>& c, unsigned ldm,
                                 layout_t layout) {
  simt::detail::WmmaCall call;
  call.layout = layout == mem_row_major ? simt::detail::WmmaLayout::RowMajor
                                        : simt::detail::WmmaLayout::ColMajor;
  call.memory = p;
  call.ldm = ldm;
  call.a = c.x;
  simt::detail::wmma_collective(simt::detail::WarpOp::WmmaStore, call, site);
}

/// d = a * b + c over the 16x16x16 tile, in float (d may be c). A warp collective.
template <class T, class LayoutA, class LayoutB>
void mma_sync_at(simt::detail::SourceSite site, fragment<accumulator, 16, 16, 16, float>& d,
                 const fragment<matrix_a, 16, 16, 16, T, LayoutA>& a,
                 const fragment<matrix_b, 16, 16, 16, T, LayoutB>& b,
                 const fragment<accumulator, 16, 16, 16, float>& c) {
  using simt::detail::WmmaLayout;
  simt::detail::WmmaCall call;
  call.element = simt::detail::wmma_element_of<T>();
  call.layout = std::is_same_v<LayoutA, row_major> ? WmmaLayout::RowMajor : WmmaLayout::ColMajor;
  call.b_layout = std::is_same_v<LayoutB, row_major> ? WmmaLayout::RowMajor : WmmaLayout::ColMajor;
  call.a = a.x;
  call.b = b.x;
  call.c = c.x;
  call.d = d.x;
  simt::detail::wmma_collective(simt::detail::WarpOp::WmmaMma, call, site);
}

}  // namespace nvcuda::wmma

// Macros, so that each call records its file and line for the error messages; they work with
// every spelling of the name (wmma::, nvcuda::wmma::, or after `using namespace`).
#define load_matrix_sync(...) load_matrix_sync_at(SIMT_SITE_, __VA_ARGS__)
#define store_matrix_sync(...) store_matrix_sync_at(SIMT_SITE_, __VA_ARGS__)
#define mma_sync(...) mma_sync_at(SIMT_SITE_, __VA_ARGS__)

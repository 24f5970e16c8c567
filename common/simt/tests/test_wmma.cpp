// nvcuda::wmma on the emulator: every collective against a host GEMM for both input types and
// every layout, the schedule-dependent element mapping, and the rules CUDA sets for the calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "portable_wmma.hpp"  // the only file that includes it (its kernels are not inline)
#include "test_helpers.hpp"

namespace simt_tests {
namespace {

using nvcuda::wmma::col_major;
using nvcuda::wmma::row_major;
using simt::Schedule;

struct ScheduleCase {
  Schedule schedule;
  std::uint64_t seed;
};
constexpr ScheduleCase kSchedules[] = {
    {Schedule::Forward, 0}, {Schedule::Reverse, 0}, {Schedule::Random, 1}, {Schedule::Random, 2}};

template <class T>
T round_to(float f) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half(f);
  } else {
    return __float2bfloat16(f);
  }
}

template <class T>
const char* type_name() {
  return std::is_same_v<T, __half> ? "__half" : "__nv_bfloat16";
}

/// A rows x cols matrix of doubles, [row * cols + col].
struct Matrix {
  int rows = 0, cols = 0;
  std::vector<double> v;
  double operator()(int r, int c) const { return v[static_cast<std::size_t>(r * cols + c)]; }
};

/// Lays `m` out with leading dimension `ld` (rows apart for row major, columns for column
/// major), every element outside the matrix set to `pad`.
template <class T>
std::vector<T> lay_out(const Matrix& m, unsigned ld, bool row_major, T pad) {
  std::vector<T> out(static_cast<std::size_t>(ld) * (row_major ? m.rows : m.cols), pad);
  for (int r = 0; r < m.rows; ++r) {
    for (int c = 0; c < m.cols; ++c) {
      out[row_major ? r * ld + c : c * ld + r] = T(static_cast<float>(m(r, c)));
    }
  }
  return out;
}

/// A random matrix of values in [-2, 2] already rounded to T (so host and kernel see the same).
template <class T>
Matrix random_matrix(int rows, int cols, std::mt19937& gen) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  Matrix m{rows, cols, std::vector<double>(static_cast<std::size_t>(rows * cols))};
  for (double& x : m.v) x = static_cast<double>(static_cast<float>(round_to<T>(dist(gen))));
  return m;
}

constexpr float kPadding = 12345.0f;  // D's contents outside the matrix: the store must keep it

/// [test_wmma_gemm]
/// Runs the wmma GEMM for one type and layout combination under every schedule and compares
/// it with a float64 GEMM of the same rounded inputs on the host.
template <class T, class LayoutA, class LayoutB>
void check_gemm(bool with_c, bool c_row_major, bool d_row_major, unsigned seed) {
  constexpr bool kRowA = std::is_same_v<LayoutA, row_major>;
  constexpr bool kRowB = std::is_same_v<LayoutB, row_major>;
  emu::WmmaGemmShape shape;
  shape.m = 32;
  shape.n = 48;
  shape.k = 64;  // four mma_sync steps
  // Leading dimensions larger than the matrix, so rows and columns of padding lie between.
  shape.lda = kRowA ? shape.k + 8 : shape.m + 8;
  shape.ldb = kRowB ? shape.n + 8 : shape.k + 8;
  shape.ldc = c_row_major ? shape.n + 4 : shape.m + 4;
  shape.ldd = d_row_major ? shape.n + 4 : shape.m + 4;
  shape.c_row_major = c_row_major;
  shape.d_row_major = d_row_major;
  shape.with_c = with_c;
  shape.a_scale = 2.0f;       // exact in T
  shape.d_scale = 0.25f;      // exact in float
  shape.warps_per_block = 4;  // 6 tiles: the second block has two warps with no tile

  std::mt19937 gen(seed);
  const Matrix a = random_matrix<T>(shape.m, shape.k, gen);
  const Matrix b = random_matrix<T>(shape.k, shape.n, gen);
  const Matrix c = random_matrix<T>(shape.m, shape.n, gen);  // (values of T fit in float too)
  const T nan = round_to<T>(NAN);  // padding poisons any tile read that strays outside
  const std::vector<T> a_mem = lay_out(a, shape.lda, kRowA, nan);
  const std::vector<T> b_mem = lay_out(b, shape.ldb, kRowB, nan);
  const std::vector<float> c_mem =
      with_c ? lay_out(c, shape.ldc, c_row_major, NAN) : std::vector<float>{};
  const std::vector<float> d_init(
      static_cast<std::size_t>(shape.ldd) * (d_row_major ? shape.m : shape.n), kPadding);

  std::vector<float> first;  // the result under the first schedule: all must give these bits
  for (const ScheduleCase& sc : kSchedules) {
    const ScopedSchedule schedule(sc.schedule, sc.seed);
    SCOPED_TRACE(std::string(type_name<T>()) + " A " + (kRowA ? "row" : "col") + "_major, B " +
                 (kRowB ? "row" : "col") + "_major, " +
                 (with_c ? (c_row_major ? "C mem_row_major, " : "C mem_col_major, ") : "no C, ") +
                 "D " + (d_row_major ? "mem_row_major" : "mem_col_major") + ", schedule " +
                 simt::schedule_name(sc.schedule) + " " + std::to_string(sc.seed));
    const std::vector<float> d =
        emu::wmma_gemm<T, LayoutA, LayoutB>(a_mem, b_mem, c_mem, d_init, shape);
    int wrong = 0;
    for (int r = 0; r < shape.m; ++r) {
      for (int col = 0; col < shape.n; ++col) {
        double want = with_c ? c(r, col) : 0.0;
        double magnitude = std::abs(want);
        for (int k = 0; k < shape.k; ++k) {
          want += shape.a_scale * a(r, k) * b(k, col);
          magnitude += std::abs(shape.a_scale * a(r, k) * b(k, col));
        }
        want *= shape.d_scale;
        // Each of the k / 16 mma_sync calls rounds an exact tile sum to float once: at most
        // 2^-24 of a partial sum, and no partial sum exceeds |c| + sum |a * b|.
        const double tolerance = (shape.k / 16) * std::ldexp(magnitude * shape.d_scale, -24);
        const float got = d[d_row_major ? r * shape.ldd + col : col * shape.ldd + r];
        if (!(std::abs(got - want) <= tolerance) && ++wrong <= 5) {
          ADD_FAILURE() << "D(" << r << ", " << col << ") = " << got << ", host GEMM " << want
                        << " (tolerance " << tolerance << ")";
        }
      }
    }
    EXPECT_EQ(wrong, 0) << "elements of D differ from the host GEMM";
    int padding_changed = 0;
    const int major = d_row_major ? shape.m : shape.n;
    const int minor = d_row_major ? shape.n : shape.m;
    for (int i = 0; i < major; ++i) {
      for (int j = minor; j < static_cast<int>(shape.ldd); ++j) {
        padding_changed += d[static_cast<std::size_t>(i) * shape.ldd + j] != kPadding;
      }
    }
    EXPECT_EQ(padding_changed, 0) << "store_matrix_sync wrote outside the 16x16 tiles";
    if (first.empty()) {
      first = d;
    } else {
      EXPECT_EQ(d, first) << "a kernel that treats x[] uniformly must not depend on the schedule";
    }
  }
}
/// [test_wmma_gemm]

template <class T>
void check_every_layout() {
  unsigned seed = 1;
  for (const bool d_row : {true, false}) {
    // Without C, with C in each layout.
    const std::pair<bool, bool> c_cases[] = {{false, true}, {true, true}, {true, false}};
    for (const auto& [with_c, c_row] : c_cases) {
      check_gemm<T, row_major, row_major>(with_c, c_row, d_row, seed++);
      check_gemm<T, row_major, col_major>(with_c, c_row, d_row, seed++);
      check_gemm<T, col_major, row_major>(with_c, c_row, d_row, seed++);
      check_gemm<T, col_major, col_major>(with_c, c_row, d_row, seed++);
    }
  }
}

TEST(SimtWmma, HalfGemmMatchesTheHostForEveryLayout) {
  check_every_layout<__half>();
}

TEST(SimtWmma, Bfloat16GemmMatchesTheHostForEveryLayout) {
  check_every_layout<__nv_bfloat16>();
}

// ---- fill_fragment ------------------------------------------------------------------------

// D = A * B + C with A = 1, B = 0.5 and C = 2.5 everywhere: every element is 16 * 0.5 + 2.5.
template <class T>
__global__ void filled_kernel(float* d) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::fill_fragment(a, T(1.0f));
  wmma::fill_fragment(b, T(0.5f));
  wmma::fill_fragment(c, 2.5f);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(d, c, 16, wmma::mem_row_major);
}

TEST(SimtWmma, FillFragmentSetsEveryElement) {
  for (const ScheduleCase& sc : kSchedules) {
    const ScopedSchedule schedule(sc.schedule, sc.seed);
    simt::DeviceBuffer<float> d(256);
    for (auto* kernel : {filled_kernel<__half>, filled_kernel<__nv_bfloat16>}) {
      d.fill_bytes(0);
      simt::launch(kernel, dim3(1), dim3(32), 0, d.data());
      std::vector<float> host(256);
      d.download(host.data(), 256);
      EXPECT_EQ(host, std::vector<float>(256, 10.5f)) << simt::schedule_name(sc.schedule);
    }
  }
}

// ---- The element mapping ------------------------------------------------------------------

/// Each lane loads the 16x16 tile (ldm 16, as Frag's layout or `layout` says) and writes what
/// it holds: out[lane * num_elements + i] = x[i].
template <class Frag, class T>
__global__ void dump_kernel(const T* tile, float* out, nvcuda::wmma::layout_t layout) {
  Frag f;
  if constexpr (std::is_same_v<T, float>) {
    nvcuda::wmma::load_matrix_sync(f, tile, 16, layout);
  } else {
    nvcuda::wmma::load_matrix_sync(f, tile, 16);
    (void)layout;
  }
  const unsigned lane = threadIdx.x % 32;
  for (int i = 0; i < f.num_elements; ++i) {
    out[lane * f.num_elements + i] = static_cast<float>(f.x[i]);
  }
}

/// Returns what every lane holds of the tile whose element (r, c) is r * 16 + c, stored row
/// major or column major.
template <class Frag, class T>
std::vector<float> dump(bool row_major_memory) {
  std::vector<T> tile(256);
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 16; ++c) {
      tile[row_major_memory ? r * 16 + c : c * 16 + r] = T(static_cast<float>(r * 16 + c));
    }
  }
  simt::DeviceBuffer<T> d_tile(256);
  simt::DeviceBuffer<float> d_out(32 * Frag::num_elements);
  d_tile.upload(tile.data(), 256);
  simt::launch(dump_kernel<Frag, T>, dim3(1), dim3(32), 0, d_tile.data(), d_out.data(),
               row_major_memory ? nvcuda::wmma::mem_row_major : nvcuda::wmma::mem_col_major);
  std::vector<float> out(32 * Frag::num_elements);
  d_out.download(out.data(), out.size());
  return out;
}

template <class Frag, class T>
void check_mapping(int per_lane, int copies, bool row_major_memory) {
  using nvcuda::wmma::fragment;
  static_assert(sizeof(Frag) == sizeof(T) * Frag::num_elements);
  EXPECT_EQ(static_cast<int>(Frag::num_elements), per_lane);
  std::vector<std::vector<float>> dumps;
  for (const ScheduleCase& sc : kSchedules) {
    const ScopedSchedule schedule(sc.schedule, sc.seed);
    const std::vector<float> held = dump<Frag, T>(row_major_memory);
    // Every element is held `copies` times: the slots are a permutation of the elements.
    std::map<float, int> count;
    for (const float v : held) ++count[v];
    ASSERT_EQ(count.size(), 256u) << simt::schedule_name(sc.schedule);
    for (const auto& [value, n] : count) EXPECT_EQ(n, copies) << "element " << value;
    EXPECT_EQ((dump<Frag, T>(row_major_memory)), held) << "the mapping is fixed per schedule";
    dumps.push_back(held);
  }
  for (std::size_t i = 0; i < dumps.size(); ++i) {
    for (std::size_t j = i + 1; j < dumps.size(); ++j) {
      EXPECT_NE(dumps[i], dumps[j]) << "schedules " << i << " and " << j << " map alike";
    }
  }
}

TEST(SimtWmma, EveryFragmentIsAPermutationThatDependsOnTheSchedule) {
  using namespace nvcuda::wmma;
  // CUDA's sizes: 16 per lane for a __half matrix_a / matrix_b (each element twice), 8 for a
  // __nv_bfloat16 one and for a float accumulator.
  check_mapping<fragment<matrix_a, 16, 16, 16, __half, row_major>, __half>(16, 2, true);
  check_mapping<fragment<matrix_b, 16, 16, 16, __half, col_major>, __half>(16, 2, false);
  check_mapping<fragment<matrix_a, 16, 16, 16, __nv_bfloat16, col_major>, __nv_bfloat16>(8, 1,
                                                                                         false);
  check_mapping<fragment<matrix_b, 16, 16, 16, __nv_bfloat16, row_major>, __nv_bfloat16>(8, 1,
                                                                                         true);
  check_mapping<fragment<accumulator, 16, 16, 16, float>, float>(8, 1, true);
  check_mapping<fragment<accumulator, 16, 16, 16, float>, float>(8, 1, false);
}

TEST(SimtWmma, TheMappingDoesNotDependOnTheMemoryLayout) {
  using namespace nvcuda::wmma;
  // The fragment holds matrix elements; how they lay in memory only changes where they come from.
  EXPECT_EQ((dump<fragment<matrix_a, 16, 16, 16, __half, row_major>, __half>(true)),
            (dump<fragment<matrix_a, 16, 16, 16, __half, col_major>, __half>(false)));
  EXPECT_EQ((dump<fragment<accumulator, 16, 16, 16, float>, float>(true)),
            (dump<fragment<accumulator, 16, 16, 16, float>, float>(false)));
}

// Each lane stores its position: x[i] = lane * 8 + i. The stored tile holds each of 0..255
// once, in an order that depends on the schedule.
__global__ void positions_kernel(float* d) {
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
  const unsigned lane = threadIdx.x % 32;
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = static_cast<float>(lane * 8 + i);
  nvcuda::wmma::store_matrix_sync(d, acc, 16, nvcuda::wmma::mem_col_major);
}

TEST(SimtWmma, StoreWritesEverySlotOnce) {
  for (const ScheduleCase& sc : kSchedules) {
    const ScopedSchedule schedule(sc.schedule, sc.seed);
    simt::DeviceBuffer<float> d(256);
    simt::launch(positions_kernel, dim3(1), dim3(32), 0, d.data());
    std::vector<float> host(256);
    d.download(host.data(), 256);
    std::sort(host.begin(), host.end());
    for (int i = 0; i < 256; ++i) ASSERT_EQ(host[i], static_cast<float>(i));
  }
}

/// [positional_bug]
// A causal mask on the accumulator that assumes lane l holds row l / 2, columns (l % 2) * 8 + i:
// a layout CUDA never promised. The emulator's mapping makes the answer wrong and different
// under each schedule.
__global__ void positional_mask_kernel(const float* c, float* d) {
  using namespace nvcuda;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
  const int lane = static_cast<int>(threadIdx.x % 32);
  for (int i = 0; i < acc.num_elements; ++i) {
    const int row = lane / 2;
    const int col = lane % 2 * 8 + i;
    if (col > row) acc.x[i] = 0.0f;
  }
  wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}

// The right way: store the tile, mask it in memory where rows and columns are known.
__global__ void masked_in_memory_kernel(const float* c, float* d) {
  using namespace nvcuda;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
  wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (unsigned e = threadIdx.x % 32; e < 256; e += 32) {
    if (e % 16 > e / 16) d[e] = 0.0f;
  }
}
/// [positional_bug]

std::vector<float> run_mask(void (*kernel)(const float*, float*), const ScheduleCase& sc) {
  const ScopedSchedule schedule(sc.schedule, sc.seed);
  std::vector<float> c(256);
  for (int e = 0; e < 256; ++e) c[e] = static_cast<float>(e + 1);
  simt::DeviceBuffer<float> d_c(256), d_d(256);
  d_c.upload(c.data(), 256);
  simt::launch(kernel, dim3(1), dim3(32), 0, d_c.data(), d_d.data());
  std::vector<float> d(256);
  d_d.download(d.data(), 256);
  return d;
}

/// [test_positional_bug]
TEST(SimtWmma, IndexingXByPositionGivesScheduleDependentResults) {
  std::vector<float> want(256);  // the lower triangle of 1..256, row major
  for (int e = 0; e < 256; ++e) want[e] = e % 16 > e / 16 ? 0.0f : static_cast<float>(e + 1);
  std::vector<std::vector<float>> results;
  for (const ScheduleCase& sc : kSchedules) {
    EXPECT_EQ(run_mask(masked_in_memory_kernel, sc), want) << simt::schedule_name(sc.schedule);
    results.push_back(run_mask(positional_mask_kernel, sc));
    EXPECT_NE(results.back(), want)
        << "the positional kernel must be caught under " << simt::schedule_name(sc.schedule);
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    for (std::size_t j = i + 1; j < results.size(); ++j) {
      EXPECT_NE(results[i], results[j]) << "schedules " << i << " and " << j << " agree";
    }
  }
}
/// [test_positional_bug]

// Lane 0 changes x[0] of a __half matrix_a fragment, which holds each element twice: the two
// copies of that element now differ, which only a kernel indexing x[] by position can do.
__global__ void one_copy_changed_kernel(const __half* tile, float* d) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(a, tile, 16);
  wmma::load_matrix_sync(b, tile, 16);
  wmma::fill_fragment(acc, 0.0f);
  if (threadIdx.x == 0) a.x[0] = __float2half(-1000.0f);
  wmma::mma_sync(acc, a, b, acc);
  wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}

TEST(SimtWmma, HalfFragmentCopiesThatDifferAreAnError) {
  std::vector<__half> tile(256, __float2half(0.5f));
  simt::DeviceBuffer<__half> d_tile(256);
  simt::DeviceBuffer<float> d(256);
  d_tile.upload(tile.data(), 256);
  for (const ScheduleCase& sc : kSchedules) {
    const ScopedSchedule schedule(sc.schedule, sc.seed);
    ExpectKernelError(
        [&] {
          simt::launch(one_copy_changed_kernel, dim3(1), dim3(32), 0, d_tile.data(), d.data());
        },
        {"warp 0", "wmma::mma_sync", "matrix_a element (", "is held twice", "(-1000)", "(0.5)",
         "the copies differ"});
  }
}

// ---- The rules of the calls ---------------------------------------------------------------

/// A 32 x 32 tile of halves and of floats, 256-byte aligned, for the error kernels.
struct Tiles {
  simt::DeviceBuffer<__half> halves{32 * 32};
  simt::DeviceBuffer<float> floats{32 * 32};
  Tiles() {
    halves.fill_bytes(0);
    floats.fill_bytes(0);
  }
};

constexpr int kHalfWarpLoad = __LINE__ + 5;
// Only half the warp loads; the other half leaves.
__global__ void half_warp_load_kernel(const __half* tile) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  if (threadIdx.x % 32 < 16) wmma::load_matrix_sync(a, tile, 16);
}

TEST(SimtWmmaErrors, EveryLaneOfTheWarpMustArrive) {
  // Forward: lanes 0-15 wait and the scheduler finds the rest gone; reverse: lanes 16-31 have
  // left before lane 15 arrives. Both name the lanes, the call and the line.
  for (const Schedule s : {Schedule::Forward, Schedule::Reverse}) {
    const ScopedSchedule schedule(s);
    Tiles tiles;
    ExpectKernelError(
        [&] { simt::launch(half_warp_load_kernel, dim3(1), dim3(64), 0, tiles.halves.data()); },
        {"block (0, 0, 0)", "wmma::load_matrix_sync", site(__FILE__, kHalfWarpLoad), "whole warp",
         "lanes 16-31, which exited"});
  }
}

constexpr int kPartialWarpStore = __LINE__ + 7;
// A 48-thread block: warp 1 has only 16 lanes, too few for a tile.
__global__ void partial_warp_kernel(float* d) {
  using namespace nvcuda;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 1.0f);
  const unsigned warp = threadIdx.x / 32;
  wmma::store_matrix_sync(d + warp * 256, acc, 16, wmma::mem_row_major);
}

TEST(SimtWmmaErrors, APartialWarpCannotTakePart) {
  simt::DeviceBuffer<float> d(512);
  ExpectKernelError([&] { simt::launch(partial_warp_kernel, dim3(1), dim3(48), 0, d.data()); },
                    {"warp 1", "wmma::store_matrix_sync at " + site(__FILE__, kPartialWarpStore),
                     "it needs lanes 16-31, which this block does not have (48 threads)"});
}

constexpr int kSkippedLoad = __LINE__ + 7;
constexpr int kNextLoad = __LINE__ + 7;
// Lane 0 skips a load the others take, so it meets them at the next one.
__global__ void skipped_load_kernel(const __half* tile) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  const unsigned lane = threadIdx.x % 32;
  if (lane != 0) wmma::load_matrix_sync(a, tile, 16);
  wmma::load_matrix_sync(a, tile, 16);
}

TEST(SimtWmmaErrors, CollectivesAreMatchedByCallSite) {
  for (const Schedule s : {Schedule::Forward, Schedule::Reverse}) {
    const ScopedSchedule schedule(s);
    Tiles tiles;
    ExpectKernelError(
        [&] { simt::launch(skipped_load_kernel, dim3(1), dim3(32), 0, tiles.halves.data()); },
        {"warp 0", "the lanes of the warp meet at different collectives",
         "lane 0 in wmma::load_matrix_sync (" + site(__FILE__, kNextLoad) + ")",
         "lanes 1-31 in wmma::load_matrix_sync (" + site(__FILE__, kSkippedLoad) + ")"});
  }
}

constexpr int kDisagreeingLoad = __LINE__ + 11;
// The lanes' arguments differ by half warp: what differs is chosen by `what`.
__global__ void disagreeing_kernel(const __half* halves, float* floats, int what) {
  using namespace nvcuda;
  const bool upper = threadIdx.x % 32 >= 16;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  if (what == 0 || what == 1) {
    const __half* tile = halves + (what == 0 && upper ? 16 : 0);
    const unsigned ldm = what == 1 && upper ? 32 : 16;
    wmma::load_matrix_sync(b, tile, ldm);
  } else {
    const wmma::layout_t layout = upper ? wmma::mem_col_major : wmma::mem_row_major;
    wmma::store_matrix_sync(floats, acc, 16, layout);
  }
}

TEST(SimtWmmaErrors, LanesMustPassTheSameArguments) {
  Tiles tiles;
  const auto run = [&](int what) {
    simt::launch(disagreeing_kernel, dim3(1), dim3(32), 0, tiles.halves.data(), tiles.floats.data(),
                 what);
  };
  const std::string load = "warp 0: wmma::load_matrix_sync at " + site(__FILE__, kDisagreeingLoad);
  ExpectKernelError([&] { run(0); }, {load, "lanes 0-15 pass pointer 0x",
                                      "lanes 16-31 pass pointer", "must pass the same pointer"});
  ExpectKernelError([&] { run(1); }, {load, "lanes 0-15 pass ldm 16, lanes 16-31 pass ldm 32",
                                      "must pass the same ldm"});
  ExpectKernelError([&] { run(2); }, {"wmma::store_matrix_sync",
                                      "lanes 0-15 pass layout mem_row_major, lanes 16-31 pass "
                                      "layout mem_col_major",
                                      "must pass the same layout"});
}

constexpr int kMisalignedLoad = __LINE__ + 6;
constexpr int kMisalignedStore = __LINE__ + 9;
// Tiles that start 16 bytes past a 32-byte boundary.
__global__ void misaligned_kernel(const __nv_bfloat16* halves, float* floats, bool store) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::col_major> a;
  if (!store) wmma::load_matrix_sync(a, halves + 8, 16);
  if (store) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::store_matrix_sync(floats + 4, acc, 16, wmma::mem_col_major);
  }
}

TEST(SimtWmmaErrors, PointersMustBe256BitAligned) {
  simt::DeviceBuffer<__nv_bfloat16> halves(32 * 32);
  simt::DeviceBuffer<float> floats(32 * 32);
  halves.fill_bytes(0);
  for (const bool store : {false, true}) {
    ExpectKernelError(
        [&] {
          simt::launch(misaligned_kernel, dim3(1), dim3(32), 0, halves.data(), floats.data(),
                       store);
        },
        {(store ? "wmma::store_matrix_sync at " + site(__FILE__, kMisalignedStore)
                : "wmma::load_matrix_sync at " + site(__FILE__, kMisalignedLoad)),
         "lanes 0-31 pass pointer 0x", "not 256-bit (32-byte) aligned",
         "16 bytes past a 32-byte boundary"});
  }
}

// A leading dimension that breaks CUDA's rule: a multiple of 16 bytes.
__global__ void bad_ldm_kernel(const __half* halves, float* floats, unsigned ldm, bool store) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  if (store) {
    wmma::store_matrix_sync(floats, acc, ldm, wmma::mem_row_major);
  } else {
    wmma::load_matrix_sync(a, halves, ldm);
  }
}

TEST(SimtWmmaErrors, LdmMustBeAMultipleOf16Bytes) {
  Tiles tiles;
  const auto run = [&](unsigned ldm, bool store) {
    simt::launch(bad_ldm_kernel, dim3(1), dim3(32), 0, tiles.halves.data(), tiles.floats.data(),
                 ldm, store);
  };
  ExpectKernelError([&] { run(20, false); },
                    {"wmma::load_matrix_sync",
                     "ldm — expected a multiple of 8 for __half elements (16 bytes), got 20"});
  ExpectKernelError([&] { run(18, true); },
                    {"wmma::store_matrix_sync",
                     "ldm — expected a multiple of 4 for float elements (16 bytes), got 18"});
  run(24, false);  // allowed: 48 bytes
  run(20, true);   // allowed: 80 bytes
}

TEST(SimtWmmaErrors, OutsideAKernel) {
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
  std::vector<float> tile(256);
  using nvcuda::wmma::mem_row_major;
  const auto load = [&] { nvcuda::wmma::load_matrix_sync(acc, tile.data(), 16, mem_row_major); };
  const int line = __LINE__ - 1;
  ExpectKernelError(load, {"wmma::load_matrix_sync at " + site(__FILE__, line) +
                           " was called outside a kernel thread"});
}

}  // namespace
}  // namespace simt_tests

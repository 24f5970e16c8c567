/// \file
/// The device side of the device-session layer every CUDA lab shares (given code): the half of a
/// session that is the same in every lab. CUDA C++, compiled once per backend like the lab's
/// given/launchers.cpp that includes it; everything lives in pa::device::SIMT_BACKEND (an inline
/// namespace). The host side is pa/device_session.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "pa/device_session.hpp"
#include "pa/device_tensors.cuh"
#include "pa/tensor.hpp"
#include "pa/tensor_checks.hpp"
#include "simt/timing.hpp"

namespace pa::device {
inline namespace SIMT_BACKEND {

/// [session_base]
/// What every lab's Session shares: the operands of a decode step over paged caches in this
/// backend's device memory (the query, both caches, the block tables and the sequence lengths),
/// the output, NaN until a launch writes it, the sizes every layout agrees on, the download of
/// the output, and the timings of the launch and of the two yardsticks over the caches. A lab's
/// Session derives from it, adds the sizes of its layout and its own buffers, and writes
/// enqueue() (the grid, the block, the shared memory and the arguments of its kernels), finish()
/// and checked_launch().
class SessionBase : public SessionImpl {
 public:
  void download(Tensor& out) const override {
    if (timed_unchecked_) {  // the flag and the errors, once after any number of timed spans
      timed_unchecked_ = false;
      finish();
    }
    const ArgCheck check("DeviceSession::download");
    dtype_is(check, "out", out, dtype_, "the dtype of query");
    shape_is(check, "out", out, out_shape_, "the shape of query");
    out_.download(static_cast<unsigned char*>(out.data()), out.nbytes());
  }

  /// The checked launch of tests and of the lab's API, on an output set to NaN first: a launch
  /// that writes nothing (a merge that never happens because a counter was left counting) cannot
  /// pass on the previous launch's answer.
  void launch() final {
    out_.fill_bytes(0xFF);
    checked_launch();
  }

  /// The span holds the kernels alone (enqueue: queued back to back, no host round trip);
  /// whether they were skeletons, or failed, is asked once, by the next download().
  double timed_launch() override {
    timed_unchecked_ = true;
    return timing_.launch([&] { enqueue(); });
  }
  double timed_read_roofline() override { return timing_.read_roofline(cache_spans()); }
  double timed_cache_copy() override { return timing_.cache_copy(cache_spans()); }

 protected:
  /// The lab's kernels queued with simt::enqueue, back to back on one stream, with nothing that
  /// waits on the host: the path timed_launch times.
  virtual void enqueue() = 0;

  /// The lab's kernels run and checked: enqueue() then finish(), or a check after each kernel to
  /// name the one still a skeleton. launch() calls it on a NaN output.
  virtual void checked_launch() = 0;

  /// Waits for the queued kernels (simt::synchronize) and throws what they left: a kernel's
  /// fault, or NotImplemented when one was still a skeleton (throw_if_todo).
  virtual void finish() const = 0;

  /// Copies the operands (checked by the lab's api.cpp) to the device; the caches in the lab's
  /// layout, whatever it is.
  SessionBase(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
              const Tensor& block_tables, const Tensor& seq_lens)
      : dtype_(query.dtype()),
        out_shape_(query.shape()),
        query_(bytes_to_device(query)),
        key_cache_(bytes_to_device(key_cache)),
        value_cache_(bytes_to_device(value_cache)),
        out_(query.nbytes()),
        block_tables_(to_device<std::int32_t>(block_tables)),
        seq_lens_(to_device<std::int32_t>(seq_lens)),
        num_seqs_(static_cast<int>(query.size(0))),
        num_heads_(static_cast<int>(query.size(1))),
        head_size_(static_cast<int>(query.size(2))),
        max_num_blocks_per_seq_(static_cast<int>(block_tables.size(1))) {
    out_.fill_bytes(0xFF);  // NaN: an element the kernels forget to write cannot pass
    // The names the emulator's memory checker gives an access past a buffer's end.
    query_.set_name("query");
    key_cache_.set_name("key_cache");
    value_cache_.set_name("value_cache");
    out_.set_name("out");
    block_tables_.set_name("block_tables");
    seq_lens_.set_name("seq_lens");
  }

  /// The same from a lab's struct of a call's operands: its query, key_cache, value_cache,
  /// block_tables and seq_lens.
  template <class Args>
  explicit SessionBase(const Args& a)
      : SessionBase(a.query, a.key_cache, a.value_cache, a.block_tables, a.seq_lens) {}

  DType dtype_;                                    ///< of query, both caches and out
  std::vector<std::int64_t> out_shape_;            ///< query's: [num_seqs, num_heads, head_size]
  simt::DeviceBuffer<unsigned char> query_;        ///< [num_seqs, num_heads, head_size] of dtype_
  simt::DeviceBuffer<unsigned char> key_cache_;    ///< the lab's key cache layout, of dtype_
  simt::DeviceBuffer<unsigned char> value_cache_;  ///< the lab's value cache layout, of dtype_
  simt::DeviceBuffer<unsigned char> out_;          ///< [num_seqs, num_heads, head_size] of dtype_
  simt::DeviceBuffer<std::int32_t> block_tables_;  ///< [num_seqs, max_num_blocks_per_seq]
  simt::DeviceBuffer<std::int32_t> seq_lens_;      ///< [num_seqs]
  int num_seqs_, num_heads_, head_size_;           ///< query's extents
  int max_num_blocks_per_seq_;                     ///< block_tables' second extent

 private:
  std::vector<simt::DeviceSpan> cache_spans() const {
    return {{key_cache_.data(), key_cache_.size()}, {value_cache_.data(), value_cache_.size()}};
  }

  simt::SessionTiming timing_;
  mutable bool timed_unchecked_ = false;  // timed launches since the last finish()
};
/// [session_base]

/// What every lab's launchers share in this backend: open_session copies checked operands into
/// a new `Session` (the lab's SessionBase), device_count asks this backend's runtime. `Launchers`
/// is the lab's interface (its given/backend.hpp); the lab's BackendLaunchers derives from this
/// and writes its other launches.
template <class Launchers, class Session>
class BackendLaunchersBase : public Launchers {
 public:
  std::unique_ptr<SessionImpl> open_session(const typename Launchers::Args& args) const override {
    return std::make_unique<Session>(args);
  }
  int device_count() const override { return simt::cuda_device_count(); }
};

}  // namespace SIMT_BACKEND
}  // namespace pa::device

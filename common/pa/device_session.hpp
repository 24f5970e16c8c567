/// \file
/// The host side of the device-session layer every CUDA lab shares: a session (the operands
/// copied to one backend's device memory once, the kernels launched on them as often as asked),
/// the interface of one backend's build of a lab's kernels, and whether a CUDA device is there.
/// Plain C++: a lab's API header and api.cpp include it; the device half is
/// pa/device_session.cuh, the backend pick pa/backend.hpp.
///
/// How a CUDA lab is put together, with lab 05's names:
///   paged_attention_v1.hpp  cuda_v1::DeviceSession, a pa::DeviceSession on v1's operands
///   given/backend.hpp       cuda_v1::Launchers, pa::SessionLaunchers<AttentionArgs> and the
///                           launches of its own (reshape_and_cache, ...)
///   given/launchers.cpp     compiled once per backend: its Session, a pa::device::SessionBase
///                           with its own sizes, buffers and launch, and the Launchers
///   given/api.cpp           the public functions: check, pick a backend, open, launch
#pragma once

#include <memory>
#include <utility>

#include "pa/backend.hpp"
#include "pa/tensor.hpp"

namespace pa {

/// One backend's half of a session: the operands in that backend's device memory and the
/// launches on them (a lab's given/launchers.cpp implements it, through pa::device::SessionBase).
class SessionImpl {
 public:
  virtual ~SessionImpl() = default;
  /// Runs the lab's kernels once on the device copies.
  virtual void launch() = 0;
  /// Copies the output to `out` (query's dtype and shape).
  virtual void download(Tensor& out) const = 0;
  /// launch(), flushed and timed; its seconds.
  virtual double timed_launch() = 0;
  /// The read-only yardstick over both caches, timed alike; its seconds.
  virtual double timed_read_roofline() = 0;
  /// A device-to-device copy of both caches, timed alike; its seconds.
  virtual double timed_cache_copy() = 0;
};

/// [device_session]
/// A lab's attention call without the host copies around it, for timing its kernels alone (the
/// labs' bench_lab.cpp): the operands are copied to one backend's device memory once, and the
/// kernels run on them as often as asked, through the very launches the call makes. Each CUDA
/// lab's DeviceSession derives from it; its constructor takes the lab's operands, checks them as
/// the lab's call does and opens the session.
class DeviceSession {
 public:
  ~DeviceSession() = default;
  /// Sessions move (the bench programs keep them in std::unique_ptr or by value); they are not
  /// copied: the device memory has one owner.
  DeviceSession(DeviceSession&&) noexcept = default;
  DeviceSession& operator=(DeviceSession&&) noexcept = default;

  /// Runs the kernels once on the device copies; throws what the lab's call would.
  void launch() { impl_->launch(); }

  /// Copies the output to `out`: [num_seqs, num_heads, head_size], query's dtype.
  void download(Tensor& out) const { impl_->download(out); }

  /// Runs the kernels once and returns their seconds: on CUDA measured with events on the
  /// device's clock after flushing the L2 cache outside the timed span (so every byte of the
  /// caches comes from device memory); on the emulator measured with the host's clock. The span
  /// holds the kernel launches alone, queued without a host round trip; whether the kernels
  /// were skeletons, or failed, is asked once, by the next download().
  double timed_launch() { return impl_->timed_launch(); }

  /// The yardstick, flushed and timed like timed_launch: a read-only kernel over the key and
  /// value caches (simt::ReadRoofline); returns its seconds.
  double timed_read_roofline() { return impl_->timed_read_roofline(); }

  /// A second yardstick: a device-to-device copy of both caches; returns its seconds.
  double timed_cache_copy() { return impl_->timed_cache_copy(); }

 protected:
  DeviceSession() = default;
  /// Takes the session a backend's launchers opened on checked operands.
  void open(std::unique_ptr<SessionImpl> impl) { impl_ = std::move(impl); }

 private:
  std::unique_ptr<SessionImpl> impl_;
};
/// [device_session]

/// What one backend's build of a lab's kernels offers the host for sessions; `Args` is the lab's
/// struct of an attention call's operands. A lab's Launchers derives from it and adds its other
/// launches; given/launchers.cpp implements it once per backend.
template <class OperandsOfACall>
class SessionLaunchers {
 public:
  using Args = OperandsOfACall;

  virtual ~SessionLaunchers() = default;
  /// Copies checked operands to device memory, the output NaN until the first launch.
  virtual std::unique_ptr<SessionImpl> open_session(const Args& args) const = 0;
  /// CUDA devices this backend sees (the emulator: 0).
  virtual int device_count() const = 0;
};

/// Whether `cuda` (a lab's CUDA launchers, null in a build without the CUDA backend: pass
/// PA_CUDA_BACKEND_OR_NULL(cuda::launchers()), and name Launchers) sees a CUDA device.
template <class Launchers>
bool has_cuda_device(const Launchers* cuda) {
  return cuda != nullptr && cuda->device_count() > 0;
}

}  // namespace pa

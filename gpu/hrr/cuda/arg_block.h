// One call's argument block: its lists and values written one after another into pinned memory,
// each at a 256-byte aligned offset, and addressed by the kernels at the same offset of the
// device mirror that the call's one host-to-device copy fills. Plain C++, no CUDA calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>

#include "gpu/hrr/cuda/hrr_workspace.h"

namespace fieldbrain::hrr::cuda {

class ArgBlock {
 public:
  ArgBlock(std::byte* host, std::byte* device, int64_t capacity) : host_(host), device_(device), capacity_(capacity) {}

  // Room for n values of T: where the host writes them, and where the kernels will read them.
  // {nullptr, nullptr} when the block is full (overflow() then says so; the layout makes room for
  // every call, so this means a bug, reported rather than written past).
  template <typename T>
  std::pair<T*, const T*> Reserve(size_t n) {
    const int64_t at = AlignRegion(used_);
    const int64_t end = at + int64_t(n * sizeof(T));
    if (end > capacity_) {
      overflow_ = true;
      return {nullptr, nullptr};
    }
    used_ = end;
    return {reinterpret_cast<T*>(host_ + at), reinterpret_cast<const T*>(device_ + at)};
  }

  // A copy of `values`; the device address of the copy.
  template <typename T>
  const T* Add(std::span<const T> values) {
    auto [host, device] = Reserve<T>(values.size());
    if (host != nullptr && !values.empty()) std::memcpy(host, values.data(), values.size_bytes());
    return device;
  }

  int64_t bytes() const { return used_; }
  bool overflow() const { return overflow_; }

 private:
  std::byte* host_;
  std::byte* device_;
  int64_t capacity_;
  int64_t used_ = 0;
  bool overflow_ = false;
};

}  // namespace fieldbrain::hrr::cuda

// RAII owners for every CUDA resource of the engine (device and pinned memory, streams, events,
// graphs), and the counting helpers through which the engine allocates and copies (see
// cuda_counters.h). Plain C++ over the CUDA runtime API: usable from .cc and .cu files alike.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "gpu/cuda/cuda_counters.h"

namespace fieldbrain::cuda {

// Owns one CUDA handle and destroys it with kDestroy. A destroy error has nowhere to go from a
// destructor; it also cannot leak anything the process could still free.
template <typename Handle, cudaError_t (*kDestroy)(Handle)>
class UniqueCuda {
 public:
  UniqueCuda() = default;
  explicit UniqueCuda(Handle h) : h_(h) {}
  ~UniqueCuda() { reset(); }
  UniqueCuda(UniqueCuda&& o) noexcept : h_(std::exchange(o.h_, Handle{})) {}
  UniqueCuda& operator=(UniqueCuda&& o) noexcept {
    if (this != &o) reset(std::exchange(o.h_, Handle{}));
    return *this;
  }
  UniqueCuda(const UniqueCuda&) = delete;
  UniqueCuda& operator=(const UniqueCuda&) = delete;

  Handle get() const { return h_; }
  explicit operator bool() const { return h_ != Handle{}; }
  void reset(Handle h = Handle{}) {
    if (h_ != Handle{}) static_cast<void>(kDestroy(h_));
    h_ = h;
  }

 private:
  Handle h_{};
};

using Stream = UniqueCuda<cudaStream_t, cudaStreamDestroy>;
using Event = UniqueCuda<cudaEvent_t, cudaEventDestroy>;
using Graph = UniqueCuda<cudaGraph_t, cudaGraphDestroy>;
using GraphExec = UniqueCuda<cudaGraphExec_t, cudaGraphExecDestroy>;

// A block of memory (device: cudaFree; pinned host: cudaFreeHost) with typed views by offset.
template <cudaError_t (*kFree)(void*)>
class MemoryBlock {
 public:
  MemoryBlock() = default;
  MemoryBlock(void* p, size_t bytes) : mem_(p), bytes_(bytes) {}

  std::byte* data() const { return static_cast<std::byte*>(mem_.get()); }
  size_t bytes() const { return bytes_; }
  template <typename T>
  T* at(int64_t offset) const {
    return reinterpret_cast<T*>(data() + offset);
  }

 private:
  UniqueCuda<void*, kFree> mem_;
  size_t bytes_ = 0;
};

using DeviceBuffer = MemoryBlock<cudaFree>;
using PinnedBuffer = MemoryBlock<cudaFreeHost>;

// The only ways the engine allocates and copies: each call is counted before it is made.
inline cudaError_t AllocateDevice(CudaCounters& counters, size_t bytes, DeviceBuffer& out) {
  void* p = nullptr;
  ++counters.device_allocs;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaSuccess) out = DeviceBuffer(p, bytes);
  return e;
}

inline cudaError_t AllocatePinned(CudaCounters& counters, size_t bytes, PinnedBuffer& out) {
  void* p = nullptr;
  ++counters.host_allocs;
  const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
  if (e == cudaSuccess) out = PinnedBuffer(p, bytes);
  return e;
}

inline void CountCopy(CudaCounters& counters, cudaMemcpyKind kind, int64_t bytes) {
  if (kind == cudaMemcpyHostToDevice) {
    ++counters.h2d_copies;
    counters.h2d_bytes += bytes;
  } else if (kind == cudaMemcpyDeviceToHost) {
    ++counters.d2h_copies;
    counters.d2h_bytes += bytes;
  }
}

inline cudaError_t CopyAsync(CudaCounters& counters, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                             cudaStream_t stream) {
  CountCopy(counters, kind, int64_t(bytes));
  return cudaMemcpyAsync(dst, src, bytes, kind, stream);
}

}  // namespace fieldbrain::cuda

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
using MemPool = UniqueCuda<cudaMemPool_t, cudaMemPoolDestroy>;
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

// Device memory from the stream-ordered allocator, freed with cudaFreeAsync on the stream it was
// allocated on: the free is ordered after the work already queued there and, unlike cudaFree,
// waits for nothing (no implicit synchronisation with other streams). The stream (and the pool)
// must outlive the buffer.
class StreamBuffer {
 public:
  StreamBuffer() = default;
  StreamBuffer(void* p, size_t bytes, cudaStream_t stream) : p_(p), bytes_(bytes), stream_(stream) {}
  ~StreamBuffer() { reset(); }
  StreamBuffer(StreamBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), stream_(o.stream_) {}
  StreamBuffer& operator=(StreamBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      stream_ = o.stream_;
    }
    return *this;
  }
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;

  std::byte* data() const { return static_cast<std::byte*>(p_); }
  size_t bytes() const { return bytes_; }
  template <typename T>
  T* at(int64_t offset) const {
    return reinterpret_cast<T*>(data() + offset);
  }
  // A free error has nowhere to go from here (a lost context frees everything anyway).
  void reset() {
    if (p_ != nullptr) static_cast<void>(cudaFreeAsync(p_, stream_));
    p_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
};

// The only ways the engine allocates and copies: each call is counted before it is made.
inline cudaError_t AllocateDevice(CudaCounters& counters, size_t bytes, DeviceBuffer& out) {
  void* p = nullptr;
  ++counters.device_allocs;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaSuccess) out = DeviceBuffer(p, bytes);
  return e;
}

// From `pool`, usable by work enqueued on `stream` after this call; freed on `stream` too.
inline cudaError_t AllocateFromPool(CudaCounters& counters, size_t bytes, cudaMemPool_t pool, cudaStream_t stream,
                                    StreamBuffer& out) {
  void* p = nullptr;
  ++counters.pool_allocs;
  const cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool, stream);
  if (e == cudaSuccess) out = StreamBuffer(p, bytes, stream);
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

// Streams, events and graphs of the emulated device. A stream is a worker thread that runs its
// operations in order (so host code that forgets to synchronise reads stale memory here as it
// would on a card); a stream being captured records its operations into a graph instead, and a
// graph launch puts the recorded operations back on a stream in the same order.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "cuda_emu/launch.h"
#include "cuda_runtime_api.h"

struct CUevent_st {
  std::mutex mu;
  std::condition_variable done;
  uint64_t enqueued = 0;  // records put on a stream
  uint64_t completed = 0;  // records that ran
  std::chrono::steady_clock::time_point time;
};

namespace fieldbrain::emu {

struct KernelOp {
  LaunchConfig config;
  std::shared_ptr<const std::function<void()>> thread_body;
  std::shared_ptr<const void> params;  // the arguments' tuple, for an injected effect
};
// A library's work (cuFFT, cuBLAS): a host function standing in for its kernels.
struct LibraryKernelOp {
  const char* name;
  std::shared_ptr<const std::function<cudaError_t()>> work;
};
struct MemcpyOp {
  void* dst;
  const void* src;
  size_t bytes;
  cudaMemcpyKind kind;
};
struct MemsetOp {
  void* dst;
  int value;
  size_t bytes;
};
struct EventRecordOp {
  cudaEvent_t event;
};
// cudaFreeAsync's point in its stream: the block's heap memory goes here.
struct MemFreeOp {
  void* ptr;
};
using Op = std::variant<KernelOp, LibraryKernelOp, MemcpyOp, MemsetOp, EventRecordOp, MemFreeOp>;

cudaGraphNodeType NodeTypeOf(const Op& op);

// Runs one operation where the device would (a stream worker).
void RunOp(Op& op);

}  // namespace fieldbrain::emu

struct CUgraphNode_st {
  fieldbrain::emu::Op op;
};

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;  // in capture order, which is also a valid run order
};

struct CUgraphExec_st {
  std::vector<fieldbrain::emu::Op> ops;
};

struct CUstream_st {
  explicit CUstream_st(bool blocking);
  ~CUstream_st();
  CUstream_st(const CUstream_st&) = delete;
  CUstream_st& operator=(const CUstream_st&) = delete;

  // Runs op after everything enqueued before it; when the stream is capturing, records it into
  // the capture's graph instead.
  cudaError_t Enqueue(fieldbrain::emu::Op op);
  // Waits until everything enqueued so far has run.
  void Drain();
  bool Idle();

  const bool blocking;  // synchronises with the legacy default stream
  // Capture state (touched by host threads only, under mu).
  std::mutex mu;
  bool capturing = false;
  bool capture_invalidated = false;
  cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
  std::thread::id capture_thread;
  std::unique_ptr<CUgraph_st> capture_graph;

 private:
  void Work();

  std::condition_variable wake_;
  std::condition_variable drained_;
  std::deque<fieldbrain::emu::Op> queue_;
  uint64_t enqueued_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

namespace fieldbrain::emu {

// The stream an API call names: the legacy default stream for null.
CUstream_st* StreamOf(cudaStream_t stream);
// Whether the calling thread may not make a "potentially unsafe" call now (a capture in global
// mode anywhere, or in thread-local mode by this thread); such a call then invalidates it.
bool CaptureForbidsUnsafeCalls();
void InvalidateCapturesForbiddingUnsafeCalls();
// Drains every stream (cudaDeviceSynchronize, and the legacy default stream's implicit
// synchronisation with blocking streams).
void DrainAllStreams(bool blocking_only);
// Invalidates the captures of blocking streams; true when there was one (the legacy stream may
// not then be used: cudaErrorStreamCaptureImplicit).
bool InvalidateCapturingBlockingStreams();

}  // namespace fieldbrain::emu

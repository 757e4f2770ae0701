#include "gpu/emu/stream.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "gpu/emu/device.h"
#include "gpu/emu/kernel_runner.h"
#include "gpu/emu/sanitizers.h"

namespace fieldbrain::emu {
namespace {

struct Registry {
  std::mutex mu;
  std::set<CUstream_st*> streams;
};

Registry& Streams() {
  static Registry r;
  return r;
}

void Run(MemcpyOp& op) {
  if (op.bytes > 0) std::memmove(op.dst, op.src, op.bytes);
}

void Run(MemsetOp& op) {
  if (op.bytes > 0) std::memset(op.dst, op.value, op.bytes);
}

void Run(EventRecordOp& op) {
  CUevent_st* e = op.event;
  std::lock_guard<std::mutex> lock(e->mu);
  e->time = std::chrono::steady_clock::now();
  ++e->completed;
  e->done.notify_all();
}

// Even on a faulted context: the block would otherwise only show as a leak.
void Run(MemFreeOp& op) { Release(op.ptr); }

void Run(LibraryKernelOp& op) {
  if (Sticky() != cudaSuccess) return;  // a faulted context runs nothing more
  const cudaError_t e = (*op.work)();
  if (e != cudaSuccess) {
    Report(std::string(op.name) + " failed on the device: " + cudaGetErrorName(e));
    Latch(cudaErrorLaunchFailure);
  }
}

void Run(KernelOp& op) {
  if (Sticky() != cudaSuccess) return;
  const KernelInjection injected = TakeRunInjection(op.config.name);
  if (injected.error != cudaSuccess) {  // the kernel faults: the context is lost
    Latch(injected.error);
    return;
  }
  RunGrid(op.config, *op.thread_body);
  if (injected.perturb != nullptr) injected.perturb(injected.context, op.params.get());
}

}  // namespace

cudaGraphNodeType NodeTypeOf(const Op& op) {
  struct Visitor {
    cudaGraphNodeType operator()(const KernelOp&) const { return cudaGraphNodeTypeKernel; }
    cudaGraphNodeType operator()(const LibraryKernelOp&) const { return cudaGraphNodeTypeKernel; }
    cudaGraphNodeType operator()(const MemcpyOp&) const { return cudaGraphNodeTypeMemcpy; }
    cudaGraphNodeType operator()(const MemsetOp&) const { return cudaGraphNodeTypeMemset; }
    cudaGraphNodeType operator()(const EventRecordOp&) const { return cudaGraphNodeTypeEventRecord; }
    cudaGraphNodeType operator()(const MemFreeOp&) const { return cudaGraphNodeTypeMemFree; }
  };
  return std::visit(Visitor{}, op);
}

void RunOp(Op& op) {
  std::visit([](auto& o) { Run(o); }, op);
}

CUstream_st* StreamOf(cudaStream_t stream) {
  static CUstream_st legacy_default(false);
  return stream != nullptr ? stream : &legacy_default;
}

bool CaptureForbidsUnsafeCalls() {
  Registry& r = Streams();
  std::lock_guard<std::mutex> lock(r.mu);
  for (CUstream_st* s : r.streams) {
    std::lock_guard<std::mutex> slock(s->mu);
    if (!s->capturing) continue;
    if (s->capture_mode == cudaStreamCaptureModeGlobal) return true;
    if (s->capture_mode == cudaStreamCaptureModeThreadLocal && s->capture_thread == std::this_thread::get_id())
      return true;
  }
  return false;
}

void InvalidateCapturesForbiddingUnsafeCalls() {
  Registry& r = Streams();
  std::lock_guard<std::mutex> lock(r.mu);
  for (CUstream_st* s : r.streams) {
    std::lock_guard<std::mutex> slock(s->mu);
    if (!s->capturing) continue;
    if (s->capture_mode == cudaStreamCaptureModeGlobal ||
        (s->capture_mode == cudaStreamCaptureModeThreadLocal && s->capture_thread == std::this_thread::get_id()))
      s->capture_invalidated = true;
  }
}

void DrainAllStreams(bool blocking_only) {
  {
    // Held while draining: a stream being destroyed meanwhile waits in its destructor, so none
    // is drained after it is gone. Workers never take this lock.
    Registry& r = Streams();
    std::lock_guard<std::mutex> lock(r.mu);
    for (CUstream_st* s : r.streams)
      if (!blocking_only || s->blocking) s->Drain();
  }
  if (!blocking_only) StreamOf(nullptr)->Drain();
}

bool InvalidateCapturingBlockingStreams() {
  Registry& r = Streams();
  std::lock_guard<std::mutex> lock(r.mu);
  bool any = false;
  for (CUstream_st* s : r.streams) {
    std::lock_guard<std::mutex> slock(s->mu);
    if (s->blocking && s->capturing) {
      s->capture_invalidated = true;
      any = true;
    }
  }
  return any;
}

}  // namespace fieldbrain::emu

namespace emu = fieldbrain::emu;

CUstream_st::CUstream_st(bool is_blocking) : blocking(is_blocking) {
  worker_ = std::thread([this] { Work(); });
  emu::Registry& r = emu::Streams();
  std::lock_guard<std::mutex> lock(r.mu);
  r.streams.insert(this);
}

CUstream_st::~CUstream_st() {
  {
    emu::Registry& r = emu::Streams();
    std::lock_guard<std::mutex> lock(r.mu);
    r.streams.erase(this);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stop_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

cudaError_t CUstream_st::Enqueue(emu::Op op) {
  std::unique_lock<std::mutex> lock(mu);
  if (capturing) {
    if (capture_invalidated) return cudaErrorStreamCaptureInvalidated;
    capture_graph->nodes.push_back(std::make_unique<CUgraphNode_st>(CUgraphNode_st{std::move(op)}));
    return cudaSuccess;
  }
  if (auto* e = std::get_if<emu::EventRecordOp>(&op)) {
    std::lock_guard<std::mutex> elock(e->event->mu);
    ++e->event->enqueued;
  }
  queue_.push_back(std::move(op));
  ++enqueued_;
  wake_.notify_one();
  return cudaSuccess;
}

void CUstream_st::Drain() {
  std::unique_lock<std::mutex> lock(mu);
  const uint64_t target = enqueued_;
  drained_.wait(lock, [&] { return done_ >= target; });
}

bool CUstream_st::Idle() {
  std::lock_guard<std::mutex> lock(mu);
  return done_ == enqueued_;
}

void CUstream_st::Work() {
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything enqueued has run
    emu::Op op = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    emu::RunOp(op);
    lock.lock();
    ++done_;
    drained_.notify_all();
  }
}

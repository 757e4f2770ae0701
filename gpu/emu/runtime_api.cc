// The CUDA runtime's entry points on the emulated device (cuda_runtime_api.h), with the runtime's
// documented rules: errors as it returns them (sticky ones latched), device memory checked on
// every copy, stream capture refusing what a capture refuses.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "cuda_emu/device_work.h"
#include "gpu/emu/device.h"
#include "gpu/emu/stream.h"

namespace emu = fieldbrain::emu;

namespace {

#define FB_EMU_ENTER()                                                   \
  do {                                                                   \
    if (const cudaError_t fb_emu_e_ = emu::EnterCall(__func__); fb_emu_e_ != cudaSuccess) \
      return fb_emu_e_;                                                  \
  } while (0)

// Destroying and freeing still release what they name after a fault (the call then returns the
// sticky error): on a card the process's resources go with the context anyway, and here they would
// only show as leaks.
#define FB_EMU_ENTER_RELEASE(release)                                  \
  do {                                                                 \
    if (const cudaError_t fb_emu_e_ = emu::EnterCall(__func__); fb_emu_e_ != cudaSuccess) { \
      release;                                                         \
      return fb_emu_e_;                                                \
    }                                                                  \
  } while (0)

// A "potentially unsafe" call during a capture that forbids it fails and invalidates the capture.
#define FB_EMU_REFUSE_DURING_CAPTURE()                              \
  do {                                                              \
    if (emu::CaptureForbidsUnsafeCalls()) {                         \
      emu::InvalidateCapturesForbiddingUnsafeCalls();               \
      return emu::Record(cudaErrorStreamCaptureUnsupported);        \
    }                                                               \
  } while (0)

bool IsDevice(const void* p, size_t bytes) {
  const std::optional<emu::Allocation> a = emu::FindAllocation(p);
  if (!a || a->kind != emu::MemoryKind::kDevice) return false;
  return static_cast<const std::byte*>(p) + bytes <= a->begin + a->bytes;
}

bool IsDeviceStart(const void* p) {
  const std::optional<emu::Allocation> a = emu::FindAllocation(p);
  return a && a->kind == emu::MemoryKind::kDevice;
}

// A copy's direction from its pointers (cudaMemcpyDefault), and whether `kind` fits them. The
// device side must lie wholly inside one allocation: a card would fault on the rest.
cudaError_t CheckCopy(void* dst, const void* src, size_t bytes, cudaMemcpyKind& kind) {
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  const bool dst_dev = IsDeviceStart(dst), src_dev = IsDeviceStart(src);
  if (kind == cudaMemcpyDefault)
    kind = src_dev ? (dst_dev ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                   : (dst_dev ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  bool want_dst = false, want_src = false;
  switch (kind) {
    case cudaMemcpyHostToHost: break;
    case cudaMemcpyHostToDevice: want_dst = true; break;
    case cudaMemcpyDeviceToHost: want_src = true; break;
    case cudaMemcpyDeviceToDevice: want_dst = want_src = true; break;
    case cudaMemcpyDefault: break;
  }
  if (int(kind) < 0 || int(kind) > 4) return cudaErrorInvalidMemcpyDirection;
  if (want_dst != dst_dev || want_src != src_dev) return cudaErrorInvalidValue;
  if (want_dst && !IsDevice(dst, bytes)) return cudaErrorInvalidValue;
  if (want_src && !IsDevice(src, bytes)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

cudaError_t SyncStream(CUstream_st* s) {
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->capturing) {
      s->capture_invalidated = true;
      return emu::Record(cudaErrorStreamCaptureUnsupported);
    }
  }
  s->Drain();
  emu::TrimPools();  // a synchronisation: pools give back what they keep beyond their threshold
  return emu::Record(emu::Sticky());
}

// The legacy default stream and blocking streams order against each other (implicit
// synchronisation); non-blocking streams order only against themselves.
cudaError_t EnqueueOrdered(cudaStream_t stream, emu::Op op) {
  CUstream_st* s = emu::StreamOf(stream);
  if (stream == nullptr) {
    // The legacy stream waits for every blocking stream: it cannot wait for one being captured.
    if (emu::InvalidateCapturingBlockingStreams()) return emu::Record(cudaErrorStreamCaptureImplicit);
    emu::DrainAllStreams(true);
  } else if (s->blocking) {
    emu::StreamOf(nullptr)->Drain();
  }
  return emu::Record(s->Enqueue(std::move(op)));
}

}  // namespace

namespace fieldbrain::emu {

cudaError_t EnqueueKernel(const LaunchConfig& c, std::function<void()> thread_body, std::shared_ptr<const void> params) {
  if (const cudaError_t e = EnterCall("cudaLaunchKernel"); e != cudaSuccess) return e;
  const Card& card = CurrentCard();
  const dim3 g = c.grid, b = c.block;
  const uint64_t threads = uint64_t(b.x) * b.y * b.z;
  if (g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0 || threads > uint64_t(kMaxThreadsPerBlock) ||
      b.x > unsigned(kMaxBlockDim[0]) || b.y > unsigned(kMaxBlockDim[1]) || b.z > unsigned(kMaxBlockDim[2]) ||
      g.x > unsigned(kMaxGridDim[0]) || g.y > unsigned(kMaxGridDim[1]) || g.z > unsigned(kMaxGridDim[2]))
    return Record(cudaErrorInvalidConfiguration);
  // What a card answers when a block is within the device's limit but over the kernel's own
  // (its launch bound, or the registers it needs): too many resources requested for launch.
  if (threads > uint64_t(c.max_threads_per_block)) return Record(cudaErrorLaunchOutOfResources);
  if (c.dynamic_shared_bytes > MaxDynamicShared(c.kernel) || c.dynamic_shared_bytes > card.shared_per_block_optin)
    return Record(cudaErrorInvalidValue);
  if (const cudaError_t fault = TakeLaunchFault(c.name); fault != cudaSuccess) return Record(fault);
  return EnqueueOrdered(c.stream, KernelOp{c, std::make_shared<const std::function<void()>>(std::move(thread_body)),
                                           std::move(params)});
}

cudaError_t EnqueueLibraryKernel(cudaStream_t stream, const char* name, std::function<cudaError_t()> work) {
  if (const cudaError_t e = EnterCall(name); e != cudaSuccess) return e;
  return EnqueueOrdered(stream, LibraryKernelOp{name, std::make_shared<const std::function<cudaError_t()>>(std::move(work))});
}

bool IsDeviceRange(const void* p, size_t bytes) { return IsDevice(p, bytes); }

void Poison(void* p, size_t bytes) { FillPoison(p, bytes); }

}  // namespace fieldbrain::emu

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorCudartUnloading: return "cudaErrorCudartUnloading";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidPitchValue: return "cudaErrorInvalidPitchValue";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoKernelImageForDevice: return "cudaErrorNoKernelImageForDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorAssert: return "cudaErrorAssert";
    case cudaErrorMisalignedAddress: return "cudaErrorMisalignedAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    case cudaErrorUnknown: return "cudaErrorUnknown";
  }
  return "unrecognized error code";
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorCudartUnloading: return "driver shutting down";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoKernelImageForDevice: return "no kernel image is available for execution on the device";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorAssert: return "device-side assert triggered";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched: return "capture was not initiated in this stream";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
    case cudaErrorUnknown: return "unknown error";
  }
  return "unrecognized error code";
}

cudaError_t cudaGetLastError() { return emu::TakeLastError(); }
cudaError_t cudaPeekAtLastError() { return emu::PeekLastError(); }

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return emu::Record(cudaErrorInvalidValue);
  *count = 1;  // the emulated card exists even while the context is faulted, as on a card
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  FB_EMU_ENTER();
  return emu::Record(device == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}

cudaError_t cudaGetDevice(int* device) {
  FB_EMU_ENTER();
  if (device == nullptr) return emu::Record(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  FB_EMU_ENTER();
  if (prop == nullptr) return emu::Record(cudaErrorInvalidValue);
  if (device != 0) return emu::Record(cudaErrorInvalidDevice);
  const emu::Card& c = emu::CurrentCard();
  *prop = cudaDeviceProp{};
  std::strncpy(prop->name, c.name, sizeof(prop->name) - 1);
  prop->totalGlobalMem = emu::DeviceMemoryBytes();
  prop->sharedMemPerBlock = c.shared_per_block;
  prop->regsPerBlock = emu::kRegsPerBlock;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = emu::kMaxThreadsPerBlock;
  for (int i = 0; i < 3; ++i) {
    prop->maxThreadsDim[i] = emu::kMaxBlockDim[i];
    prop->maxGridSize[i] = emu::kMaxGridDim[i];
  }
  prop->clockRate = c.clock_khz;
  prop->major = c.major;
  prop->minor = c.minor;
  prop->multiProcessorCount = c.sms;
  prop->sharedMemPerMultiprocessor = c.shared_per_sm;
  prop->sharedMemPerBlockOptin = c.shared_per_block_optin;
  prop->maxThreadsPerMultiProcessor = c.max_threads_per_sm;
  prop->l2CacheSize = c.l2_bytes;
  prop->memoryBusWidth = c.bus_bits;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  FB_EMU_ENTER();
  if (value == nullptr) return emu::Record(cudaErrorInvalidValue);
  if (device != 0) return emu::Record(cudaErrorInvalidDevice);
  const emu::Card& c = emu::CurrentCard();
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = emu::kMaxThreadsPerBlock; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = int(c.shared_per_block); return cudaSuccess;
    case cudaDevAttrWarpSize: *value = 32; return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *value = c.sms; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: *value = c.major; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *value = c.minor; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = int(c.shared_per_block_optin); return cudaSuccess;
  }
  return emu::Record(cudaErrorInvalidValue);
}

cudaError_t cudaDeviceSynchronize() {
  FB_EMU_ENTER();
  FB_EMU_REFUSE_DURING_CAPTURE();
  emu::DrainAllStreams(false);
  emu::TrimPools();
  return emu::Record(emu::Sticky());
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  FB_EMU_ENTER();
  if (free_bytes == nullptr || total_bytes == nullptr) return emu::Record(cudaErrorInvalidValue);
  *total_bytes = emu::DeviceMemoryBytes();
  *free_bytes = *total_bytes - std::min(*total_bytes, emu::DeviceBytesInUse());
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t size) {
  FB_EMU_ENTER();
  FB_EMU_REFUSE_DURING_CAPTURE();
  if (ptr == nullptr) return emu::Record(cudaErrorInvalidValue);
  *ptr = emu::Allocate(size, emu::MemoryKind::kDevice);
  return *ptr != nullptr ? cudaSuccess : emu::Record(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void* ptr) {
  FB_EMU_ENTER_RELEASE(emu::Free(ptr, emu::MemoryKind::kDevice));
  if (ptr == nullptr) return cudaSuccess;
  FB_EMU_REFUSE_DURING_CAPTURE();
  emu::DrainAllStreams(false);  // cudaFree synchronises: no kernel still uses the block
  return emu::Free(ptr, emu::MemoryKind::kDevice) ? cudaSuccess : emu::Record(cudaErrorInvalidValue);
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  FB_EMU_ENTER();
  FB_EMU_REFUSE_DURING_CAPTURE();
  if (ptr == nullptr || flags > 0x0f) return emu::Record(cudaErrorInvalidValue);
  *ptr = emu::Allocate(size, emu::MemoryKind::kPinned);
  return *ptr != nullptr ? cudaSuccess : emu::Record(cudaErrorMemoryAllocation);
}

cudaError_t cudaMallocHost(void** ptr, size_t size) { return cudaHostAlloc(ptr, size, cudaHostAllocDefault); }

cudaError_t cudaFreeHost(void* ptr) {
  FB_EMU_ENTER_RELEASE(emu::Free(ptr, emu::MemoryKind::kPinned));
  if (ptr == nullptr) return cudaSuccess;
  FB_EMU_REFUSE_DURING_CAPTURE();
  emu::DrainAllStreams(false);
  return emu::Free(ptr, emu::MemoryKind::kPinned) ? cudaSuccess : emu::Record(cudaErrorInvalidValue);
}

// The stream-ordered allocator. Not emulated: allocations inside a stream capture (memory-allocation
// nodes of a graph); the project makes none, and the emulator refuses them rather than pretend.
namespace {

bool StreamCapturing(cudaStream_t stream) {
  CUstream_st* s = emu::StreamOf(stream);
  std::lock_guard<std::mutex> lock(s->mu);
  return s->capturing;
}

cudaError_t MallocFromPool(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  if (ptr == nullptr || pool == nullptr || !emu::IsPool(pool)) return emu::Record(cudaErrorInvalidValue);
  if (StreamCapturing(stream)) return emu::Record(cudaErrorStreamCaptureUnsupported);
  // Allocated now, on the calling thread: usable by the stream's later work, as on a card.
  *ptr = emu::AllocateFromPool(pool, size);
  return *ptr != nullptr ? cudaSuccess : emu::Record(cudaErrorMemoryAllocation);
}

}  // namespace

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  FB_EMU_ENTER();
  return MallocFromPool(ptr, size, pool, stream);
}

cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaStream_t stream) {
  // The device's current pool, which is its default pool (cudaDeviceSetMemPool is not emulated).
  FB_EMU_ENTER();
  return MallocFromPool(ptr, size, emu::DefaultPool(), stream);
}

cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  // On a fault the block still goes (after what its stream holds), as cudaFree's does.
  FB_EMU_ENTER_RELEASE(if (ptr != nullptr && emu::ReturnToPool(ptr)) {
    emu::StreamOf(stream)->Drain();
    emu::Release(ptr);
  });
  if (ptr == nullptr) return cudaSuccess;
  if (StreamCapturing(stream)) return emu::Record(cudaErrorStreamCaptureUnsupported);
  if (!emu::ReturnToPool(ptr)) return emu::Record(cudaErrorInvalidValue);
  return EnqueueOrdered(stream, emu::MemFreeOp{ptr});
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  FB_EMU_ENTER();
  if (pool == nullptr || props == nullptr || props->allocType != cudaMemAllocationTypePinned ||
      props->handleTypes != cudaMemHandleTypeNone)
    return emu::Record(cudaErrorInvalidValue);
  if (props->location.type != cudaMemLocationTypeDevice || props->location.id != 0)
    return emu::Record(props->location.type == cudaMemLocationTypeDevice ? cudaErrorInvalidDevice : cudaErrorInvalidValue);
  *pool = emu::CreatePool();
  return cudaSuccess;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  FB_EMU_ENTER_RELEASE(static_cast<void>(emu::DestroyPool(pool)));
  return emu::DestroyPool(pool) ? cudaSuccess : emu::Record(cudaErrorInvalidValue);
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  FB_EMU_ENTER();
  if (pool == nullptr || value == nullptr || !emu::IsPool(pool)) return emu::Record(cudaErrorInvalidValue);
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold:
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
      // The high-water marks take only 0: they restart from the current figure.
      return emu::SetPoolFigure(pool, attr, *static_cast<const uint64_t*>(value)) ? cudaSuccess
                                                                                    : emu::Record(cudaErrorInvalidValue);
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
      return cudaSuccess;  // int flags; the emulator reuses nothing across streams anyway
    case cudaMemPoolAttrReservedMemCurrent:
    case cudaMemPoolAttrUsedMemCurrent:
      break;  // read-only
  }
  return emu::Record(cudaErrorInvalidValue);
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  FB_EMU_ENTER();
  if (pool == nullptr || value == nullptr || !emu::IsPool(pool)) return emu::Record(cudaErrorInvalidValue);
  const emu::PoolFigures f = emu::FiguresOf(pool);
  uint64_t v = 0;
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold: v = f.release_threshold; break;
    case cudaMemPoolAttrReservedMemCurrent: v = f.reserved; break;
    case cudaMemPoolAttrReservedMemHigh: v = f.reserved_high; break;
    case cudaMemPoolAttrUsedMemCurrent: v = f.used; break;
    case cudaMemPoolAttrUsedMemHigh: v = f.used_high; break;
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
      *static_cast<int*>(value) = 1;
      return cudaSuccess;
    default:
      return emu::Record(cudaErrorInvalidValue);
  }
  *static_cast<uint64_t*>(value) = v;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  FB_EMU_ENTER();
  if (pool == nullptr) return emu::Record(cudaErrorInvalidValue);
  if (device != 0) return emu::Record(cudaErrorInvalidDevice);
  *pool = emu::DefaultPool();
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  FB_EMU_ENTER();
  if (attributes == nullptr) return emu::Record(cudaErrorInvalidValue);
  *attributes = cudaPointerAttributes{cudaMemoryTypeUnregistered, -2, nullptr, nullptr};
  const std::optional<emu::Allocation> a = emu::FindAllocation(ptr);
  if (!a) return cudaSuccess;  // ordinary host memory: unregistered, not an error (CUDA 11+)
  attributes->device = 0;
  if (a->kind == emu::MemoryKind::kDevice) {
    attributes->type = cudaMemoryTypeDevice;
    attributes->devicePointer = const_cast<void*>(ptr);
  } else {
    attributes->type = cudaMemoryTypeHost;
    attributes->devicePointer = const_cast<void*>(ptr);
    attributes->hostPointer = const_cast<void*>(ptr);
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  FB_EMU_ENTER();
  if (const cudaError_t e = CheckCopy(dst, src, count, kind); e != cudaSuccess) return emu::Record(e);
  return EnqueueOrdered(stream, emu::MemcpyOp{dst, src, count, kind});
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  FB_EMU_ENTER();
  FB_EMU_REFUSE_DURING_CAPTURE();
  if (const cudaError_t e = CheckCopy(dst, src, count, kind); e != cudaSuccess) return emu::Record(e);
  if (const cudaError_t e = EnqueueOrdered(nullptr, emu::MemcpyOp{dst, src, count, kind}); e != cudaSuccess) return e;
  return SyncStream(emu::StreamOf(nullptr));
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  FB_EMU_ENTER();
  if (count > 0 && !IsDevice(ptr, count)) return emu::Record(cudaErrorInvalidValue);
  return EnqueueOrdered(stream, emu::MemsetOp{ptr, value, count});
}

cudaError_t cudaMemset(void* ptr, int value, size_t count) {
  FB_EMU_ENTER();
  FB_EMU_REFUSE_DURING_CAPTURE();
  if (count > 0 && !IsDevice(ptr, count)) return emu::Record(cudaErrorInvalidValue);
  if (const cudaError_t e = EnqueueOrdered(nullptr, emu::MemsetOp{ptr, value, count}); e != cudaSuccess) return e;
  return SyncStream(emu::StreamOf(nullptr));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  FB_EMU_ENTER();
  if (stream == nullptr || flags > cudaStreamNonBlocking) return emu::Record(cudaErrorInvalidValue);
  *stream = std::make_unique<CUstream_st>((flags & cudaStreamNonBlocking) == 0).release();
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  FB_EMU_ENTER_RELEASE(std::unique_ptr<CUstream_st>{stream});
  if (stream == nullptr) return emu::Record(cudaErrorInvalidResourceHandle);
  // Owned from cudaStreamCreate on; the worker finishes the stream's work before it goes.
  std::unique_ptr<CUstream_st> owned(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  FB_EMU_ENTER();
  return SyncStream(emu::StreamOf(stream));
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  FB_EMU_ENTER();
  CUstream_st* s = emu::StreamOf(stream);
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->capturing) {
      s->capture_invalidated = true;
      return emu::Record(cudaErrorStreamCaptureUnsupported);
    }
  }
  return s->Idle() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  FB_EMU_ENTER();
  if (stream == nullptr) return emu::Record(cudaErrorStreamCaptureUnsupported);  // the legacy stream
  std::lock_guard<std::mutex> lock(stream->mu);
  if (stream->capturing) return emu::Record(cudaErrorIllegalState);
  stream->capturing = true;
  stream->capture_invalidated = false;
  stream->capture_mode = mode;
  stream->capture_thread = std::this_thread::get_id();
  stream->capture_graph = std::make_unique<CUgraph_st>();
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  FB_EMU_ENTER();
  if (graph == nullptr) return emu::Record(cudaErrorInvalidValue);
  *graph = nullptr;
  if (stream == nullptr) return emu::Record(cudaErrorIllegalState);
  std::lock_guard<std::mutex> lock(stream->mu);
  if (!stream->capturing) return emu::Record(cudaErrorIllegalState);
  if (stream->capture_mode != cudaStreamCaptureModeRelaxed && stream->capture_thread != std::this_thread::get_id())
    return emu::Record(cudaErrorStreamCaptureWrongThread);
  stream->capturing = false;
  std::unique_ptr<CUgraph_st> captured = std::move(stream->capture_graph);
  if (stream->capture_invalidated) return emu::Record(cudaErrorStreamCaptureInvalidated);
  *graph = captured.release();  // owned by the caller until cudaGraphDestroy
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  FB_EMU_ENTER();
  if (status == nullptr) return emu::Record(cudaErrorInvalidValue);
  CUstream_st* s = emu::StreamOf(stream);
  std::lock_guard<std::mutex> lock(s->mu);
  *status = !s->capturing ? cudaStreamCaptureStatusNone
                          : (s->capture_invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  FB_EMU_ENTER();
  if (event == nullptr) return emu::Record(cudaErrorInvalidValue);
  *event = std::make_unique<CUevent_st>().release();  // owned until cudaEventDestroy
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  FB_EMU_ENTER_RELEASE(emu::DrainAllStreams(false); std::unique_ptr<CUevent_st>{event});
  if (event == nullptr) return emu::Record(cudaErrorInvalidResourceHandle);
  emu::DrainAllStreams(false);  // a record still queued must not touch a destroyed event
  std::unique_ptr<CUevent_st> owned(event);
  return cudaSuccess;
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  FB_EMU_ENTER();
  if (event == nullptr) return emu::Record(cudaErrorInvalidResourceHandle);
  if (flags > cudaEventRecordExternal) return emu::Record(cudaErrorInvalidValue);
  CUstream_st* s = emu::StreamOf(stream);
  bool capturing = false;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    capturing = s->capturing;
  }
  // In a capture, only an external record becomes a node; a plain one is a dependency marker.
  if (capturing && (flags & cudaEventRecordExternal) == 0) return cudaSuccess;
  return EnqueueOrdered(stream, emu::EventRecordOp{event});
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return cudaEventRecordWithFlags(event, stream, cudaEventRecordDefault);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  FB_EMU_ENTER();
  if (event == nullptr) return emu::Record(cudaErrorInvalidResourceHandle);
  std::unique_lock<std::mutex> lock(event->mu);
  const uint64_t target = event->enqueued;
  event->done.wait(lock, [&] { return event->completed >= target || emu::Sticky() != cudaSuccess; });
  lock.unlock();
  emu::TrimPools();
  return emu::Record(emu::Sticky());
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  FB_EMU_ENTER();
  if (event == nullptr) return emu::Record(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lock(event->mu);
  return event->completed >= event->enqueued ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  FB_EMU_ENTER();
  if (ms == nullptr) return emu::Record(cudaErrorInvalidValue);
  if (start == nullptr || end == nullptr) return emu::Record(cudaErrorInvalidResourceHandle);
  std::unique_lock<std::mutex> start_lock(start->mu, std::defer_lock), end_lock(end->mu, std::defer_lock);
  if (start == end) {
    start_lock.lock();  // one event with itself: 0 ms, once recorded
  } else {
    std::lock(start_lock, end_lock);
  }
  if (start->completed == 0 || end->completed == 0) return emu::Record(cudaErrorInvalidResourceHandle);
  if (start->completed < start->enqueued || end->completed < end->enqueued) return emu::Record(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(end->time - start->time).count();
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  FB_EMU_ENTER();
  if (exec == nullptr || graph == nullptr || flags != 0) return emu::Record(cudaErrorInvalidValue);
  auto made = std::make_unique<CUgraphExec_st>();
  for (const auto& node : graph->nodes) made->ops.push_back(node->op);
  *exec = made.release();  // owned until cudaGraphExecDestroy
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  FB_EMU_ENTER();
  if (exec == nullptr) return emu::Record(cudaErrorInvalidResourceHandle);
  for (const emu::Op& op : exec->ops)
    if (const cudaError_t e = EnqueueOrdered(stream, op); e != cudaSuccess) return e;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  FB_EMU_ENTER_RELEASE(std::unique_ptr<CUgraph_st>{graph});
  std::unique_ptr<CUgraph_st> owned(graph);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  FB_EMU_ENTER_RELEASE(std::unique_ptr<CUgraphExec_st>{exec});
  std::unique_ptr<CUgraphExec_st> owned(exec);
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  FB_EMU_ENTER();
  if (graph == nullptr || count == nullptr) return emu::Record(cudaErrorInvalidValue);
  if (nodes == nullptr) {
    *count = graph->nodes.size();
    return cudaSuccess;
  }
  const size_t n = std::min(*count, graph->nodes.size());
  for (size_t i = 0; i < n; ++i) nodes[i] = graph->nodes[i].get();
  for (size_t i = n; i < *count; ++i) nodes[i] = nullptr;
  *count = n;
  return cudaSuccess;
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* type) {
  FB_EMU_ENTER();
  if (node == nullptr || type == nullptr) return emu::Record(cudaErrorInvalidValue);
  *type = emu::NodeTypeOf(node->op);
  return cudaSuccess;
}

cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, cudaMemcpy3DParms* params) {
  FB_EMU_ENTER();
  if (node == nullptr || params == nullptr) return emu::Record(cudaErrorInvalidValue);
  const auto* copy = std::get_if<emu::MemcpyOp>(&node->op);
  if (copy == nullptr) return emu::Record(cudaErrorInvalidValue);
  // A captured 1-D copy reads back as a 3-D copy of width bytes x 1 x 1, as the runtime reports it.
  *params = cudaMemcpy3DParms{};
  params->srcPtr = cudaPitchedPtr{const_cast<void*>(copy->src), copy->bytes, copy->bytes, 1};
  params->dstPtr = cudaPitchedPtr{copy->dst, copy->bytes, copy->bytes, 1};
  params->extent = cudaExtent{copy->bytes, 1, 1};
  params->kind = copy->kind;
  return cudaSuccess;
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, const void* func) {
  FB_EMU_ENTER();
  if (attributes == nullptr || func == nullptr) return emu::Record(cudaErrorInvalidDeviceFunction);
  *attributes = cudaFuncAttributes{};
  attributes->maxThreadsPerBlock = emu::kMaxThreadsPerBlock;
  attributes->maxDynamicSharedSizeBytes = int(emu::MaxDynamicShared(func));
  const emu::Card& c = emu::CurrentCard();
  attributes->ptxVersion = attributes->binaryVersion = c.major * 10 + c.minor;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  FB_EMU_ENTER();
  if (func == nullptr) return emu::Record(cudaErrorInvalidDeviceFunction);
  switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
      if (value < 0 || size_t(value) > emu::CurrentCard().shared_per_block_optin) return emu::Record(cudaErrorInvalidValue);
      emu::SetMaxDynamicShared(func, size_t(value));
      return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      return value >= -1 && value <= 100 ? cudaSuccess : emu::Record(cudaErrorInvalidValue);
  }
  return emu::Record(cudaErrorInvalidValue);
}

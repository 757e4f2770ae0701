// The emulated device's state shared by the runtime's parts: the card it plays, error reporting
// (the calling thread's last error, the context's sticky error), the memory it has handed out,
// kernel attributes, injected faults and the checkers' reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cuda_emu/launch.h"
#include "cuda_runtime_api.h"

// A memory pool of the stream-ordered allocator: bytes it reserves on the device (counted against
// the card's memory, like cudaMalloc's), bytes of that in use, and what it keeps at a
// synchronisation (the release threshold). Touched under the device state's lock only.
struct CUmemPoolHandle_st {
  uint64_t release_threshold = 0;
  size_t reserved = 0, reserved_high = 0;
  size_t used = 0, used_high = 0;
  bool destroyed = false;  // cudaMemPoolDestroy ran; goes with its last allocation
};

namespace fieldbrain::emu {

struct Card {
  const char* key;
  const char* name;
  int major, minor;
  int sms;
  size_t global_bytes;
  size_t shared_per_block;        // static limit, and the default for dynamic shared memory
  size_t shared_per_block_optin;  // what cudaFuncSetAttribute can raise a kernel to
  size_t shared_per_sm;
  int max_threads_per_sm;
  int l2_bytes;
  int bus_bits;
  int clock_khz;
};
inline constexpr int kMaxBlockDim[3] = {1024, 1024, 64};
inline constexpr int kMaxGridDim[3] = {2147483647, 65535, 65535};
inline constexpr int kRegsPerBlock = 65536;

const Card& CurrentCard();
// Device memory the emulated card reports: the card's, capped at half the host's memory, since
// every byte is host memory here (FIELDBRAIN_EMU_DEVICE_MEMORY overrides, in bytes).
size_t DeviceMemoryBytes();

// Errors. Returns e after recording it as the calling thread's last error (when not success).
cudaError_t Record(cudaError_t e);
// cudaGetLastError / cudaPeekAtLastError: the calling thread's last error (a sticky error is
// never cleared).
cudaError_t TakeLastError();
cudaError_t PeekLastError();
// The context's sticky error, or cudaSuccess.
cudaError_t Sticky();
// Latches a sticky error (a kernel fault): every later call returns it.
void Latch(cudaError_t e);
bool IsStickyError(cudaError_t e);
// A checker's finding: printed, kept for Reports(), and its kernel fails (sticky).
void Report(const std::string& line);

// Every entry point starts with this: an injected fault for `call`, else the sticky error, else
// success.
cudaError_t EnterCall(const char* call);

// The memory handed out. Device and pinned blocks are each their own heap allocation, so that
// AddressSanitizer sees an overrun of one.
enum class MemoryKind { kDevice, kPinned };
struct Allocation {
  std::byte* begin;
  size_t bytes;
  MemoryKind kind;
  cudaMemPool_t pool = nullptr;  // the pool of a stream-ordered allocation
};
void* Allocate(size_t bytes, MemoryKind kind);  // null when the device or the host is out of memory
bool Free(void* p, MemoryKind kind);            // false when p is not such an allocation's start

// The stream-ordered allocator. A pool grows its reservation (against the card's memory) when its
// unused part cannot hold a request; null when the device or the host is out of memory.
void* AllocateFromPool(cudaMemPool_t pool, size_t bytes);
// cudaFreeAsync at its call: the bytes return to the pool for later allocations (stream order)
// and the block leaves the allocations (a later call naming it is refused); false when p is not
// a stream-ordered allocation's start. The heap block itself stays until Release.
bool ReturnToPool(void* p);
// At the free's point in its stream: the heap block goes, so any access by later work is
// AddressSanitizer's heap-use-after-free.
void Release(void* p);
cudaMemPool_t DefaultPool();
cudaMemPool_t CreatePool();
bool DestroyPool(cudaMemPool_t pool);  // false for the default pool or one not made here
bool IsPool(cudaMemPool_t pool);
struct PoolFigures {
  uint64_t release_threshold, reserved, reserved_high, used, used_high;
};
PoolFigures FiguresOf(cudaMemPool_t pool);
// The release threshold, or a reset (value 0) of a high-water mark; false for anything else.
bool SetPoolFigure(cudaMemPool_t pool, cudaMemPoolAttr attr, uint64_t value);
// At a synchronisation: every pool gives back what it reserves beyond max(threshold, in use).
void TrimPools();
std::optional<Allocation> FindAllocation(const void* p);
size_t DeviceBytesInUse();
// Signalling NaNs as floats: what fresh device, pinned and shared memory hold.
void FillPoison(void* p, size_t bytes);

// Kernel attributes (cudaFuncSetAttribute), by the kernel's address.
size_t MaxDynamicShared(const void* kernel);
// The attribute when cudaFuncSetAttribute set one for the kernel.
std::optional<size_t> DynamicSharedAttribute(const void* kernel);
void SetMaxDynamicShared(const void* kernel, size_t bytes);

// Injected kernel faults and effects. A non-sticky fault is taken by the launch call (a graph
// replay makes none); a sticky fault or an effect is taken as the kernel runs, so a graph
// replay counts as a launch.
struct KernelInjection {
  cudaError_t error = cudaSuccess;
  void (*perturb)(void*, const void*) = nullptr;
  void* context = nullptr;
};
cudaError_t TakeLaunchFault(std::string_view kernel);
KernelInjection TakeRunInjection(std::string_view kernel);

}  // namespace fieldbrain::emu

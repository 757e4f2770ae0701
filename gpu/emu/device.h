// The emulated device's state shared by the runtime's parts: the card it plays, error reporting
// (the calling thread's last error, the context's sticky error), the memory it has handed out,
// kernel attributes, injected faults and the checkers' reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cuda_runtime_api.h"

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
inline constexpr int kMaxThreadsPerBlock = 1024;
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
};
void* Allocate(size_t bytes, MemoryKind kind);  // null when the device or the host is out of memory
bool Free(void* p, MemoryKind kind);            // false when p is not such an allocation's start
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

// A kernel launch as the emulated runtime receives it (from the <<<>>> of cuda_emu/kernel.h).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "cuda_runtime_api.h"

namespace fieldbrain::emu {

struct LaunchConfig {
  const char* name;
  const void* kernel;  // identifies the kernel's attributes (cudaFuncSetAttribute)
  dim3 grid;
  dim3 block;
  size_t dynamic_shared_bytes;
  cudaStream_t stream;
  // The kernel's launch bound (FB_KERNEL), or the card's per-block limit when it declares none.
  int max_threads_per_block;
};

// Threads per block on every card the emulator plays.
inline constexpr int kMaxThreadsPerBlock = 1024;

// Checks the configuration against the card and the kernel (cudaErrorInvalidConfiguration,
// cudaErrorLaunchOutOfResources, cudaErrorInvalidValue as the runtime returns them, also through
// cudaGetLastError) and enqueues the grid; every thread
// of it calls `thread_body`. `params` is the launch's copy of the kernel's arguments (a
// std::tuple of them), which an injected effect (control.h) may read.
cudaError_t EnqueueKernel(const LaunchConfig& config, std::function<void()> thread_body,
                          std::shared_ptr<const void> params);

}  // namespace fieldbrain::emu

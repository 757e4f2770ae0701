// Kernels with planted bugs (and correct ones beside them) for the emulator's tests: each
// launcher returns the launch's error, as the project's launchers do.
#pragma once

#include <cuda_runtime_api.h>

namespace fieldbrain::emu::testing {

// out[i] = sum over a block of 64 of in[...], through shared memory and barriers; correct.
cudaError_t LaunchBlockSum(const float* in, float* out, int blocks, cudaStream_t stream);
// Each lane gets the sum of its warp (__shfl_down_sync tree, then __shfl_sync from lane 0);
// `width` < 32 sums segments of that width.
cudaError_t LaunchWarpSum(const float* in, float* out, int width, cudaStream_t stream);
// A lane calls a shuffle whose mask leaves it out.
cudaError_t LaunchShuffleMaskWithoutCaller(float* out, cudaStream_t stream);
// Threads 0-15 reach one __syncthreads, 16-31 another.
cudaError_t LaunchTwoBarriers(float* out, cudaStream_t stream);
// Half the block returns before a barrier the other half waits at.
cudaError_t LaunchBarrierAfterExit(float* out, cudaStream_t stream);
// Threads read their neighbour's shared slot with no barrier after the writes.
cudaError_t LaunchSharedRace(float* out, cudaStream_t stream);
// Two blocks of two threads: thread 0 of block 0 and thread 1 of block 1 both write out[0].
cudaError_t LaunchBlocksWriteOneWord(float* out, cudaStream_t stream);
// Thread 63 writes one float past a 64-float __shared__ array.
cudaError_t LaunchSharedOverrun(float* out, cudaStream_t stream);
// One thread writes out[n], one past the end of the caller's n floats.
cudaError_t LaunchGlobalOverrun(float* out, int n, cudaStream_t stream);
// Reads in[0] (device memory never written) into out[0].
cudaError_t LaunchCopyFirst(const float* in, float* out, cudaStream_t stream);
// `threads` threads and `dynamic_bytes` of dynamic shared memory, each thread writing it.
cudaError_t LaunchSized(float* out, int threads, size_t dynamic_bytes, cudaStream_t stream);
// 16 KiB of static __shared__ memory and `dynamic_bytes` of dynamic, each thread writing both.
cudaError_t LaunchStaticAndDynamic(float* out, size_t dynamic_bytes, cudaStream_t stream);
// cudaFuncSetAttribute(MaxDynamicSharedMemorySize) for LaunchSized's kernel.
cudaError_t RaiseSizedSharedLimit(int bytes);
// A kernel declared with a launch bound of kBoundedThreads (FB_KERNEL), launched with `threads`
// threads; it writes its block size to out[0].
inline constexpr int kBoundedThreads = 96;
cudaError_t LaunchBounded(float* out, int threads, cudaStream_t stream);
// cudaFuncGetAttributes' maxThreadsPerBlock for that kernel (0 when the call fails).
int BoundedKernelMaxThreads();

}  // namespace fieldbrain::emu::testing

// The places where a .cu file says something C++ cannot: a kernel's declaration with its launch
// bound, a launch, and a __shared__ declaration. Under nvcc the macros are that CUDA, word for
// word; in the emulation build (-DFIELDBRAIN_CUDA_EMU=ON, gpu/emu/) they call the emulator, which
// runs the launch on its fibers, refuses a block over the kernel's bound as a card does, and
// allocates, poisons and size-checks each block's shared memory.
//
//   FB_KERNEL(Kernel, 128, const float* in, int n)           __global__ void __launch_bounds__(128) Kernel(const float* in, int n)
//   FB_LAUNCH(Kernel, grid, block, smem, stream)(args...);   Kernel<<<grid, block, smem, stream>>>(args...);
//   FB_SHARED(float, sums, [32]);                             __shared__ float sums[32];
//   FB_DYNAMIC_SHARED(float4, raw);                           extern __shared__ float4 raw[];
//
// Every kernel of the engine and the HRR backend is declared with FB_KERNEL: the bound tells nvcc
// how many registers a thread may have, and a launch over it fails on a card.
#pragma once

#if defined(FIELDBRAIN_CUDA_EMU)
#include "cuda_emu/kernel.h"
#define FB_KERNEL(kernel, max_threads, ...) \
  void kernel(__VA_ARGS__ __VA_OPT__(, )::fieldbrain::emu::LaunchBound<(max_threads)> = {})
#define FB_LAUNCH(kernel, grid, block, smem, stream) \
  ::fieldbrain::emu::Launch(kernel, #kernel, grid, block, smem, stream)
#define FB_SHARED(type, name, dims) auto& name = ::fieldbrain::emu::BlockShared<type dims>([] {}, #name)
#define FB_DYNAMIC_SHARED(type, name) type* const name = ::fieldbrain::emu::DynamicShared<type>()
#else
#define FB_KERNEL(kernel, max_threads, ...) __global__ void __launch_bounds__(max_threads) kernel(__VA_ARGS__)
#define FB_LAUNCH(kernel, grid, block, smem, stream) kernel<<<grid, block, smem, stream>>>
#define FB_SHARED(type, name, dims) __shared__ type name dims
#define FB_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

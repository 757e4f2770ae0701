// Deterministic warp and block sums for the kernels: a fixed shuffle tree, whose result every
// lane reads from lane 0, so a sum's bits depend only on its inputs, never on scheduling (no
// floating-point atomics anywhere in the engine).
#pragma once

#include "gpu/cuda/kernel_macros.h"

namespace fieldbrain::cuda {

inline constexpr int kWarp = 32;

// Sum over the 32 lanes of a full warp; every lane gets lane 0's result.
__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return __shfl_sync(0xffffffffu, v, 0);
}

// Sum over all kThreads threads of the block (every thread must call it); every thread gets the
// same value: warp sums added in warp order. `scratch` holds kThreads / 32 floats of shared memory.
template <int kThreads>
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
  static_assert(kThreads % kWarp == 0, "whole warps only");
  constexpr int kWarps = kThreads / kWarp;
  v = WarpSum(v);
  if (threadIdx.x % kWarp == 0) scratch[threadIdx.x / kWarp] = v;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) total += scratch[w];
  __syncthreads();
  return total;
}

}  // namespace fieldbrain::cuda

// What the CUDA engine counts about itself, so tests and benchmarks measure the promises of
// DESIGN.md section 8 (one copy each way per batch, no allocation per cycle) instead of assuming
// them. Every allocation and copy of the engine goes through the counting helpers of
// device_buffer.h; a captured graph's copies are counted from its memcpy nodes at each launch.
#pragma once

#include <cstdint>

namespace fieldbrain::cuda {

struct CudaCounters {
  int64_t device_allocs = 0;   // cudaMalloc calls
  int64_t host_allocs = 0;     // cudaHostAlloc calls
  int64_t pool_allocs = 0;     // cudaMallocFromPoolAsync calls (stream-ordered, never synchronising)
  int64_t h2d_copies = 0;      // host-to-device copies (calls, or memcpy nodes of launched graphs)
  int64_t d2h_copies = 0;      // device-to-host copies
  int64_t h2d_bytes = 0;
  int64_t d2h_bytes = 0;
  int64_t graph_launches = 0;  // cudaGraphLaunch calls
  int64_t batches = 0;         // RunBatch calls that ran a cycle
};

}  // namespace fieldbrain::cuda

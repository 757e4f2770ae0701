// Step 1 of the cycle (docs/brain.md): e = s - p, err, confidence, the reward means and the
// novelty, one thread per batch row through model::open_cycle, the function the CPU
// engine calls too (the same sums in the same order; nvcc's fused multiply-adds may move the last
// bit). 64 rows per block; the batch's row count (device data) masks the rest.
#include "gpu/cuda/kernel_macros.h"
#include "gpu/cuda/launch.h"
#include "gpu/model/robot_cycle.h"

namespace fieldbrain::cuda {
namespace {

constexpr int kOpenThreads = 64;

FB_KERNEL(OpenCycleKernel, kOpenThreads, const CycleArgs a) {
  const int row = blockIdx.x * kOpenThreads + threadIdx.x;
  if (row >= *a.count) return;
  const BatchInputRow& in = a.rows[row];
  model::open_cycle(a.params[in.slot], a.states[in.slot], in.sensors, in.reward, a.errors + int64_t(row) * kMaxSensors);
}

}  // namespace

cudaError_t LaunchOpenCycle(const CycleArgs& args, int rows, cudaStream_t stream) {
  const int blocks = (rows + kOpenThreads - 1) / kOpenThreads;
  FB_LAUNCH(OpenCycleKernel, blocks, kOpenThreads, 0, stream)(args);
  return cudaGetLastError();
}

}  // namespace fieldbrain::cuda

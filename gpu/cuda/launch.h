// The kernels' host entry points: plain C++ declarations (no absl, no CUDA language
// extensions), implemented in the .cu files beside their kernels and launch configurations.
// Each launcher enqueues its kernel on `stream` and returns the launch's error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "gpu/cuda/evolve_plan.h"
#include "gpu/model/field_shape.h"
#include "gpu/model/robot_state.h"

namespace fieldbrain::cuda {

// Where the kernels of one batched cycle find everything: device pointers fixed for the
// engine's life, so a captured graph replays them. Which rows run, and which field buffers they
// read and write, is data in the staging block the batch's one host-to-device copy brings.
struct CycleArgs {
  FieldShape shape;
  EvolveTile tile;
  // Device copy of the input staging block (staging.h).
  const int32_t* count = nullptr;      // rows in this batch; rows at or beyond it do nothing
  const int64_t* field_in = nullptr;   // per row: byte offset of F_t in the pool
  const int64_t* field_out = nullptr;  // per row: byte offset of F_t+1 in the pool
  const BatchInputRow* rows = nullptr;
  // The brain pool (FieldPool layout), slot-indexed arrays.
  std::byte* pool = nullptr;
  const RobotParams* params = nullptr;
  RobotState* states = nullptr;
  float* patterns = nullptr;   // the recalled P per slot (written by the memory kernels)
  int64_t pattern_stride = 0;  // floats between two slots' patterns
  MemoryBank* banks = nullptr;
  float* memory_patterns = nullptr;     // the memory entries' stored patterns per slot
  int64_t memory_patterns_stride = 0;   // floats between two slots' stored patterns
  // Workspace.
  float* errors = nullptr;     // [row][kMaxSensors]: e = s - p
  float* partials = nullptr;   // [row][tile.blocks_per_robot][kPartialFloats]
  BatchOutputRow* outputs = nullptr;
};

// Step 1 (open_cycle_kernel.cu): errors, confidence, reward means, novelty; one thread per row.
cudaError_t LaunchOpenCycle(const CycleArgs& args, int rows, cudaStream_t stream);
// The pattern memory (memory_kernels.cu): write, key, recall, recalled pattern P.
cudaError_t LaunchMemory(const CycleArgs& args, int rows, cudaStream_t stream);
// Steps 2-3 and the block partials of step 4's reduction (evolve_kernel.cu).
cudaError_t LaunchEvolve(const CycleArgs& args, int rows, cudaStream_t stream);
// Lets the evolve kernel use tile.smem_bytes of dynamic shared memory. The attribute belongs to
// the kernel, process-wide, so it is only ever raised: engines of different shapes coexist, each
// launching with at most what it asked for.
cudaError_t PrepareEvolve(const EvolveTile& tile);
// cudaSuccess when this binary carries code the current device can run (SASS for its
// architecture or PTX the driver can compile for it); cudaErrorNoKernelImageForDevice or the
// driver's PTX error otherwise.
cudaError_t CheckKernelImage();
// Steps 4-6 (readout_kernels.cu): summary, features, motors, learning, prediction; one block
// per row; writes the output rows.
cudaError_t LaunchCloseCycle(const CycleArgs& args, int rows, cudaStream_t stream);
// A fresh brain's field (init_kernel.cu): model::initial_field_value at every index.
cudaError_t LaunchInitField(float* field, const FieldShape& shape, uint64_t seed, cudaStream_t stream);

}  // namespace fieldbrain::cuda

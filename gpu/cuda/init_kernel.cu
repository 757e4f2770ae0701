// A fresh brain's field: model::initial_field_value at every index (content and memory
// N(0, 0.05^2) from Philox keyed by the seed, dynamics at rest). Grid-stride, 256 threads per
// block, at most 1024 blocks; not on the cycle path.
#include "gpu/cuda/kernel_macros.h"
#include "gpu/cuda/launch.h"
#include "gpu/model/field_init.h"

namespace fieldbrain::cuda {
namespace {

constexpr int kInitThreads = 256;
constexpr int64_t kInitMaxBlocks = 1024;

FB_KERNEL(InitFieldKernel, kInitThreads, float* field, const FieldShape shape, uint64_t seed) {
  const int64_t n = shape.floats();
  const int64_t stride = int64_t(gridDim.x) * kInitThreads;
  for (int64_t i = int64_t(blockIdx.x) * kInitThreads + threadIdx.x; i < n; i += stride)
    field[i] = model::initial_field_value(seed, shape, i);
}

}  // namespace

cudaError_t LaunchInitField(float* field, const FieldShape& shape, uint64_t seed, cudaStream_t stream) {
  int64_t blocks = (shape.floats() + kInitThreads - 1) / kInitThreads;
  if (blocks > kInitMaxBlocks) blocks = kInitMaxBlocks;
  FB_LAUNCH(InitFieldKernel, unsigned(blocks), kInitThreads, 0, stream)(field, shape, seed);
  return cudaGetLastError();
}

}  // namespace fieldbrain::cuda

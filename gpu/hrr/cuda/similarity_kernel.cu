// Similarity: cosines[i] <- cos(a[i], b[i]) from the Parseval dot product and the slots' cached
// squared norms, the CPU backend's formula; 0 when either vector is zero. One warp per pair: a
// pair is 2 x 4 KiB at D = 1024, too little for a block, and a warp's sum needs no barrier.
#include "gpu/cuda/kernel_macros.h"
#include "gpu/hrr/cuda/hrr_device.cuh"
#include "gpu/hrr/cuda/hrr_launch.h"
#include "gpu/hrr/hrr_math.h"

namespace fieldbrain::hrr::cuda {
namespace {

constexpr int kSimilarityThreads = 256;
constexpr int kPairsPerBlock = kSimilarityThreads / kWarpSize;

FB_KERNEL(SimilarityKernel, kSimilarityThreads,
          const SlotStore st, const int32_t* __restrict__ a, const int32_t* __restrict__ b, float* __restrict__ cosines,
          int n) {
  const int i = blockIdx.x * kPairsPerBlock + threadIdx.x / kWarpSize;
  if (i >= n) return;  // whole warps leave together
  const int lane = threadIdx.x % kWarpSize;
  const int32_t sa = a[i], sb = b[i];
  float dot = 0.0f;
  for (int k = lane; k < st.bins; k += kWarpSize)
    dot += dot_term(SlotBin(st.spectra, st.bins, sa, k), SlotBin(st.spectra, st.bins, sb, k), k, st.bins);
  dot = WarpSum(dot);
  if (lane != 0) return;
  cosines[i] = cosine(dot, st.norm2[sa], st.norm2[sb], st.dim);
}

}  // namespace

cudaError_t LaunchSimilarity(const SlotStore& store, const int32_t* a, const int32_t* b, float* cosines, int n,
                             cudaStream_t stream) {
  const unsigned blocks = unsigned((n + kPairsPerBlock - 1) / kPairsPerBlock);
  FB_LAUNCH(SimilarityKernel, blocks, kSimilarityThreads, 0, stream)(store, a, b, cosines, n);
  return cudaGetLastError();
}

}  // namespace fieldbrain::hrr::cuda

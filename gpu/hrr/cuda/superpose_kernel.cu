// Superpose: stage[g] <- sum of weights[j] * terms[j] over group g's terms. The normalisation
// to norm 1 needs the whole row and happens in the commit (commit_kernels.cu).
//
// Block = 32 bins x W warps of one group: each warp reads 256 contiguous bytes of a term per step,
// and the W warps share the group's terms so that a long group (a 1000-vector superposition)
// keeps W loads in flight per bin, not one. A group of s terms is split over min(s, 8) warps,
// warp w taking terms w, w + that, ... in order, and the warp sums are added in warp order: the
// split depends only on the group's own size, so its bits do not depend on the rest of the batch.
// A group of one warp adds its terms in order, as the CPU backend does.
#include "gpu/cuda/kernel_macros.h"
#include "gpu/hrr/cuda/hrr_device.cuh"
#include "gpu/hrr/cuda/hrr_launch.h"
#include "gpu/hrr/hrr_math.h"

namespace fieldbrain::hrr::cuda {
namespace {

constexpr int kMaxSuperposeWarps = 8;

template <int kWarps>
FB_KERNEL(SuperposeKernel, kWarpSize * kWarps,
          const SlotStore st, Cf* __restrict__ stage, const int32_t* __restrict__ offsets,
          const int32_t* __restrict__ terms, const float* __restrict__ weights) {
  FB_SHARED(float2, partial, [kWarps][kWarpSize]);
  const int g = blockIdx.x;
  const int k = blockIdx.y * kWarpSize + threadIdx.x;
  const int w = threadIdx.y;
  const int begin = offsets[g];
  const int end = offsets[g + 1];
  // min(s, 8) <= kWarps for every group of the call: LaunchSuperpose picks kWarps from the largest.
  const int split = min(end - begin, kMaxSuperposeWarps);

  Cf acc{};
  if (k < st.bins && w < split) {
    for (int j = begin + w; j < end; j += split) {
      const float weight = weights != nullptr ? weights[j] : 1.0f;
      acc = cadd(acc, cscale(SlotBin(st.spectra, st.bins, terms[j], k), weight));
    }
  }
  if constexpr (kWarps > 1) {
    partial[w][threadIdx.x] = make_float2(acc.re, acc.im);
    __syncthreads();
    if (w != 0) return;
    for (int v = 1; v < split; ++v) acc = cadd(acc, Cf{partial[v][threadIdx.x].x, partial[v][threadIdx.x].y});
  }
  if (k < st.bins) StoreBin(stage + int64_t(g) * st.bins + k, acc);
}

template <int kWarps>
cudaError_t Launch(const SlotStore& store, Cf* stage, const int32_t* offsets, const int32_t* terms,
                   const float* weights, int n, cudaStream_t stream) {
  const dim3 grid(unsigned(n), unsigned((store.bins + kWarpSize - 1) / kWarpSize));
  FB_LAUNCH(SuperposeKernel<kWarps>, grid, dim3(kWarpSize, kWarps), 0, stream)(store, stage, offsets, terms, weights);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchSuperpose(const SlotStore& store, Cf* stage, const int32_t* offsets, const int32_t* terms,
                            const float* weights, int n, int max_terms, cudaStream_t stream) {
  // Enough warps for the largest group's split (min(s, 8) <= this for every group), no more.
  if (max_terms <= 1) return Launch<1>(store, stage, offsets, terms, weights, n, stream);
  if (max_terms <= 2) return Launch<2>(store, stage, offsets, terms, weights, n, stream);
  if (max_terms <= 4) return Launch<4>(store, stage, offsets, terms, weights, n, stream);
  static_assert(kMaxSuperposeWarps == 8, "the dispatch above stops at 8 warps");
  return Launch<kMaxSuperposeWarps>(store, stage, offsets, terms, weights, n, stream);
}

}  // namespace fieldbrain::hrr::cuda

// The only kernels that write slots: every operation first computes its results into staging,
// so that all inputs are read before any slot changes (an output may name an input), then
// commits them here with each slot's cached squared norm, as the CPU backend's Commit does.
#include "gpu/cuda/kernel_macros.h"
#include "gpu/hrr/cuda/hrr_device.cuh"
#include "gpu/hrr/cuda/hrr_launch.h"
#include "gpu/hrr/hrr_math.h"

namespace fieldbrain::hrr::cuda {
namespace {

// One block per entry: the norm is a reduction over the whole row. 128 threads keep enough rows
// in flight per SM at D = 1024 (513 bins: 5 passes) without idling most of a block at small D.
constexpr int kCommitThreads = 128;

FB_KERNEL(CommitKernel, kCommitThreads,
          const SlotStore st, const Cf* __restrict__ rows, const int32_t* __restrict__ dest, bool normalize) {
  FB_SHARED(float, scratch, [kCommitThreads / kWarpSize]);
  const int32_t slot = dest[blockIdx.x];
  if (slot < 0) return;  // a later entry names the same slot; the whole block leaves together
  const int bins = st.bins;
  const Cf* __restrict__ row = rows + int64_t(blockIdx.x) * bins;
  Cf* __restrict__ out = st.spectra + int64_t(slot) * bins;

  // Superpose's normalisation, as the CPU does it (hrr_math.h's unit_scale: 1 for a zero sum; x * 1
  // is exact, so an unscaled row goes through the same multiply unchanged).
  float scale = 1.0f;
  if (normalize) {
    float part = 0.0f;
    for (int k = threadIdx.x; k < bins; k += kCommitThreads) {
      const Cf x = LoadBin(row + k);
      part += dot_term(x, x, k, bins);
    }
    scale = unit_scale(BlockSum<kCommitThreads>(part, scratch) / float(st.dim));
  }

  float part = 0.0f;
#pragma unroll 4
  for (int k = threadIdx.x; k < bins; k += kCommitThreads) {
    const Cf x = cscale(LoadBin(row + k), scale);
    StoreBin(out + k, x);
    part += dot_term(x, x, k, bins);
  }
  const float n2 = BlockSum<kCommitThreads>(part, scratch) / float(st.dim);
  if (threadIdx.x == 0) st.norm2[slot] = n2;
}

FB_KERNEL(ZeroKernel, kFlatThreads, const SlotStore st, const int32_t* __restrict__ dest, int n) {
  int i, k;
  if (!FlatEntryBin(n, st.bins, i, k)) return;
  const int32_t slot = dest[i];
  if (slot < 0) return;
  StoreBin(st.spectra + int64_t(slot) * st.bins + k, Cf{});
  if (k == 0) st.norm2[slot] = 0.0f;
}

}  // namespace

cudaError_t CheckHrrKernelImage() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, CommitKernel);
}

cudaError_t LaunchCommit(const SlotStore& store, const Cf* rows, const int32_t* dest, int n, bool normalize,
                         cudaStream_t stream) {
  FB_LAUNCH(CommitKernel, unsigned(n), kCommitThreads, 0, stream)(store, rows, dest, normalize);
  return cudaGetLastError();
}

cudaError_t LaunchZero(const SlotStore& store, const int32_t* dest, int n, cudaStream_t stream) {
  FB_LAUNCH(ZeroKernel, FlatBlocks(n, store.bins), kFlatThreads, 0, stream)(store, dest, n);
  return cudaGetLastError();
}

}  // namespace fieldbrain::hrr::cuda

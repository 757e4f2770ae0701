// Device helpers of the HRR kernels: bin access, the flat (entry, bin) index of the bin-by-bin
// kernels, deterministic block sums, and the block-wide best of (cosine, slot) pairs that the
// top-k merges are built from. No float atomics: every sum has a fixed order, so a call's bits
// depend only on its inputs.
#pragma once

#include <cstdint>

#include "gpu/cuda/device_reduce.cuh"
#include "gpu/cuda/kernel_macros.h"
#include "gpu/hrr/hrr_math.h"
#include "gpu/hrr/top_k.h"

namespace fieldbrain::hrr::cuda {

inline constexpr int kWarpSize = fieldbrain::cuda::kWarp;

// Every row of bins starts on a multiple of 8 bytes (regions are 256-byte aligned, a bin is 8
// bytes), so a bin is one 8-byte access: a warp reads 256 contiguous bytes, not 64 scattered ones.
__device__ __forceinline__ Cf LoadBin(const Cf* p) {
  const float2 v = *reinterpret_cast<const float2*>(p);
  return Cf{v.x, v.y};
}
__device__ __forceinline__ void StoreBin(Cf* p, Cf v) { *reinterpret_cast<float2*>(p) = make_float2(v.re, v.im); }

// Bin k of the spectrum of `slot`.
__device__ __forceinline__ Cf SlotBin(const Cf* spectra, int bins, int32_t slot, int k) {
  return LoadBin(spectra + int64_t(slot) * bins + k);
}

// Bin-by-bin kernels run one thread per (entry, bin) of the whole batch, bins fastest: rows of
// D/2 + 1 bins would leave most of a per-row block's last pass idle.
inline constexpr int kFlatThreads = 256;

inline unsigned FlatBlocks(int n, int bins) {
  return unsigned((int64_t(n) * bins + kFlatThreads - 1) / kFlatThreads);
}

// This thread's (entry, bin); false past the batch's last bin.
__device__ __forceinline__ bool FlatEntryBin(int n, int bins, int& entry, int& k) {
  const int64_t idx = int64_t(blockIdx.x) * kFlatThreads + threadIdx.x;
  if (idx >= int64_t(n) * bins) return false;
  entry = int(idx / bins);
  k = int(idx - int64_t(entry) * bins);
  return true;
}

// Deterministic warp and block sums: the engine's (gpu/cuda/device_reduce.cuh).
using fieldbrain::cuda::BlockSum;
using fieldbrain::cuda::WarpSum;

// A (cosine, slot) pair; slot -1 is the empty entry, which ranks after everything.
struct Ranked {
  float cos;
  int32_t slot;
};

__device__ __forceinline__ Ranked Better(Ranked a, Ranked b) {
  if (b.slot < 0) return a;
  if (a.slot < 0) return b;
  return ranks_before(b.cos, b.slot, a.cos, a.slot) ? b : a;
}

// The best pair over the block. Every thread gets lane 0's, then thread 0's, result, so all agree
// even where the ranking is not a total order (a NaN cosine): the caller's loops stay uniform.
// `scratch`: kThreads / 32 entries of shared memory.
template <int kThreads>
__device__ __forceinline__ Ranked BlockBest(Ranked v, Ranked* scratch) {
  constexpr int kWarps = kThreads / kWarpSize;
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const Ranked o{__shfl_down_sync(0xffffffffu, v.cos, offset), __shfl_down_sync(0xffffffffu, v.slot, offset)};
    v = Better(v, o);
  }
  if (threadIdx.x % kWarpSize == 0) scratch[threadIdx.x / kWarpSize] = v;
  __syncthreads();
  Ranked best = scratch[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) best = Better(best, scratch[w]);
  __syncthreads();
  return best;
}

// Merges the block's threads' sorted lists (each `k` entries, best first, empty entries last) into
// the block's top k, written by thread 0 to out_cos / out_slot (empty entries: 0, -1). The slots
// of different threads' lists must differ (they come from disjoint items), so each round's best
// belongs to exactly one thread, which moves on to its next entry.
template <int kThreads>
__device__ void MergeThreadLists(const float* cos, const int32_t* slot, int k, float* out_cos, int32_t* out_slot,
                                 Ranked* scratch) {
  int head = 0;
  int r = 0;
  for (; r < k; ++r) {
    const Ranked mine = head < k && slot[head] >= 0 ? Ranked{cos[head], slot[head]} : Ranked{0.0f, -1};
    const Ranked best = BlockBest<kThreads>(mine, scratch);
    if (best.slot < 0) break;  // every list is exhausted (the same test in every thread)
    if (mine.slot == best.slot) ++head;
    if (threadIdx.x == 0) {
      out_cos[r] = best.cos;
      out_slot[r] = best.slot;
    }
  }
  if (threadIdx.x == 0)
    for (; r < k; ++r) {
      out_cos[r] = 0.0f;
      out_slot[r] = -1;
    }
}

}  // namespace fieldbrain::hrr::cuda

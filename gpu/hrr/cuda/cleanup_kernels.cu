// Cleanup around the cuBLAS GEMM (cuda_hrr_space.cc): the Parseval-weighted queries before it,
// the top-k of each chunk's scores after it, and the merge of the chunks' lists.
//
// The ranking (gpu/hrr/top_k.h: higher cosine first, lower slot on a tie) orders distinct slots
// totally, so the top k of a set is one set in one order however it is split: per-thread lists,
// then per-block, per-chunk and running merges all give what one sequential pass would.
#include "gpu/cuda/kernel_macros.h"
#include "gpu/hrr/cuda/hrr_device.cuh"
#include "gpu/hrr/cuda/hrr_launch.h"
#include "gpu/hrr/hrr_math.h"
#include "gpu/hrr/top_k.h"

namespace fieldbrain::hrr::cuda {
namespace {

// 16 items per thread per part: the list insertions (most rejected after one compare) stay
// cheap next to the GEMM, and a part's 8 KiB of scores is read by whole warps.
constexpr int kChunkThreads = 128;
// One thread per list to merge: a chunk's parts and the running list.
constexpr int kMergeThreads = 64;
static_assert(kMaxParts + 1 <= kMergeThreads, "a merge block holds every part list and the running list");

FB_KERNEL(WeightQueriesKernel, kFlatThreads,
          const SlotStore st, Cf* __restrict__ weighted, const int32_t* __restrict__ queries, int n) {
  int i, k;
  if (!FlatEntryBin(n, st.bins, i, k)) return;
  StoreBin(weighted + int64_t(i) * st.bins + k,
           cscale(SlotBin(st.spectra, st.bins, queries[i], k), parseval_weight(k, st.bins)));
}

// Block (query q, part p): the items of part p of the chunk, cosines as the CPU backend forms
// them (hrr_math.h's cosine: 0 for a zero query), zero items skipped.
FB_KERNEL(ChunkTopKKernel, kChunkThreads,
          const SlotStore st, const float* __restrict__ scores, const int32_t* __restrict__ queries, int first_item,
          int items, int k, TopKLists parts) {
  FB_SHARED(Ranked, scratch, [kChunkThreads / kWarpSize]);
  const int q = blockIdx.x;
  const int p = blockIdx.y;
  float cos[kListEntries];
  int32_t slot[kListEntries];
  top_k_clear(cos, slot, k);
  const float nq = st.norm2[queries[q]];
  const float* row = scores + int64_t(q) * items;
  const int begin = p * kPartItems;
  const int end = min(items, begin + kPartItems);
  for (int i = begin + int(threadIdx.x); i < end; i += kChunkThreads) {
    const int32_t item = first_item + i;
    const float ni = st.norm2[item];
    if (ni <= 0.0f) continue;
    const float c = cosine(row[i], nq, ni, st.dim);
    top_k_insert(cos, slot, k, c, item);
  }
  const int64_t list = (int64_t(q) * parts.per_query + p) * kListEntries;
  MergeThreadLists<kChunkThreads>(cos, slot, k, parts.cos + list, parts.slot + list, scratch);
}

// Block q: thread 0 holds the running list (when there is one), the next threads the parts'.
FB_KERNEL(MergeTopKKernel, kMergeThreads,
          TopKLists parts, int n_parts, TopKLists running, bool has_running, int k, int32_t* __restrict__ final_slots,
          float* __restrict__ final_cos) {
  FB_SHARED(Ranked, scratch, [kMergeThreads / kWarpSize]);
  const int q = blockIdx.x;
  float cos[kListEntries];
  int32_t slot[kListEntries];
  top_k_clear(cos, slot, k);
  const float* src_cos = nullptr;
  const int32_t* src_slot = nullptr;
  const int part = int(threadIdx.x) - (has_running ? 1 : 0);
  if (has_running && threadIdx.x == 0) {
    src_cos = running.cos + int64_t(q) * kListEntries;
    src_slot = running.slot + int64_t(q) * kListEntries;
  } else if (part >= 0 && part < n_parts) {
    src_cos = parts.cos + (int64_t(q) * parts.per_query + part) * kListEntries;
    src_slot = parts.slot + (int64_t(q) * parts.per_query + part) * kListEntries;
  }
  if (src_cos != nullptr)
    for (int r = 0; r < k; ++r) {
      cos[r] = src_cos[r];
      slot[r] = src_slot[r];
    }
  __syncthreads();  // the running list is read whole before it is overwritten below
  if (final_slots != nullptr) {
    MergeThreadLists<kMergeThreads>(cos, slot, k, final_cos + int64_t(q) * k, final_slots + int64_t(q) * k, scratch);
  } else {
    MergeThreadLists<kMergeThreads>(cos, slot, k, running.cos + int64_t(q) * kListEntries,
                                    running.slot + int64_t(q) * kListEntries, scratch);
  }
}

}  // namespace

cudaError_t LaunchWeightQueries(const SlotStore& store, Cf* weighted, const int32_t* queries, int n,
                                cudaStream_t stream) {
  FB_LAUNCH(WeightQueriesKernel, FlatBlocks(n, store.bins), kFlatThreads, 0, stream)(store, weighted, queries, n);
  return cudaGetLastError();
}

cudaError_t LaunchChunkTopK(const SlotStore& store, const float* scores, const int32_t* queries, int n,
                            int first_item, int items, int k, TopKLists parts, cudaStream_t stream) {
  const dim3 grid(unsigned(n), unsigned((items + kPartItems - 1) / kPartItems));
  FB_LAUNCH(ChunkTopKKernel, grid, kChunkThreads, 0, stream)(store, scores, queries, first_item, items, k, parts);
  return cudaGetLastError();
}

cudaError_t LaunchMergeTopK(TopKLists parts, int n_parts, TopKLists running, bool has_running, int n, int k,
                            int32_t* final_slots, float* final_cos, cudaStream_t stream) {
  FB_LAUNCH(MergeTopKKernel, unsigned(n), kMergeThreads, 0, stream)(parts, n_parts, running, has_running, k, final_slots,
                                                              final_cos);
  return cudaGetLastError();
}

}  // namespace fieldbrain::hrr::cuda

// The HRR kernels' host entry points: plain C++ declarations (no absl, no CUDA language
// extensions), implemented in the .cu files beside their kernels and launch configurations.
// Each launcher enqueues its kernel on `stream` and returns the launch's error. Every pointer is
// device memory; slot lists and per-entry arguments arrive in the call's one host-to-device copy.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu/hrr/hrr_math.h"

namespace fieldbrain::hrr::cuda {

// The slot storage of a space (HrrStorage layout): `capacity` spectra of `bins` bins, then the
// squared norm of each slot's real vector.
struct SlotStore {
  Cf* spectra = nullptr;
  float* norm2 = nullptr;
  int dim = 0;
  int bins = 0;
};

// Cleanup's top-k, in pieces: a chunk of items (at most kMaxChunkItems) is split into parts of
// kPartItems, each part's top-k found by one block; then the parts (at most kMaxParts) and the
// running top-k of the earlier chunks are merged by one block per query.
inline constexpr int kPartItems = 2048;
inline constexpr int kMaxParts = 32;
inline constexpr int kMaxChunkItems = kPartItems * kMaxParts;
// Entries per top-k list: kMaxTopK of gpu/hrr/hrr_space.h, which the kernels cannot include (absl);
// cuda_hrr_space.cc checks that the two agree.
inline constexpr int kListEntries = 64;

// Where a cleanup keeps its lists: arrays of cosines and slots, kListEntries entries per list,
// `per_query` lists per query (list p of query q starts at (q * per_query + p) * kListEntries).
struct TopKLists {
  float* cos = nullptr;
  int32_t* slot = nullptr;
  int per_query = 1;
};

// cudaSuccess when this binary carries code the current device can run.
cudaError_t CheckHrrKernelImage();

// --- commit_kernels.cu: the only kernels that write slots ---
// For each entry i with dest[i] >= 0: slot dest[i] <- rows[i] (bins values), and its squared
// norm. With `normalize`, rows[i] is first scaled to norm 1 (a zero row stays zero). dest has -1
// for an entry whose slot a later entry also names, so no slot has two writers.
cudaError_t LaunchCommit(const SlotStore& store, const Cf* rows, const int32_t* dest, int n, bool normalize,
                         cudaStream_t stream);
// Slots dest[i] >= 0 <- the zero vector.
cudaError_t LaunchZero(const SlotStore& store, const int32_t* dest, int n, cudaStream_t stream);

// --- map_kernels.cu: one bin-by-bin kernel per operation, writing stage[i] (bins values) ---
cudaError_t LaunchRandom(const SlotStore& store, Cf* stage, bool unitary, uint64_t seed, const uint64_t* ids, int n,
                         cudaStream_t stream);
cudaError_t LaunchBind(const SlotStore& store, Cf* stage, const int32_t* a, const int32_t* b, int n,
                       cudaStream_t stream);
cudaError_t LaunchUnbind(const SlotStore& store, Cf* stage, const int32_t* c, const int32_t* key, int n,
                         cudaStream_t stream);
cudaError_t LaunchInverse(const SlotStore& store, Cf* stage, const int32_t* a, int n, cudaStream_t stream);
cudaError_t LaunchProject(const SlotStore& store, Cf* stage, const int32_t* a, int n, cudaStream_t stream);
cudaError_t LaunchPermute(const SlotStore& store, Cf* stage, const int32_t* a, const int32_t* shifts, int n,
                          cudaStream_t stream);
cudaError_t LaunchPower(const SlotStore& store, Cf* stage, const int32_t* base, const float* exponents, int n,
                        cudaStream_t stream);
// stage[i] <- spectrum of slots[i], contiguous: Get (before the inverse FFT) and GetSpectra.
cudaError_t LaunchGather(const SlotStore& store, Cf* stage, const int32_t* slots, int n, cudaStream_t stream);

// --- superpose_kernel.cu ---
// stage[g] <- sum of weights[j] * terms[j], j in [offsets[g], offsets[g + 1]) (weights null: 1).
// `max_terms`, the largest group, picks how many warps share a group's terms.
cudaError_t LaunchSuperpose(const SlotStore& store, Cf* stage, const int32_t* offsets, const int32_t* terms,
                            const float* weights, int n, int max_terms, cudaStream_t stream);

// --- similarity_kernel.cu ---
cudaError_t LaunchSimilarity(const SlotStore& store, const int32_t* a, const int32_t* b, float* cosines, int n,
                             cudaStream_t stream);

// --- cleanup_kernels.cu ---
// weighted[q] <- the spectrum of queries[q] times the Parseval weights, as 2 * bins floats: a GEMM
// against raw spectra then gives D times the dot products.
cudaError_t LaunchWeightQueries(const SlotStore& store, Cf* weighted, const int32_t* queries, int n,
                                cudaStream_t stream);
// The top-k of each part of one chunk: items first_item + [0, items), whose dot products with
// query q are scores[q * items + i] (times D). Part p's list is list p of query q in `parts`.
cudaError_t LaunchChunkTopK(const SlotStore& store, const float* scores, const int32_t* queries, int n,
                            int first_item, int items, int k, TopKLists parts, cudaStream_t stream);
// Merges, per query, the `n_parts` part lists of a chunk with the running list of the earlier
// chunks (when `has_running`), into `running` (kListEntries per query) or, when `final_slots` is not
// null, into final_slots / final_cos (k per query, the caller's layout).
cudaError_t LaunchMergeTopK(TopKLists parts, int n_parts, TopKLists running, bool has_running, int n, int k,
                            int32_t* final_slots, float* final_cos, cudaStream_t stream);

}  // namespace fieldbrain::hrr::cuda

// Host-side layout of a CUDA space's one device workspace and of what its calls stage in the
// pinned block (the shared LibraryContext's, at least pinned_bytes long) (no CUDA calls, so sizes
// can be reasoned about and printed without a GPU).
//
// Device workspace (one stream-ordered allocation from the context's pool; every region 256-byte
// aligned):
//   args     the device mirror of the argument block: what one call's host-to-device copy brings
//            (slot lists, per-entry values, and Put's vectors or PutSpectra's spectra)
//   stage    max_batch spectra: results before they are committed; FFT input or output
//   out      what one call's device-to-host copy takes back (vectors, spectra, cosines, top-k)
//   scores   cleanup's GEMM output for one chunk of items
//   parts    cleanup's per-part top-k lists; running: the merged lists of the earlier chunks
//   fft      the cuFFT work area (shared by the space's plans: one stream runs one at a time)
// The cuBLAS work area is not here: the process's one LibraryContext (cuda_libraries.h) holds it.
// Pinned block: the argument block, then (after the host-to-device copy has run, in stream order)
// the device-to-host results, in the same bytes.
#pragma once

#include <cstdint>

#include "gpu/hrr/hrr_space.h"

namespace fieldbrain::hrr::cuda {

inline constexpr int64_t kRegionAlign = 256;
inline constexpr int64_t AlignRegion(int64_t v) { return (v + kRegionAlign - 1) / kRegionAlign * kRegionAlign; }

// Slot-sized lists one call puts in its argument block, at most (Superpose: out, offsets, terms,
// weights), besides one block of vectors or spectra.
inline constexpr int kArgLists = 4;
// Cleanup's score matrix: about this many floats (32 MiB), so that a space of large max_batch
// does not hold max_batch x capacity scores. The emulation build keeps 4 MiB: its tests reach the
// chunked path (several chunks merged into the running top-k) with a tenth of the queries.
#if defined(FIELDBRAIN_CUDA_EMU)
inline constexpr int64_t kScoreFloats = int64_t(1) << 20;
#else
inline constexpr int64_t kScoreFloats = int64_t(1) << 23;
#endif
inline constexpr int kMinChunkItems = 256;

struct HrrWorkspace {
  HrrWorkspace(const HrrConfig& config, int64_t fft_work_bytes);

  int64_t list_bytes = 0;  // room for one list of max_batch + 1 entries of 8 bytes (aligned)
  int64_t args_bytes = 0;
  int64_t stage_at = 0;
  int64_t out_at = 0;
  int64_t out_bytes = 0;
  int64_t score_floats = 0;
  int64_t scores_at = 0;
  int64_t part_lists = 0;  // lists of kListEntries
  int64_t parts_cos_at = 0, parts_slot_at = 0;
  int64_t running_cos_at = 0, running_slot_at = 0;
  int64_t fft_at = 0;
  int64_t device_bytes = 0;
  int64_t pinned_bytes = 0;
};

// Items per chunk of a cleanup with `queries` queries over `items` items: as many as the score
// matrix holds for that many queries, at most kMaxChunkItems (kMaxParts parts).
int CleanupChunkItems(const HrrWorkspace& ws, int queries, int items);

}  // namespace fieldbrain::hrr::cuda

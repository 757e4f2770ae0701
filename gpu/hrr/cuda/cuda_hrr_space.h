// The CUDA backend of HrrSpace: spectra in one device allocation, cuFFT batched R2C/C2R plans with
// work areas we allocate, fused bin-by-bin kernels, cleanup as one cuBLAS GEMM plus a top-k pass.
// gpu/hrr/cuda/README.md has the kernels, the memory layout and the copies of each call.
//
// Per space: its vectors (unless given an HrrStorage) and a device workspace sized by its max_batch,
// both from the context's stream-ordered memory pool, and its cuFFT plans. Per process: one
// LibraryContext (cuda_libraries.h), held by every space: the stream all spaces run on, the memory
// pool, the one pinned staging block, and the cuBLAS handle with its work area.
//
// Threading: one space is used by one thread at a time (HrrSpace's contract). Different spaces may
// be used from different threads at once: their device work is serialised on the shared context's
// lock, one whole call at a time. Errors: a call that fails on the device fails alone and the space
// goes on, unless the error is sticky (the device context is lost: LibraryContext::health() says
// so from then on), after which every call of every space fails.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "gpu/hrr/hrr_space.h"

namespace fieldbrain::hrr::cuda {

absl::StatusOr<std::unique_ptr<HrrSpace>> MakeCudaHrrSpace(const HrrConfig& config, HrrStorage storage = {});

// What a CUDA space counts about itself since it was made, so tests and benchmarks check its
// promises (one host-to-device copy per call, at most one back, no allocation after creation)
// instead of assuming them.
struct HrrCudaCounters {
  int64_t device_allocs = 0;  // cudaMalloc calls (none since the stream-ordered allocator)
  int64_t host_allocs = 0;    // cudaHostAlloc calls (none: the pinned block is the context's)
  int64_t pool_allocs = 0;    // cudaMallocFromPoolAsync calls: the slots (unless given) and the workspace
  int64_t h2d_copies = 0;
  int64_t d2h_copies = 0;
  int64_t h2d_bytes = 0;
  int64_t d2h_bytes = 0;
  int64_t calls = 0;  // calls that ran on the device (not refused, not empty)
};

// nullopt when `space` is not a CUDA space.
std::optional<HrrCudaCounters> CountersOf(const HrrSpace& space);

}  // namespace fieldbrain::hrr::cuda

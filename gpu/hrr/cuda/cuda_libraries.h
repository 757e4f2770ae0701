// cuFFT and cuBLAS, opened with dlopen when the first CUDA space is made instead of linked.
//
// Why: linked, they are loaded into every brain-server process, with two costs. A CUDA build
// could not start at all where the toolkit's libraries are missing (a machine that should fall
// back to the CPU engine). And cuBLAS brings ~110 KiB of thread-local storage that glibc then
// reserves in every thread's stack, so threads made with small stacks fail to start (civetweb's,
// and with them the /metrics endpoint). Opened later, their TLS is allocated per thread on use.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cufft.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "gpu/cuda/device_buffer.h"
#include "gpu/hrr/cuda/score_gemm.h"
#include "gpu/hrr/hrr_backend_context.h"

namespace fieldbrain::hrr::cuda {

// The entry points the backend uses, with the libraries' own signatures.
struct CufftApi {
  decltype(&::cufftCreate) create = nullptr;
  decltype(&::cufftDestroy) destroy = nullptr;
  decltype(&::cufftSetAutoAllocation) set_auto_allocation = nullptr;
  decltype(&::cufftMakePlanMany64) make_plan_many64 = nullptr;
  decltype(&::cufftSetStream) set_stream = nullptr;
  decltype(&::cufftSetWorkArea) set_work_area = nullptr;
  decltype(&::cufftExecR2C) exec_r2c = nullptr;
  decltype(&::cufftExecC2R) exec_c2r = nullptr;
};

struct CublasApi {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&::cublasSetMathMode) set_math_mode = nullptr;
  decltype(&::cublasSetAtomicsMode) set_atomics_mode = nullptr;
  decltype(&::cublasSetPointerMode_v2) set_pointer_mode = nullptr;
  decltype(&::cublasSgemm_v2) sgemm = nullptr;
  decltype(&::cublasGetStatusName) status_name = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
};

// Opens both libraries once per process (later calls return the first outcome): UNAVAILABLE
// naming the library and dlerror's reason when one cannot be opened or lacks an entry point.
absl::Status LoadCudaLibraries();
// The loaded entry points; only after LoadCudaLibraries returned OK.
const CufftApi& Cufft();
const CublasApi& Cublas();

// The CUDA HRR backend's shared context: one non-blocking stream, one cuBLAS handle bound to it
// and its one work area (32 MiB from Hopper on), for every CUDA space of the process. Before it,
// each space held its own, so a 256 MiB Memory arena filled after about seven spaces.
//
// Memory without synchronisation: cudaMalloc, cudaFree and cudaHostAlloc are implicitly
// synchronising on a card (CUDA programming guide, "Implicit Synchronization"), so a space made
// or deleted on the Memory thread could hold up the robots' kernels on another stream. So spaces
// take their device memory from the context's memory pool with cudaMallocFromPoolAsync on its
// stream and give it back with cudaFreeAsync (the pool keeps freed memory for the next space: its
// release threshold is unlimited), and share ONE pinned staging block, the context's: every call
// holds mu() from its copy in to its synchronisation, so one block serves them all.
//
// Threading: every space runs its device work on this one stream and handle, holding mu() for
// the whole of a call (copy in, kernels, copy out, synchronisation), so spaces used from
// different threads at once are serialised here; one space is still used by one thread at a time.
// Made by the first Acquire, freed (on the thread that drops the last reference) when no space
// and no other holder is left.
class LibraryContext final : public BackendContext {
 public:
  // The live context, or a new one: OK, or the error that prevented it (the libraries cannot be
  // opened, the device has no memory for the work area).
  static absl::StatusOr<std::shared_ptr<LibraryContext>> Acquire();
  ~LibraryContext() override;
  LibraryContext(const LibraryContext&) = delete;
  LibraryContext& operator=(const LibraryContext&) = delete;

  std::string_view backend() const override { return "cuda"; }
  // The cuBLAS work area and the pinned staging block (the pool's memory is its spaces').
  int64_t bytes() const override { return int64_t(blas_work_.bytes()) + pinned_bytes_.load(); }
  absl::Status health() const override;
  // Sizes the pinned staging block for spaces up to `largest` (the Memory store, once, for the
  // largest space its limits allow).
  absl::Status Reserve(const HrrConfig& largest) override;

  cudaStream_t stream() const { return stream_.get(); }
  cudaMemPool_t pool() const { return pool_.get(); }
  absl::Mutex& mu() ABSL_LOCK_RETURNED(mu_) { return mu_; }
  const ScoreGemm& gemm() const { return gemm_; }

  // The pinned staging block, at least `bytes` long: grown (cudaFreeHost, cudaHostAlloc: they
  // synchronise) only when a space needs more than it holds, which after Reserve never happens.
  // Call with mu() held; the block is the caller's until it releases mu().
  absl::Status EnsurePinned(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const ::fieldbrain::cuda::PinnedBuffer& pinned() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pinned_; }
  // cudaHostAlloc calls for the staging block in the context's life (tests: growth is rare).
  int64_t pinned_allocs() const { return pinned_allocs_.load(); }

  // After a call failed: the sticky error that poisons the process's device context, latched for
  // every context from now on; OK when the failure was the call's alone (the context goes on).
  // Call with mu() held, after the failed call's work was synchronised.
  absl::Status CheckSticky(const absl::Status& failure);

 private:
  LibraryContext() = default;
  absl::Status Init();

  absl::Mutex mu_;
  // Declared before what is bound to it or allocated from it, so destroyed after: the pool after
  // the stream (whose destruction waits for the spaces' queued frees), the stream after the rest.
  ::fieldbrain::cuda::MemPool pool_;
  ::fieldbrain::cuda::Stream stream_;
  ::fieldbrain::cuda::PinnedBuffer pinned_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> pinned_bytes_{0};  // pinned_.bytes(), readable without mu_ (bytes())
  std::atomic<int64_t> pinned_allocs_{0};
  ::fieldbrain::cuda::DeviceBuffer blas_work_;
  ScoreGemm gemm_;
};

// Bytes of the pinned block a space of `config` stages its calls through (hrr_workspace.h).
int64_t PinnedBytesFor(const HrrConfig& config);

// What tests and the log say about the shared context: how many were made in this process's life
// and whether one is live now (with its device bytes).
struct LibraryContextStats {
  int64_t made = 0;
  bool live = false;
  int64_t bytes = 0;
};
LibraryContextStats CurrentLibraryContextStats();

}  // namespace fieldbrain::hrr::cuda

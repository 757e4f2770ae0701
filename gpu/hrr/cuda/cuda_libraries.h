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
  int64_t bytes() const override { return int64_t(blas_work_.bytes()); }
  absl::Status health() const override;

  cudaStream_t stream() const { return stream_.get(); }
  absl::Mutex& mu() ABSL_LOCK_RETURNED(mu_) { return mu_; }
  const ScoreGemm& gemm() const { return gemm_; }

  // After a call failed: the sticky error that poisons the process's device context, latched for
  // every context from now on; OK when the failure was the call's alone (the context goes on).
  // Call with mu() held, after the failed call's work was synchronised.
  absl::Status CheckSticky(const absl::Status& failure);

 private:
  LibraryContext() = default;
  absl::Status Init();

  absl::Mutex mu_;
  // Declared before what is bound to it, so destroyed after.
  ::fieldbrain::cuda::Stream stream_;
  ::fieldbrain::cuda::DeviceBuffer blas_work_;
  ScoreGemm gemm_;
};

// What tests and the log say about the shared context: how many were made in this process's life
// and whether one is live now (with its device bytes).
struct LibraryContextStats {
  int64_t made = 0;
  bool live = false;
  int64_t bytes = 0;
};
LibraryContextStats CurrentLibraryContextStats();

}  // namespace fieldbrain::hrr::cuda

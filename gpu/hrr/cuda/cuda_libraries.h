// cuFFT and cuBLAS, opened with dlopen when the first CUDA space is made instead of linked.
//
// Why: linked, they are loaded into every brain-server process, with two costs. A CUDA build
// could not start at all where the toolkit's libraries are missing (a machine that should fall
// back to the CPU engine). And cuBLAS brings ~110 KiB of thread-local storage that glibc then
// reserves in every thread's stack, so threads made with small stacks fail to start (civetweb's,
// and with them the /metrics endpoint). Opened later, their TLS is allocated per thread on use.
#pragma once

#include <cublas_v2.h>
#include <cufft.h>

#include "absl/status/status.h"

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

}  // namespace fieldbrain::hrr::cuda

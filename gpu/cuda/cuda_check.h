// Turning CUDA runtime errors into absl::Status, for the host code of the engine (never
// included by .cu files, which stay free of absl and return cudaError_t).
#pragma once

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fieldbrain::cuda {

inline absl::Status CudaError(cudaError_t e, const char* what, const char* file, int line) {
  const std::string message = absl::StrCat(what, " failed at ", file, ":", line, ": ", cudaGetErrorName(e), " (",
                                           cudaGetErrorString(e), ")");
  if (e == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(message);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) return absl::UnavailableError(message);
  return absl::InternalError(message);
}

}  // namespace fieldbrain::cuda

// Evaluates a CUDA runtime call; on error returns an absl::Status naming the call and the error
// from the enclosing function.
#define FB_CUDA_CHECK(expr)                                                                  \
  do {                                                                                       \
    const cudaError_t fb_cuda_error_ = (expr);                                               \
    if (fb_cuda_error_ != cudaSuccess)                                                       \
      return ::fieldbrain::cuda::CudaError(fb_cuda_error_, #expr, __FILE__, __LINE__);       \
  } while (0)

// Evaluates an expression giving absl::Status; returns it from the enclosing function when not OK.
#define FB_RETURN_IF_ERROR(expr)                          \
  do {                                                    \
    if (absl::Status fb_status_ = (expr); !fb_status_.ok()) \
      return fb_status_;                                  \
  } while (0)

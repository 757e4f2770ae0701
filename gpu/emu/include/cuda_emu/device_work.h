// For the emulated CUDA libraries (cuFFT, cuBLAS in gpu/emu/): their "kernels" are host functions
// that run in stream order on the stream's worker, exactly where a kernel of the same stream
// would run, and are recorded as kernel nodes while the stream is being captured into a graph.
#pragma once

#include <cstddef>
#include <functional>

#include "cuda_runtime_api.h"

namespace fieldbrain::emu {

// Enqueues `work` on `stream` as one emulated kernel called `name`. Returns the launch's error
// (an invalid stream, an earlier sticky error); the work's own error, when it returns one, is
// reported and latched like a failed kernel's (cudaErrorLaunchFailure is sticky).
cudaError_t EnqueueLibraryKernel(cudaStream_t stream, const char* name, std::function<cudaError_t()> work);

// True when [p, p + bytes) lies inside one live device allocation (cudaMalloc).
bool IsDeviceRange(const void* p, size_t bytes);

// Fills [p, p + bytes) with the emulator's poison (signalling NaNs as floats): what a library may
// leave in memory its documentation says it overwrites.
void Poison(void* p, size_t bytes);

}  // namespace fieldbrain::emu

// cuFFT as fieldbrain's code uses it, for the emulation build (-DFIELDBRAIN_CUDA_EMU=ON): the
// types, constants and entry points with NVIDIA's documented values, implemented on the CPU by
// gpu/emu/cufft_emu.cc (KissFFT underneath) as the shared library libcufft.so.<CUFFT_VER_MAJOR>.
// Only 1-D single-precision real transforms with the basic data layout are emulated; anything
// else a real cuFFT accepts is refused with CUFFT_NOT_SUPPORTED rather than half-done.
// Written for this project from the cuFFT API reference; no NVIDIA header text.
#pragma once

#include <cstddef>

#include "cuda_runtime_api.h"
#include "vector_types.h"

// The toolkit the emulation stands in for; the project opens the library by this soname.
#define CUFFT_VER_MAJOR 12

typedef enum cufftResult_t {
  CUFFT_SUCCESS = 0,
  CUFFT_INVALID_PLAN = 1,
  CUFFT_ALLOC_FAILED = 2,
  CUFFT_INVALID_TYPE = 3,
  CUFFT_INVALID_VALUE = 4,
  CUFFT_INTERNAL_ERROR = 5,
  CUFFT_EXEC_FAILED = 6,
  CUFFT_SETUP_FAILED = 7,
  CUFFT_INVALID_SIZE = 8,
  CUFFT_UNALIGNED_DATA = 9,
  CUFFT_INVALID_DEVICE = 11,
  CUFFT_NO_WORKSPACE = 13,
  CUFFT_NOT_IMPLEMENTED = 14,
  CUFFT_NOT_SUPPORTED = 16,
} cufftResult;

typedef float cufftReal;
// Interleaved real and imaginary parts, laid out (and aligned) as float2.
typedef float2 cufftComplex;

typedef enum cufftType_t {
  CUFFT_C2C = 0x29,
  CUFFT_R2C = 0x2a,
  CUFFT_C2R = 0x2c,
} cufftType;

// A plan: an index into the library's own table, not a pointer.
typedef int cufftHandle;

extern "C" {

cufftResult cufftCreate(cufftHandle* handle);
cufftResult cufftDestroy(cufftHandle plan);
cufftResult cufftSetAutoAllocation(cufftHandle plan, int autoAllocate);
cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long int* n, long long int* inembed,
                                long long int istride, long long int idist, long long int* onembed,
                                long long int ostride, long long int odist, cufftType type, long long int batch,
                                size_t* workSize);
cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream);
cufftResult cufftSetWorkArea(cufftHandle plan, void* workArea);
cufftResult cufftExecR2C(cufftHandle plan, cufftReal* idata, cufftComplex* odata);
cufftResult cufftExecC2R(cufftHandle plan, cufftComplex* idata, cufftReal* odata);

}  // extern "C"

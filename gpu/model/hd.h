// Marks the shared math as callable from host and device code. Without nvcc the macros vanish
// and the headers are plain C++, which is how the CPU engine and its tests compile them.
#pragma once

#if defined(__CUDACC__)
#define FB_HD __host__ __device__ __forceinline__
#define FB_HD_CONST __host__ __device__ constexpr
#else
#define FB_HD inline
#define FB_HD_CONST constexpr
#endif

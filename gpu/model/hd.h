// Marks the shared math as callable from host and device code. Without nvcc the macros vanish
// and the headers are plain C++, which is how the CPU engine and its tests compile them.
#pragma once

#if defined(__CUDACC__)
#define FB_HD __host__ __device__ __forceinline__
#define FB_HD_CONST __host__ __device__ constexpr
#else
// Inlined always, as nvcc's __forceinline__ does on the card: the CPU engine's loops vectorise only
// with the math inside them, and GCC's inliner gives up on a large file's calls once the file
// has grown past its budget (the field pass's tanh became a call in every loop when its runs took
// more template variants).
#define FB_HD __attribute__((always_inline)) inline
#define FB_HD_CONST constexpr
#endif

// Stores that go past the caches to memory (non-temporal), for the new field of a batch whose
// fields outgrow the last-level cache: each robot's F_t+1 is read again only a batch later, long
// after the cache would have evicted it, and an ordinary store first reads every line it writes
// (a third more memory traffic per cycle) and pushes the slab's own neighbour planes out.
// Where the CPU has no such store (no SSE: ARM), they are ordinary stores.
#pragma once

#include <cstdint>

#if defined(__SSE__)
#include <immintrin.h>
#endif

namespace fieldbrain::cpu {

// The alignment StreamFloats needs of `dst`.
constexpr uintptr_t kStreamAlign = 64;

inline bool StreamAligned(const float* p) { return (reinterpret_cast<uintptr_t>(p) & (kStreamAlign - 1)) == 0; }

// dst[0, kCount) = src[0, kCount), written past the caches; dst kStreamAlign-aligned, kCount a
// multiple of 16 (a cache line of floats), so every line is written whole.
template <int kCount>
[[gnu::always_inline]] inline void StreamFloats(float* __restrict dst, const float* __restrict src) {
  static_assert(kCount % 16 == 0, "whole cache lines only");
#if defined(__AVX512F__)
  for (int i = 0; i < kCount; i += 16) _mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
#elif defined(__AVX__)
  for (int i = 0; i < kCount; i += 8) _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
#elif defined(__SSE__)
  for (int i = 0; i < kCount; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
#else
  for (int i = 0; i < kCount; ++i) dst[i] = src[i];
#endif
}

// dst[0, n) = src[0, n): the lines of dst that start at kStreamAlign written past the caches, the
// rest as usual.
inline void StreamCopy(float* __restrict dst, const float* __restrict src, int n) {
  constexpr int kLine = 16;
  int i = 0;
  for (; i < n && !StreamAligned(dst + i); ++i) dst[i] = src[i];
  for (; i + kLine <= n; i += kLine) StreamFloats<kLine>(dst + i, src + i);
  for (; i < n; ++i) dst[i] = src[i];
}

// Orders the streamed stores before whatever this thread stores next (the engine's barrier that
// hands the new field to the next step): they are weakly ordered, unlike ordinary ones.
inline void StreamFence() {
#if defined(__SSE__)
  _mm_sfence();
#endif
}

}  // namespace fieldbrain::cpu

// Vectors whose storage starts on a cache line, for the CPU engine's working memory. The field
// pass's loops load whole vector registers from it (64 bytes with AVX-512); from glibc's 16-byte
// alignment most such loads straddle two lines, which costs the pass several percent on a machine
// with 512-bit loads (docs/benchmarks.md, issue 24's fifteenth session). The fields themselves
// lie in the brain pool, whose regions are aligned already (field_pool.h).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace fieldbrain::cpu {

inline constexpr std::size_t kCacheLineBytes = 64;

template <typename T>
struct CacheLineAllocator {
  using value_type = T;

  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}  // NOLINT: allocators convert implicitly

  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kCacheLineBytes}));
  }
  void deallocate(T* p, std::size_t n) { ::operator delete(p, n * sizeof(T), std::align_val_t{kCacheLineBytes}); }

  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
};

template <typename T>
using CacheAlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace fieldbrain::cpu

// Which sanitizer this build runs under, and the few of their interfaces the emulator calls:
// fiber switches (AddressSanitizer, ThreadSanitizer), happens-before annotations and ignored
// bookkeeping (ThreadSanitizer), poisoned red zones (AddressSanitizer). Each is a no-op without its sanitizer.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define FIELDBRAIN_EMU_ASAN 1
#endif
// The emulator itself is built without ThreadSanitizer's instrumentation (gpu/emu/CMakeLists.txt),
// so the build says when the program runs under it.
#if defined(__SANITIZE_THREAD__) && !defined(FIELDBRAIN_EMU_TSAN)
#define FIELDBRAIN_EMU_TSAN 1
#endif

extern "C" {
#if FIELDBRAIN_EMU_ASAN
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size);
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, size_t* size_old);
void __asan_poison_memory_region(const volatile void* addr, size_t size);
#endif
#if FIELDBRAIN_EMU_TSAN
void* __tsan_get_current_fiber();
void* __tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void* fiber);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
void __tsan_set_fiber_name(void* fiber, const char* name);
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
void AnnotateIgnoreWritesBegin(const char* file, int line);
void AnnotateIgnoreWritesEnd(const char* file, int line);
#endif
}

namespace fieldbrain::emu::sanitizer {

// Every access after Acquire(sync) on a thread happens after every access before a
// Release(sync) on another: how barriers, shuffles and stream order reach ThreadSanitizer.
inline void Release(void* sync) {
#if FIELDBRAIN_EMU_TSAN
  __tsan_release(sync);
#else
  static_cast<void>(sync);
#endif
}
inline void Acquire(void* sync) {
#if FIELDBRAIN_EMU_TSAN
  __tsan_acquire(sync);
#else
  static_cast<void>(sync);
#endif
}
// While one lives, ThreadSanitizer does not see the calling thread's (or CUDA thread's) memory
// accesses, allocations or frees: the emulator's own bookkeeping, which a block's fibers share
// with its scheduler by design, and which would otherwise look like races between CUDA threads.
class IgnoreAccesses {
 public:
#if FIELDBRAIN_EMU_TSAN
  IgnoreAccesses() { AnnotateIgnoreWritesBegin(__FILE__, __LINE__); }
  ~IgnoreAccesses() { AnnotateIgnoreWritesEnd(__FILE__, __LINE__); }
#else
  IgnoreAccesses() = default;
#endif
  IgnoreAccesses(const IgnoreAccesses&) = delete;
  IgnoreAccesses& operator=(const IgnoreAccesses&) = delete;
};

// AddressSanitizer reports any access to a poisoned range (red zones between brains).
inline void PoisonRange(const void* p, size_t bytes) {
#if FIELDBRAIN_EMU_ASAN
  __asan_poison_memory_region(p, bytes);
#else
  static_cast<void>(p);
  static_cast<void>(bytes);
#endif
}

}  // namespace fieldbrain::emu::sanitizer

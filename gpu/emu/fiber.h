// Fibers for the emulated CUDA threads: each thread of a block runs on a fiber of its own, and
// __syncthreads or a warp shuffle is a switch back to the block's scheduler, with no system call
// (Boost.Context's fcontext, tens of nanoseconds; ucontext saves the signal mask with a system
// call on every switch). The switches tell AddressSanitizer and ThreadSanitizer which stack runs,
// so neither reports the fibers' stacks as errors, and ThreadSanitizer sees each CUDA thread as a
// thread of its own: two CUDA threads are ordered only where the emulator says so (barriers,
// shuffles, kernel boundaries), never by the switches themselves.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace fieldbrain::emu {

// One fiber stack: an mmap'd region with a guard page below it, so an overflow faults at once.
class FiberStack {
 public:
  explicit FiberStack(size_t bytes);
  ~FiberStack();
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;

  void* bottom() const { return usable_; }
  size_t size() const { return usable_bytes_; }

 private:
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  void* usable_ = nullptr;
  size_t usable_bytes_ = 0;
};

// What emulated thread i of every block runs on, on one OS thread: its stack and, under
// ThreadSanitizer, the sanitizer's fiber. Reused by thread i of each block, one after another, so
// the sanitizer sees one thread per thread index (creating one per CUDA thread costs it system
// calls by the thousand per launch) and never a stack shared by two of its threads.
class FiberSlot {
 public:
  FiberSlot();
  ~FiberSlot();
  FiberSlot(const FiberSlot&) = delete;
  FiberSlot& operator=(const FiberSlot&) = delete;

  FiberStack& stack() { return stack_; }
  void* tsan_fiber() const { return tsan_fiber_; }

 private:
  FiberStack stack_;
  void* tsan_fiber_ = nullptr;
};

class FiberSlots {
 public:
  FiberSlot& At(int thread);

 private:
  std::vector<std::unique_ptr<FiberSlot>> slots_;
};

// Runs entry(arg) on a slot. Resume() (from the scheduler) runs it until it calls
// Fiber::Yield() or returns; Yield() (from inside) goes back to the scheduler.
class Fiber {
 public:
  using Entry = void (*)(void* arg);
  Fiber(FiberSlot& slot, Entry entry, void* arg);
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  void Resume();
  bool finished() const { return finished_; }
  // Only from code running on a fiber: back to the Resume() that ran it.
  static void Yield();

 private:
  static void Trampoline(void* transfer);
  void SwitchOut(bool dying);

  FiberSlot& slot_;
  Entry entry_;
  void* arg_;
  void* context_ = nullptr;         // where Resume() continues the fiber
  void* caller_ = nullptr;          // where Yield() continues the scheduler
  bool finished_ = false;
  void* asan_fake_stack_ = nullptr;  // AddressSanitizer's fake stack of the side switched away from
  const void* caller_stack_bottom_ = nullptr;
  size_t caller_stack_size_ = 0;
  void* tsan_caller_ = nullptr;
};

}  // namespace fieldbrain::emu

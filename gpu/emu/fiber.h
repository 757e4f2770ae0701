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

// Stacks kept by one OS thread for reuse across blocks and launches.
class FiberStackPool {
 public:
  std::unique_ptr<FiberStack> Take();
  void Give(std::unique_ptr<FiberStack> stack);

 private:
  std::vector<std::unique_ptr<FiberStack>> free_;
};

// Runs entry(arg) on `stack`. Resume() (from the scheduler) runs it until it calls
// Fiber::Yield() or returns; Yield() (from inside) goes back to the scheduler.
class Fiber {
 public:
  using Entry = void (*)(void* arg);
  Fiber(FiberStack& stack, Entry entry, void* arg);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  void Resume();
  bool finished() const { return finished_; }
  // Only from code running on a fiber: back to the Resume() that ran it.
  static void Yield();

 private:
  static void Trampoline(void* transfer);
  void SwitchOut(bool dying);

  FiberStack& stack_;
  Entry entry_;
  void* arg_;
  void* context_ = nullptr;         // where Resume() continues the fiber
  void* caller_ = nullptr;          // where Yield() continues the scheduler
  bool finished_ = false;
  void* asan_fake_stack_ = nullptr;  // AddressSanitizer's fake stack of the side switched away from
  const void* caller_stack_bottom_ = nullptr;
  size_t caller_stack_size_ = 0;
  void* tsan_fiber_ = nullptr;
  void* tsan_caller_ = nullptr;
};

}  // namespace fieldbrain::emu

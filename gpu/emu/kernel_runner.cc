#include "gpu/emu/kernel_runner.h"

#include "cuda_emu/kernel.h"

#include <cstdio>
#include <deque>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpu/emu/device.h"
#include "gpu/emu/fiber.h"
#include "gpu/emu/sanitizers.h"

namespace fieldbrain::emu {
namespace {

constexpr int kWarp = 32;

enum class Wait { kNone, kBarrier, kShuffle, kDone };

struct Shuffle {
  unsigned mask;
  uint64_t bits;
  ShuffleKind kind;
  int lane_arg;
  int width;
  const char* file;
  int line;
};

struct EmuThread {
  ThreadContext ctx;
  int linear = 0;
  Wait wait = Wait::kNone;
  const char* file = nullptr;  // where it waits
  int line = 0;
  Shuffle shuffle{};
  uint64_t result = 0;
  std::unique_ptr<Fiber> fiber;
};

struct AlignedDelete {
  void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t(16)); }
};
using SharedBytes = std::unique_ptr<std::byte[], AlignedDelete>;

SharedBytes NewShared(size_t bytes) {
  SharedBytes mem(static_cast<std::byte*>(::operator new[](std::max<size_t>(bytes, 1), std::align_val_t(16))));
  FillPoison(mem.get(), bytes);
  return mem;
}

struct SharedVar {
  const void* site;
  size_t bytes;
  SharedBytes mem;
};

// One block while it runs; the runner's state for the fibers' calls into the emulator.
struct Block {
  const LaunchConfig* config;
  const std::function<void()>* body;
  std::vector<EmuThread> threads{};
  std::deque<int> runnable{};
  int exited = 0;
  int at_barrier = 0;
  const char* barrier_file = nullptr;
  int barrier_line = 0;
  std::vector<SharedVar> shared{};
  size_t static_shared = 0;
  SharedBytes dynamic_shared{};
  std::optional<std::string> failure{};
  // ThreadSanitizer's sync objects (their addresses only): the launch's start and end, and per
  // block the barrier (element 0) and one per warp for shuffles (1 + warp). The block's are heap
  // memory of its own: freed with the block, they order nothing in the next one.
  char* launch_start;
  char* launch_end;
  std::vector<char> sync{};
  char* barrier_sync() { return &sync[0]; }
  char* warp_sync(int warp) { return &sync[size_t(1 + warp)]; }
};

thread_local Block* current_block = nullptr;
thread_local EmuThread* current_thread = nullptr;
thread_local FiberSlots* fiber_slots = nullptr;

std::string Where(const Block& b, const EmuThread& t) {
  return absl::StrFormat("kernel %s block (%u,%u,%u) thread (%u,%u,%u)", b.config->name, t.ctx.block_idx.x,
                         t.ctx.block_idx.y, t.ctx.block_idx.z, t.ctx.thread_idx.x, t.ctx.thread_idx.y,
                         t.ctx.thread_idx.z);
}

// Unwinds a thread of a failed block to its entry, so that everything on its fiber's stack is
// destroyed before the stack is reused.
struct BlockAborted {};

// A finding inside a fiber: recorded, and the block stops.
[[noreturn]] void FailFromFiber(std::string message) {
  current_block->failure = std::move(message);
  throw BlockAborted{};
}

// After every switch back into a fiber: a thread of a block that failed meanwhile unwinds.
void Resumed(const Block& b) {
  if (b.failure) throw BlockAborted{};
}

void ThreadEntry(void* arg) {
  auto* b = static_cast<Block*>(arg);
  sanitizer::Acquire(b->launch_start);
  try {
    (*b->body)();
  } catch (const BlockAborted&) {
    // The block failed; its report is already recorded.
  }
  sanitizer::Release(b->launch_end);
}

void WakeBarrier(Block& b) {
  b.at_barrier = 0;
  for (EmuThread& t : b.threads)
    if (t.wait == Wait::kBarrier) {
      t.wait = Wait::kNone;
      b.runnable.push_back(t.linear);
    }
}

std::string DescribeWaits(const Block& b) {
  std::string out;
  for (const EmuThread& t : b.threads) {
    if (t.wait != Wait::kBarrier && t.wait != Wait::kShuffle) continue;
    absl::StrAppend(&out, "\n  thread ", t.linear, t.wait == Wait::kBarrier ? " at __syncthreads " : " at a shuffle ",
                    t.file, ":", t.line);
  }
  return out;
}

// After a thread exits: a barrier the others wait at can no longer be reached by every thread.
void CheckAfterExit(Block& b, const EmuThread& gone) {
  if (b.at_barrier > 0 && b.at_barrier + b.exited == int(b.threads.size()))
    b.failure = absl::StrCat(Where(b, gone), " exited while the rest of its block waits at __syncthreads ",
                             b.barrier_file, ":", b.barrier_line, " (a barrier every thread must reach)");
}

void RunBlock(Block& b) {
  FiberSlots& slots = *fiber_slots;
  while (!b.runnable.empty() && !b.failure) {
    EmuThread& t = b.threads[size_t(b.runnable.front())];
    b.runnable.pop_front();
    if (!t.fiber) t.fiber = std::make_unique<Fiber>(slots.At(t.linear), &ThreadEntry, &b);
    current_thread = &t;
    t.fiber->Resume();
    current_thread = nullptr;
    if (b.failure) break;
    if (t.fiber->finished()) {
      t.fiber.reset();
      t.wait = Wait::kDone;
      ++b.exited;
      CheckAfterExit(b, t);
    }
  }
  if (!b.failure && b.exited < int(b.threads.size()))
    b.failure = absl::StrCat("kernel ", b.config->name, ": block (", b.threads[0].ctx.block_idx.x, ",",
                             b.threads[0].ctx.block_idx.y, ",", b.threads[0].ctx.block_idx.z,
                             ") cannot go on: its threads wait for each other", DescribeWaits(b));
  // A failed block's waiting threads unwind (Resumed throws) before their slots are reused.
  for (EmuThread& t : b.threads) {
    if (!t.fiber) continue;
    if (!t.fiber->finished()) {
      current_thread = &t;
      t.fiber->Resume();
      current_thread = nullptr;
    }
    t.fiber.reset();
  }
}

}  // namespace

const ThreadContext& CurrentThread() {
  if (current_thread == nullptr) {
    std::fprintf(stderr, "fieldbrain cuda-emu: threadIdx, blockIdx, blockDim or gridDim read outside a kernel\n");
    std::abort();
  }
  return current_thread->ctx;
}

void SyncThreads(const char* file, int line) {
  std::optional<sanitizer::IgnoreAccesses> emulator_work(std::in_place);
  Block& b = *current_block;
  EmuThread& t = *current_thread;
  if (b.at_barrier == 0) {
    b.barrier_file = file;
    b.barrier_line = line;
  } else if (b.barrier_line != line || std::string_view(b.barrier_file) != file) {
    FailFromFiber(absl::StrCat(Where(b, t), " waits at __syncthreads ", file, ":", line,
                               " while other threads of its block wait at ", b.barrier_file, ":", b.barrier_line,
                               " (divergent barrier)"));
  }
  if (b.exited > 0)
    FailFromFiber(absl::StrCat(Where(b, t), " waits at __syncthreads ", file, ":", line, " after ", b.exited,
                               " thread(s) of its block exited (a barrier every thread must reach)"));
  sanitizer::Release(b.barrier_sync());
  t.wait = Wait::kBarrier;
  t.file = file;
  t.line = line;
  if (++b.at_barrier == int(b.threads.size())) WakeBarrier(b);
  Fiber::Yield();
  Resumed(b);
  emulator_work.reset();
  sanitizer::Acquire(b.barrier_sync());
}

uint64_t WarpShuffle(unsigned mask, uint64_t bits, ShuffleKind kind, int lane_arg, int width, const char* file,
                     int line) {
  std::optional<sanitizer::IgnoreAccesses> emulator_work(std::in_place);
  Block& b = *current_block;
  EmuThread& t = *current_thread;
  const int lane = t.linear % kWarp;
  const int warp_base = t.linear - lane;
  const int n = int(b.threads.size());
  if (width < 1 || width > kWarp || (width & (width - 1)) != 0)
    FailFromFiber(absl::StrCat(Where(b, t), ": shuffle width ", width, " at ", file, ":", line,
                               " is not a power of two up to 32"));
  if ((mask & (1u << lane)) == 0)
    FailFromFiber(absl::StrFormat("%s calls a shuffle at %s:%d with mask 0x%08x, which does not name its lane %d",
                                  Where(b, t), file, line, mask, lane));
  for (int l = 0; l < kWarp; ++l) {
    if ((mask & (1u << l)) == 0) continue;
    if (warp_base + l >= n)
      FailFromFiber(absl::StrFormat("%s: shuffle mask 0x%08x at %s:%d names lane %d, past the block's last thread",
                                    Where(b, t), mask, file, line, l));
    if (b.threads[size_t(warp_base + l)].wait == Wait::kDone)
      FailFromFiber(absl::StrFormat("%s: shuffle mask 0x%08x at %s:%d names lane %d, which has exited",
                                    Where(b, t), mask, file, line, l));
  }
  sanitizer::Release(b.warp_sync(warp_base / kWarp));
  t.shuffle = Shuffle{mask, bits, kind, lane_arg, width, file, line};
  t.wait = Wait::kShuffle;
  t.file = file;
  t.line = line;

  bool all_here = true;
  for (int l = 0; l < kWarp && all_here; ++l)
    if ((mask & (1u << l)) != 0) all_here = b.threads[size_t(warp_base + l)].wait == Wait::kShuffle;
  if (all_here) {
    for (int l = 0; l < kWarp; ++l) {
      if ((mask & (1u << l)) == 0) continue;
      const Shuffle& s = b.threads[size_t(warp_base + l)].shuffle;
      if (s.mask != mask || s.kind != kind || s.width != width || s.line != line || std::string_view(s.file) != file)
        FailFromFiber(absl::StrFormat("%s: the lanes of mask 0x%08x are in different shuffles (%s:%d and %s:%d)",
                                      Where(b, t), mask, file, line, s.file, s.line));
    }
    for (int l = 0; l < kWarp; ++l) {
      if ((mask & (1u << l)) == 0) continue;
      EmuThread& dst = b.threads[size_t(warp_base + l)];
      const int segment = l & ~(width - 1);
      int src = l;
      switch (kind) {
        case ShuffleKind::kIndexed:
          src = segment + (dst.shuffle.lane_arg & (width - 1));
          break;
        case ShuffleKind::kDown:
          if ((l - segment) + dst.shuffle.lane_arg < width) src = l + dst.shuffle.lane_arg;
          break;
      }
      if ((mask & (1u << src)) == 0)
        FailFromFiber(absl::StrFormat("%s: lane %d reads lane %d in a shuffle at %s:%d, and mask 0x%08x does not "
                                      "name it (the value is undefined on a card)",
                                      Where(b, t), l, src, file, line, mask));
      dst.result = b.threads[size_t(warp_base + src)].shuffle.bits;
    }
    for (int l = 0; l < kWarp; ++l)
      if ((mask & (1u << l)) != 0) {
        b.threads[size_t(warp_base + l)].wait = Wait::kNone;
        b.runnable.push_back(warp_base + l);
      }
  }
  Fiber::Yield();
  Resumed(b);
  const uint64_t result = t.result;
  emulator_work.reset();
  sanitizer::Acquire(b.warp_sync(warp_base / kWarp));
  return result;
}

void* SharedVariable(const void* site, size_t bytes, size_t align, const char* name) {
  [[maybe_unused]] const sanitizer::IgnoreAccesses emulator_work;
  Block& b = *current_block;
  for (SharedVar& v : b.shared)
    if (v.site == site) return v.mem.get();
  const Card& card = CurrentCard();
  b.static_shared = (b.static_shared + align - 1) / align * align + bytes;
  if (b.static_shared > card.shared_per_block)
    FailFromFiber(absl::StrCat("kernel ", b.config->name, ": static __shared__ memory reaches ", b.static_shared,
                               " bytes with '", name, "', over the ", card.shared_per_block, " bytes of ", card.name));
  // Without the attribute a block has 48 KiB for static and dynamic shared memory together; with
  // it, the attribute is its dynamic share, and static + attribute must fit the card's opt-in.
  const std::optional<size_t> attribute = DynamicSharedAttribute(b.config->kernel);
  const size_t allowed = attribute ? b.static_shared + *attribute : card.shared_per_block;
  if (b.static_shared + b.config->dynamic_shared_bytes > allowed || allowed > card.shared_per_block_optin)
    FailFromFiber(absl::StrCat("kernel ", b.config->name, ": ", b.static_shared, " bytes of static and ",
                               b.config->dynamic_shared_bytes, " of dynamic shared memory exceed the ",
                               std::min(allowed, card.shared_per_block_optin), " bytes a block may have on ",
                               card.name, attribute ? " with its MaxDynamicSharedMemorySize attribute" : "",
                               " (the launch would fail on the card)"));
  b.shared.push_back(SharedVar{site, bytes, NewShared(bytes)});
  return b.shared.back().mem.get();
}

void* DynamicSharedMemory() { return current_block->dynamic_shared.get(); }

void RunGrid(const LaunchConfig& config, const std::function<void()>& thread_body) {
  [[maybe_unused]] const sanitizer::IgnoreAccesses emulator_work;  // the scheduler's side; the fibers are watched
  static thread_local FiberSlots slots;
  fiber_slots = &slots;
  char launch_start = 0, launch_end = 0;
  sanitizer::Release(&launch_start);  // everything before the launch happens before its threads
  const dim3 g = config.grid, d = config.block;
  const int threads = int(d.x * d.y * d.z);
  for (unsigned bz = 0; bz < g.z; ++bz)
    for (unsigned by = 0; by < g.y; ++by)
      for (unsigned bx = 0; bx < g.x; ++bx) {
        Block b{.config = &config, .body = &thread_body, .launch_start = &launch_start, .launch_end = &launch_end};
        b.threads.resize(size_t(threads));
        b.sync.resize(size_t(1 + (threads + kWarp - 1) / kWarp));
        for (int i = 0; i < threads; ++i) {
          EmuThread& t = b.threads[size_t(i)];
          t.linear = i;
          t.ctx.thread_idx = uint3{unsigned(i) % d.x, (unsigned(i) / d.x) % d.y, unsigned(i) / (d.x * d.y)};
          t.ctx.block_idx = uint3{bx, by, bz};
          t.ctx.block_dim = d;
          t.ctx.grid_dim = g;
          b.runnable.push_back(i);
        }
        b.dynamic_shared = NewShared(config.dynamic_shared_bytes);
        current_block = &b;
        RunBlock(b);
        current_block = nullptr;
        if (b.failure) {
          sanitizer::Acquire(&launch_end);
          Report(*b.failure);
          Latch(cudaErrorLaunchFailure);
          return;
        }
      }
  sanitizer::Acquire(&launch_end);  // and everything the threads did happens before what follows
}

}  // namespace fieldbrain::emu

// The CPU engine's cycle allocates nothing (DESIGN.md section 6: the hot path allocates nothing),
// counted at malloc itself: this binary puts its own malloc family in front of glibc's, so every
// allocation in the process is seen, the engine's, the standard library's and libgomp's alike.
// (A sanitizer brings its own allocator; under one the count is not taken.)
#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "gpu/engine.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FIELDBRAIN_COUNTS_ALLOCATIONS 0
#else
#define FIELDBRAIN_COUNTS_ALLOCATIONS 1

namespace {
std::atomic<bool> counting{false};
std::atomic<int64_t> allocations{0};
void Count() {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);

void* malloc(size_t n) {
  Count();
  return __libc_malloc(n);
}
void* calloc(size_t count, size_t n) {
  Count();
  return __libc_calloc(count, n);
}
void* realloc(void* p, size_t n) {
  Count();
  return __libc_realloc(p, n);
}
void* memalign(size_t alignment, size_t n) {
  Count();
  return __libc_memalign(alignment, n);
}
void* aligned_alloc(size_t alignment, size_t n) {
  Count();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, size_t alignment, size_t n) {
  Count();
  void* p = __libc_memalign(alignment, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}
#endif

namespace fieldbrain {
namespace {

struct Case {
  const char* name;
  FieldShape shape;
  int robots;
  int threads;
};

// Allocations in `cycles` batches of every robot, after a few batches that let the engine and
// libgomp settle (thread pools, teams) and the robots' memories fill.
int64_t AllocationsInCycles(const Case& c, int cycles) {
  EngineConfig config;
  config.shape = c.shape;
  config.max_robots = c.robots;
  config.max_batch = c.robots;
  config.threads = c.threads;
  auto engine = MakeEngine("cpu", config);
  EXPECT_TRUE(engine.ok()) << engine.status();
  if (!engine.ok()) return -1;
  Engine& e = **engine;
  for (int r = 0; r < c.robots; ++r) {
    auto slot = e.CreateBrain(BrainSpec{uint64_t(r + 1), 12, 4, true});
    EXPECT_TRUE(slot.ok()) << slot.status();
    if (!slot.ok()) return -1;
    e.inputs()[r].slot = *slot;
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uni(-1, 1);
  constexpr int kSettle = 30;
  int64_t counted = 0;
  for (int t = 0; t < kSettle + cycles; ++t) {
    for (int r = 0; r < c.robots; ++r) {
      for (int i = 0; i < 12; ++i) e.inputs()[r].sensors[i] = uni(rng);
      e.inputs()[r].reward = uni(rng);  // |r| > 0.1 most cycles: the memory writes too
    }
    const int64_t before = allocations.load();
    counting = t >= kSettle;
    const absl::Status status = e.RunBatch(c.robots);
    counting = false;
    EXPECT_TRUE(status.ok()) << status;
    counted += allocations.load() - before;
  }
  return counted;
}

TEST(CycleAllocation, ACycleAllocatesNothingOnOneThreadOrMany) {
  if (!FIELDBRAIN_COUNTS_ALLOCATIONS) GTEST_SKIP() << "a sanitizer's allocator is in use";
  // The allocator itself is seen: a vector's buffer counts.
  const int64_t before = allocations.load();
  counting = true;
  std::vector<float>* probe = new std::vector<float>(1000);
  counting = false;
  ASSERT_GE(allocations.load() - before, 2) << "the count does not see operator new";
  delete probe;

  for (const Case& c : {Case{"tiny, 1 robot, 1 thread", FieldShape::Tiny(), 1, 1},
                        Case{"tiny, 3 robots, 2 threads", FieldShape::Tiny(), 3, 2},
                        Case{"small, 1 robot, 2 threads", FieldShape::Small(), 1, 2},
                        Case{"small, 4 robots, 2 threads", FieldShape::Small(), 4, 2}})
    EXPECT_EQ(AllocationsInCycles(c, 40), 0) << c.name;
}

}  // namespace
}  // namespace fieldbrain

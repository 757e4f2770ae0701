#include "gpu/emu/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/detail/fcontext.hpp>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "gpu/emu/sanitizers.h"

namespace fieldbrain::emu {
namespace {

namespace bcd = boost::context::detail;

// The fiber running on this OS thread (Yield's way back), null on the scheduler.
thread_local Fiber* current_fiber = nullptr;

size_t PageSize() {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return page;
}

// __tsan_switch_to_fiber's flag: the switch itself orders nothing.
constexpr unsigned kTsanNoSync = 1;

}  // namespace

FiberStack::FiberStack(size_t bytes) {
  const size_t page = PageSize();
  usable_bytes_ = (bytes + page - 1) / page * page;
  map_bytes_ = usable_bytes_ + page;
  map_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map_ == MAP_FAILED) {
    std::fprintf(stderr, "fieldbrain cuda-emu: cannot map a fiber stack of %zu bytes\n", map_bytes_);
    std::abort();
  }
  mprotect(map_, page, PROT_NONE);  // the guard page: stacks grow down into it
  usable_ = static_cast<char*>(map_) + page;
}

FiberStack::~FiberStack() { munmap(map_, map_bytes_); }

namespace {

// Kernels keep small frames, but sanitizers grow them several times.
#if FIELDBRAIN_EMU_ASAN || FIELDBRAIN_EMU_TSAN
constexpr size_t kStackBytes = 512 << 10;
#else
constexpr size_t kStackBytes = 128 << 10;
#endif

}  // namespace

FiberSlot::FiberSlot() : stack_(kStackBytes) {
#if FIELDBRAIN_EMU_TSAN
  tsan_fiber_ = __tsan_create_fiber(0);
#endif
}

FiberSlot::~FiberSlot() {
#if FIELDBRAIN_EMU_TSAN
  __tsan_destroy_fiber(tsan_fiber_);
#endif
}

FiberSlot& FiberSlots::At(int thread) {
  while (int(slots_.size()) <= thread) slots_.push_back(std::make_unique<FiberSlot>());
  return *slots_[size_t(thread)];
}

Fiber::Fiber(FiberSlot& slot, Entry entry, void* arg) : slot_(slot), entry_(entry), arg_(arg) {
  FiberStack& stack = slot.stack();
  char* top = static_cast<char*>(stack.bottom()) + stack.size();
  context_ = bcd::make_fcontext(top, stack.size(), [](bcd::transfer_t t) { Trampoline(&t); });
}

void Fiber::Resume() {
  Fiber* const outer = std::exchange(current_fiber, this);
#if FIELDBRAIN_EMU_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, slot_.stack().bottom(), slot_.stack().size());
#endif
#if FIELDBRAIN_EMU_TSAN
  tsan_caller_ = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(slot_.tsan_fiber(), kTsanNoSync);
#endif
  const bcd::transfer_t back = bcd::jump_fcontext(context_, this);
  context_ = back.fctx;
#if FIELDBRAIN_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
  current_fiber = outer;
}

void Fiber::Trampoline(void* transfer) {
  const auto* t = static_cast<bcd::transfer_t*>(transfer);
  Fiber* self = static_cast<Fiber*>(t->data);
  self->caller_ = t->fctx;
#if FIELDBRAIN_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &self->caller_stack_bottom_, &self->caller_stack_size_);
#endif
  self->entry_(self->arg_);
  self->finished_ = true;
  self->SwitchOut(true);
}

void Fiber::SwitchOut(bool dying) {
#if FIELDBRAIN_EMU_ASAN
  __sanitizer_start_switch_fiber(dying ? nullptr : &asan_fake_stack_, caller_stack_bottom_, caller_stack_size_);
#endif
#if FIELDBRAIN_EMU_TSAN
  __tsan_switch_to_fiber(tsan_caller_, kTsanNoSync);
#endif
  const bcd::transfer_t back = bcd::jump_fcontext(caller_, nullptr);
  // Resumed (never after `dying`): back.fctx is where the scheduler waits now.
  caller_ = back.fctx;
#if FIELDBRAIN_EMU_ASAN
  __sanitizer_finish_switch_fiber(asan_fake_stack_, &caller_stack_bottom_, &caller_stack_size_);
#endif
}

void Fiber::Yield() {
  Fiber* self = current_fiber;
  if (self == nullptr) {
    std::fprintf(stderr, "fieldbrain cuda-emu: a device-side synchronisation was called outside a kernel\n");
    std::abort();
  }
  self->SwitchOut(false);
}

}  // namespace fieldbrain::emu

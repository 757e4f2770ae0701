// MemoryArena: the Memory service's memory budget (--memory_arena_bytes), taken once at start on
// the Memory thread (memory_thread.h).
//
// With a host block (the CPU backend) the spaces keep their vectors in 256-byte aligned regions
// carved from one allocation made at start. Without one (the CUDA backend: its spaces allocate
// device memory themselves, on the Memory thread, the only thread of the service that touches the GPU) the
// arena only counts. Either way every other byte a space takes (its work areas and its index)
// counts against the same budget, so the spaces together never hold more than bytes().
//
// Memory thread only, like the spaces it serves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>

#include "absl/status/statusor.h"

namespace fieldbrain::server::memory {

class MemoryArena {
 public:
  // Bytes taken from the arena; given back when the lease is destroyed. It must not outlive the
  // arena.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

    void* data() const { return data_; }  // null unless a region of the host block
    int64_t bytes() const { return bytes_; }

   private:
    friend class MemoryArena;
    void Release();
    MemoryArena* arena_ = nullptr;
    int64_t offset_ = -1;  // >= 0: a region of the host block
    int64_t bytes_ = 0;
    void* data_ = nullptr;
  };

  // RESOURCE_EXHAUSTED when the host block cannot be allocated.
  static absl::StatusOr<std::unique_ptr<MemoryArena>> Create(int64_t bytes, bool host_block);
  MemoryArena(const MemoryArena&) = delete;
  MemoryArena& operator=(const MemoryArena&) = delete;

  // A region of the host block, 256-byte aligned, `bytes` rounded up to 256. FAILED_PRECONDITION
  // without a host block; RESOURCE_EXHAUSTED (with the figures) when no free region is that large.
  absl::StatusOr<Lease> TakeRegion(int64_t bytes);
  // Bytes counted against the budget with no memory behind them (what spaces allocate themselves).
  absl::StatusOr<Lease> TakeBudget(int64_t bytes);

  bool host() const { return block_ != nullptr; }
  int64_t bytes() const { return bytes_; }
  int64_t used() const { return used_; }
  int64_t available() const { return bytes_ - used_; }

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const { std::free(p); }
  };

  explicit MemoryArena(int64_t bytes) : bytes_(bytes) {}
  void Give(int64_t offset, int64_t bytes);
  absl::Status Exhausted(int64_t needed) const;

  const int64_t bytes_;
  int64_t used_ = 0;
  std::unique_ptr<std::byte, FreeDeleter> block_;
  std::map<int64_t, int64_t> free_;  // free regions of the host block: offset -> length, coalesced
};

}  // namespace fieldbrain::server::memory

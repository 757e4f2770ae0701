#include "server/memory/memory_arena.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fieldbrain::server::memory {
namespace {

constexpr int64_t kAlign = 256;  // what HrrStorage asks for

int64_t RoundUp(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

MemoryArena::Lease::Lease(Lease&& other) noexcept
    : arena_(std::exchange(other.arena_, nullptr)),
      offset_(std::exchange(other.offset_, -1)),
      bytes_(std::exchange(other.bytes_, 0)),
      data_(std::exchange(other.data_, nullptr)) {}

MemoryArena::Lease& MemoryArena::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    arena_ = std::exchange(other.arena_, nullptr);
    offset_ = std::exchange(other.offset_, -1);
    bytes_ = std::exchange(other.bytes_, 0);
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

MemoryArena::Lease::~Lease() { Release(); }

void MemoryArena::Lease::Release() {
  if (arena_ != nullptr) arena_->Give(offset_, bytes_);
  arena_ = nullptr;
  offset_ = -1;
  bytes_ = 0;
  data_ = nullptr;
}

absl::StatusOr<std::unique_ptr<MemoryArena>> MemoryArena::Create(int64_t bytes, bool host_block) {
  if (bytes < 0) return absl::InvalidArgumentError(absl::StrCat("arena of ", bytes, " bytes"));
  // Rounded down to whole 256-byte units: the budget is never exceeded.
  std::unique_ptr<MemoryArena> arena(new MemoryArena(bytes / kAlign * kAlign));
  if (host_block && arena->bytes_ > 0) {
    // Address space only: pages are committed as spaces zero their regions.
    arena->block_.reset(static_cast<std::byte*>(std::aligned_alloc(kAlign, size_t(arena->bytes_))));
    if (arena->block_ == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot allocate the Memory arena of ", arena->bytes_, " bytes; lower --memory_arena_bytes"));
    }
    arena->free_.emplace(0, arena->bytes_);
  }
  return arena;
}

absl::Status MemoryArena::Exhausted(int64_t needed) const {
  int64_t largest = 0;
  for (const auto& [offset, length] : free_) largest = std::max(largest, length);
  return absl::ResourceExhaustedError(
      absl::StrCat(needed, " bytes are needed; the Memory arena (--memory_arena_bytes) has ", available(), " of ",
                   bytes_, " bytes free",
                   host() ? absl::StrCat(", the largest free region ", std::min(largest, available()), " bytes") : ""));
}

absl::StatusOr<MemoryArena::Lease> MemoryArena::TakeRegion(int64_t bytes) {
  if (!host()) return absl::FailedPreconditionError("this Memory arena has no host block");
  const int64_t size = RoundUp(std::max<int64_t>(bytes, 1));
  if (size > available()) return Exhausted(size);
  for (auto it = free_.begin(); it != free_.end(); ++it) {  // first fit: spaces are few and large
    if (it->second < size) continue;
    const int64_t offset = it->first;
    const int64_t rest = it->second - size;
    free_.erase(it);
    if (rest > 0) free_.emplace(offset + size, rest);
    used_ += size;
    Lease lease;
    lease.arena_ = this;
    lease.offset_ = offset;
    lease.bytes_ = size;
    lease.data_ = block_.get() + offset;
    return lease;
  }
  return Exhausted(size);
}

absl::StatusOr<MemoryArena::Lease> MemoryArena::TakeBudget(int64_t bytes) {
  const int64_t size = std::max<int64_t>(bytes, 0);
  if (size > available()) return Exhausted(size);
  used_ += size;
  Lease lease;
  lease.arena_ = this;
  lease.bytes_ = size;
  return lease;
}

void MemoryArena::Give(int64_t offset, int64_t bytes) {
  used_ -= bytes;
  if (offset < 0) return;
  auto [it, inserted] = free_.emplace(offset, bytes);
  if (auto next = std::next(it); next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    if (auto prev = std::prev(it); prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
}

}  // namespace fieldbrain::server::memory

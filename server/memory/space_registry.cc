#include "server/memory/space_registry.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/memory/memory_limits.h"

namespace fieldbrain::server::memory {

SpaceRegistry::SpaceRegistry(MemoryArena& arena, std::string backend, int max_request_vectors)
    : arena_(arena), backend_(std::move(backend)), max_request_vectors_(max_request_vectors) {}

absl::StatusOr<MemorySpace*> SpaceRegistry::Create(absl::string_view name, int dim, int capacity) {
  if (spaces_.find(name) != spaces_.end()) {
    return absl::AlreadyExistsError(absl::StrCat("a space named '", name, "' exists already"));
  }
  absl::StatusOr<std::unique_ptr<MemorySpace>> space = MemorySpace::Create(
      std::string(name), dim, capacity, int(RequestLimits{max_request_vectors_}.vectors_at(dim)), backend_, arena_);
  if (!space.ok()) return space.status();
  MemorySpace* raw = space->get();
  spaces_.emplace(std::string(name), *std::move(space));
  return raw;
}

absl::Status SpaceRegistry::Delete(absl::string_view name) {
  const auto it = spaces_.find(name);
  if (it == spaces_.end()) return absl::NotFoundError(absl::StrCat("no space named '", name, "'"));
  spaces_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<MemorySpace*> SpaceRegistry::Find(absl::string_view name) const {
  const auto it = spaces_.find(name);
  if (it == spaces_.end()) return absl::NotFoundError(absl::StrCat("no space named '", name, "'"));
  return it->second.get();
}

void SpaceRegistry::ForEach(absl::FunctionRef<void(const MemorySpace&)> fn) const {
  for (const auto& [name, space] : spaces_) fn(*space);
}

int64_t SpaceRegistry::vectors_stored() const {
  int64_t n = 0;
  for (const auto& [name, space] : spaces_) n += space->size();
  return n;
}

}  // namespace fieldbrain::server::memory

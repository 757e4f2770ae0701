// SpaceRegistry: the Memory service's spaces by name, each taking its bytes from one arena.
// Names are global to the server. Memory thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/memory/memory_arena.h"
#include "server/memory/memory_space.h"
#include "server/memory/space_name.h"

namespace fieldbrain::server::memory {

class SpaceRegistry {
 public:
  // `arena` outlives the registry. Spaces run on `backend` ("cpu" or "cuda").
  SpaceRegistry(MemoryArena& arena, std::string backend, int max_request_vectors);
  SpaceRegistry(const SpaceRegistry&) = delete;
  SpaceRegistry& operator=(const SpaceRegistry&) = delete;

  // ALREADY_EXISTS for a name in use; RESOURCE_EXHAUSTED when the arena lacks room.
  absl::StatusOr<MemorySpace*> Create(absl::string_view name, int dim, int capacity);
  // NOT_FOUND for an unknown name. The space's memory goes back to the arena.
  absl::Status Delete(absl::string_view name);
  // NOT_FOUND naming the space.
  absl::StatusOr<MemorySpace*> Find(absl::string_view name) const;
  // Every space, in name order.
  void ForEach(absl::FunctionRef<void(const MemorySpace&)> fn) const;

  int64_t vectors_stored() const;
  const std::string& backend() const { return backend_; }
  const MemoryArena& arena() const { return arena_; }

 private:
  MemoryArena& arena_;
  const std::string backend_;
  const int max_request_vectors_;
  std::map<std::string, std::unique_ptr<MemorySpace>, std::less<>> spaces_;
};

}  // namespace fieldbrain::server::memory

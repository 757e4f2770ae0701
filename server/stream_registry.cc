#include "server/stream_registry.h"

#include <optional>
#include <utility>
#include <vector>

#include "server/cycle_stream.h"

namespace fieldbrain::server {

void StreamRegistry::Add(CycleStream* stream) {
  absl::MutexLock lock(&mu_);
  streams_.insert(stream);
}

void StreamRegistry::Remove(CycleStream* stream) {
  absl::MutexLock lock(&mu_);
  streams_.erase(stream);
}

void StreamRegistry::ForEachLive(absl::FunctionRef<void(CycleStream&)> fn) {
  std::vector<std::pair<CycleStream*, CycleStream::Hold>> held;
  {
    absl::MutexLock lock(&mu_);
    held.reserve(streams_.size());
    for (CycleStream* s : streams_) {
      if (std::optional<CycleStream::Hold> hold = s->TryHold(); hold.has_value()) held.emplace_back(s, *std::move(hold));
    }
  }
  for (auto& [stream, hold] : held) fn(*stream);
}

int StreamRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(streams_.size());
}

}  // namespace fieldbrain::server

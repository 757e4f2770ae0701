#include "server/stream_registry.h"

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
  std::vector<CycleStream*> held;
  {
    absl::MutexLock lock(&mu_);
    held.reserve(streams_.size());
    for (CycleStream* s : streams_) {
      if (s->TryHold()) held.push_back(s);
    }
  }
  for (CycleStream* s : held) {
    fn(*s);
    s->Release();
  }
}

int StreamRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(streams_.size());
}

}  // namespace fieldbrain::server

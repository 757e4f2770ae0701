// The live Cycle streams of a service, so that shutdown can reach each of them.
//
// Lifetime: a stream is deleted only after it has left the registry, and leaving happens under
// the registry's lock; ForEachLive takes a hold on each stream under that same lock (a stream
// whose holds already reached zero is skipped), so a stream is never used after its deletion.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace fieldbrain::server {

class CycleStream;

class StreamRegistry {
 public:
  void Add(CycleStream* stream);
  void Remove(CycleStream* stream);
  // Calls `fn` for every registered stream that is still alive, outside the registry's lock.
  void ForEachLive(absl::FunctionRef<void(CycleStream&)> fn);
  int size() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_set<CycleStream*> streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fieldbrain::server

// The Memory service's fixed limits and the options the daemon's flags give it. The figures are
// announced to clients in ListSpacesResponse.limits (proto/brain/v1/memory.proto).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"

namespace fieldbrain::server {
class AccessControl;
}

namespace fieldbrain::server::memory {

inline constexpr int kMaxSpaceNameBytes = 64;
// Dimensions beyond this buy nothing for HRR and make single requests slow.
inline constexpr int kMaxSpaceDimension = 16384;
inline constexpr int kMaxSpaceCapacity = 1 << 20;
// One more than this is asked of the library's top-k (its limit is 64), so the query itself can
// be dropped from its own matches.
inline constexpr int kMaxCleanupK = 32;
// A Get answers at most this many floats (2 MiB), within every gRPC client's default 4 MiB
// receive limit, and its serialisation on the Memory thread stays short.
inline constexpr int kMaxGetValues = 1 << 19;
// A (query, candidate) cosine costs about a fifth of what making a vector does (measured on the
// CPU backend, D = 1024: ~0.7 us against 1-15 us): a Cleanup may compare this many pairs per
// vector a request may otherwise make, for about the same time.
inline constexpr int kCleanupComparisonsPerVector = 16;
// Bookkeeping per slot that counts against the arena beside the vectors: the SHA-256 (32 bytes),
// the slot's id (8), its place in the free list (4) and its entry in the id index (~20).
inline constexpr int64_t kIndexBytesPerSlot = 64;

// From the daemon's flags (server_config.h).
struct MemoryOptions {
  int64_t arena_bytes = int64_t(256) << 20;
  int max_request_vectors = 256;
  std::string engine_kind = "cpu";  // the engine's kind: the backend the spaces follow
  // Who may use which space (server/access_control.h); null = everyone. Not owned.
  const AccessControl* access = nullptr;
  // Run once, on the Memory thread, when a request found the device context lost (a sticky
  // error: the process must restart); nullable. It must not call back into the service.
  std::function<void(const absl::Status& lost)> on_device_lost;
};

// The dimension the request limits are stated for: a vector of dimension D > this costs D / this
// as much, so a request may name or make proportionally fewer.
inline constexpr int kLimitDimension = 1024;

// What one request may name or make: checked on the gRPC thread where the request alone decides
// (the limits at kLimitDimension and below), on the Memory thread where the space's dimension
// does.
struct RequestLimits {
  int max_request_vectors = 256;
  int64_t max_cleanup_comparisons() const { return int64_t(max_request_vectors) * kCleanupComparisonsPerVector; }
  int64_t vectors_at(int dim) const { return std::max<int64_t>(1, Scaled(max_request_vectors, dim)); }
  int64_t comparisons_at(int dim) const { return std::max<int64_t>(1, Scaled(max_cleanup_comparisons(), dim)); }

 private:
  static int64_t Scaled(int64_t n, int dim) { return dim <= kLimitDimension ? n : n * kLimitDimension / dim; }
};

}  // namespace fieldbrain::server::memory

// The Memory service's operations on one space, run on the Memory thread. Each resolves the
// request's ids, checks what depends on the space (dimensions, room, cost), then runs the HRR
// library and fills the response: all or nothing (MemorySpace::Store). The request has passed
// request_checks.h. Library calls are cut into pieces of the space's max_batch where a request
// may name more entries than that (repeated ids, pairs of a small space).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "brain/v1/memory.pb.h"
#include "gpu/hrr/hrr_space.h"
#include "server/memory/memory_limits.h"
#include "server/memory/memory_space.h"

namespace fieldbrain::server::memory {

// Host scratch reused by every request (the Memory thread runs one at a time).
struct OpScratch {
  DigestScratch digest;
  std::vector<int32_t> a, b, c;
  std::vector<int32_t> offsets;
  std::vector<float> floats;
  std::vector<uint64_t> ids;
  std::vector<int32_t> top_slots;
  std::vector<float> top_cosines;
};

absl::Status RunPut(MemorySpace& space, const brain::v1::PutRequest& r, brain::v1::PutResponse* out, OpScratch& s);
absl::Status RunGet(MemorySpace& space, const brain::v1::GetRequest& r, brain::v1::GetResponse* out, OpScratch& s);
absl::Status RunDelete(MemorySpace& space, const brain::v1::DeleteRequest& r, brain::v1::DeleteResponse* out,
                       OpScratch& s);
absl::Status RunBind(MemorySpace& space, const brain::v1::BindRequest& r, brain::v1::BindResponse* out, OpScratch& s);
absl::Status RunUnbind(MemorySpace& space, const brain::v1::UnbindRequest& r, brain::v1::UnbindResponse* out,
                       OpScratch& s);
absl::Status RunSuperpose(MemorySpace& space, const brain::v1::SuperposeRequest& r, brain::v1::SuperposeResponse* out,
                          OpScratch& s);
absl::Status RunPermute(MemorySpace& space, const brain::v1::PermuteRequest& r, brain::v1::PermuteResponse* out,
                        OpScratch& s);
absl::Status RunPower(MemorySpace& space, const brain::v1::PowerRequest& r, brain::v1::PowerResponse* out,
                      OpScratch& s);
absl::Status RunSimilarity(MemorySpace& space, const brain::v1::SimilarityRequest& r,
                           brain::v1::SimilarityResponse* out, OpScratch& s);
absl::Status RunCleanup(MemorySpace& space, const brain::v1::CleanupRequest& r, brain::v1::CleanupResponse* out,
                        OpScratch& s, const RequestLimits& limits);

}  // namespace fieldbrain::server::memory

// MemoryStore: everything the Memory service keeps (the arena, the spaces, scratch, the HRR
// backend's shared context) and one method per RPC, for the Memory thread alone: the service
// hands it one job per request, and it is made and destroyed on that thread too. Each method
// fills the gRPC response in place and updates the brain_hrr_* metrics.
//
// The backend's shared context (on CUDA: the stream, the cuBLAS handle and its work area that
// every space uses) is held for the store's life, so it is made once, and its bytes are counted
// once against the arena, before any space: ListSpaces' arena_used_bytes includes them.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "brain/v1/memory.pb.h"
#include "gpu/hrr/hrr_backend_context.h"
#include "server/memory/memory_arena.h"
#include "server/memory/memory_limits.h"
#include "server/memory/memory_ops.h"
#include "server/memory/space_registry.h"
#include "telemetry/metrics.h"

namespace fieldbrain::server::memory {

class MemoryStore {
 public:
  // The spaces follow the engine: the CUDA backend on the CUDA engine (the CPU one, with a
  // warning, where this build or device cannot make a CUDA space), else the CPU backend with the
  // arena as one host block. RESOURCE_EXHAUSTED when that block cannot be allocated, or the
  // arena cannot hold the backend's shared context.
  static absl::StatusOr<std::unique_ptr<MemoryStore>> Create(const MemoryOptions& options, telemetry::Metrics* metrics);
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  absl::Status CreateSpace(const brain::v1::CreateSpaceRequest& r, brain::v1::CreateSpaceResponse* out);
  absl::Status DeleteSpace(const brain::v1::DeleteSpaceRequest& r, brain::v1::DeleteSpaceResponse* out);
  absl::Status ListSpaces(const brain::v1::ListSpacesRequest& r, brain::v1::ListSpacesResponse* out);
  absl::Status Put(const brain::v1::PutRequest& r, brain::v1::PutResponse* out);
  absl::Status Get(const brain::v1::GetRequest& r, brain::v1::GetResponse* out);
  absl::Status Delete(const brain::v1::DeleteRequest& r, brain::v1::DeleteResponse* out);
  absl::Status Bind(const brain::v1::BindRequest& r, brain::v1::BindResponse* out);
  absl::Status Unbind(const brain::v1::UnbindRequest& r, brain::v1::UnbindResponse* out);
  absl::Status Superpose(const brain::v1::SuperposeRequest& r, brain::v1::SuperposeResponse* out);
  absl::Status Permute(const brain::v1::PermuteRequest& r, brain::v1::PermuteResponse* out);
  absl::Status Power(const brain::v1::PowerRequest& r, brain::v1::PowerResponse* out);
  absl::Status Similarity(const brain::v1::SimilarityRequest& r, brain::v1::SimilarityResponse* out);
  absl::Status Cleanup(const brain::v1::CleanupRequest& r, brain::v1::CleanupResponse* out);

  const std::string& backend() const { return registry_->backend(); }
  // Bytes of the backend's shared context, counted in the arena (0 on the CPU backend).
  int64_t shared_bytes() const { return shared_lease_.bytes(); }
  // OK, or the sticky device error that lost the process's device context.
  absl::Status device_health() const { return context_->health(); }
  const MemoryArena& arena() const { return *arena_; }
  SpaceRegistry& registry() { return *registry_; }

 private:
  MemoryStore(const MemoryOptions& options, std::unique_ptr<MemoryArena> arena, std::string backend,
              std::shared_ptr<hrr::BackendContext> context, MemoryArena::Lease shared_lease,
              telemetry::Metrics* metrics);
  // Runs `op` on the request's space, unless `work` (the vectors the request names or makes)
  // exceeds what a request may at the space's dimension, and counts `vectors` under `metric` when
  // it succeeds.
  template <typename Request, typename Response, typename Op>
  absl::Status OnSpace(const Request& r, Response* out, telemetry::HrrOp metric, int64_t vectors, int64_t work, Op op);
  void PublishGauges();

  const RequestLimits limits_;
  telemetry::Metrics* const metrics_;
  // The arena outlives the spaces (declared first, destroyed last), and so does the context they
  // share.
  std::unique_ptr<MemoryArena> arena_;
  std::shared_ptr<hrr::BackendContext> context_;
  MemoryArena::Lease shared_lease_;
  std::unique_ptr<SpaceRegistry> registry_;
  OpScratch scratch_;
};

// The figures ListSpaces announces.
brain::v1::MemoryLimits MakeMemoryLimits(const RequestLimits& limits, const MemoryArena& arena,
                                         const std::string& backend);

}  // namespace fieldbrain::server::memory

// MemoryService: the gRPC callback service brain.v1.Memory (proto/brain/v1/memory.proto).
//
// Engine-thread discipline: a gRPC thread only parses and checks a request by itself
// (request_checks.h), then hands the whole request to the engine thread as ONE job
// (BatchScheduler::RunOnEngineThread), which runs it on the MemoryStore and finishes the call
// from its result. The store (its arena, the spaces and through them any GPU memory) is made,
// used and destroyed only on the engine thread, between robots' batches.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "brain/v1/memory.grpc.pb.h"
#include "server/access_control.h"
#include "server/call_metadata.h"
#include "server/batch_scheduler.h"
#include "server/memory/memory_limits.h"
#include "server/memory/memory_store.h"
#include "telemetry/metrics.h"

namespace fieldbrain::server::memory {

class MemoryService final : public brain::v1::Memory::CallbackService {
 public:
  // Makes the store on the engine thread and returns once it exists (or failed: the arena could
  // not be allocated). `scheduler` and `metrics` (nullable) outlive the service.
  static absl::StatusOr<std::unique_ptr<MemoryService>> Start(BatchScheduler& scheduler, const MemoryOptions& options,
                                                              telemetry::Metrics* metrics);
  ~MemoryService() override;  // ReleaseStore()
  MemoryService(const MemoryService&) = delete;
  MemoryService& operator=(const MemoryService&) = delete;

  // New requests are answered UNAVAILABLE at once; queued ones as the drained scheduler runs
  // them (UNAVAILABLE too). Idempotent.
  void BeginShutdown();
  // Destroys the store (every space, the arena) on the engine thread and returns when that is
  // done; later requests are answered UNAVAILABLE. Call it after gRPC has stopped serving and
  // before the scheduler stops. Idempotent.
  void ReleaseStore();

  const std::string& backend() const { return backend_; }  // "cpu" or "cuda"

  grpc::ServerUnaryReactor* CreateSpace(grpc::CallbackServerContext* context, const brain::v1::CreateSpaceRequest* r,
                                        brain::v1::CreateSpaceResponse* out) override;
  grpc::ServerUnaryReactor* DeleteSpace(grpc::CallbackServerContext* context, const brain::v1::DeleteSpaceRequest* r,
                                        brain::v1::DeleteSpaceResponse* out) override;
  grpc::ServerUnaryReactor* ListSpaces(grpc::CallbackServerContext* context, const brain::v1::ListSpacesRequest* r,
                                       brain::v1::ListSpacesResponse* out) override;
  grpc::ServerUnaryReactor* Put(grpc::CallbackServerContext* context, const brain::v1::PutRequest* r,
                                brain::v1::PutResponse* out) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context, const brain::v1::GetRequest* r,
                                brain::v1::GetResponse* out) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* context, const brain::v1::DeleteRequest* r,
                                   brain::v1::DeleteResponse* out) override;
  grpc::ServerUnaryReactor* Bind(grpc::CallbackServerContext* context, const brain::v1::BindRequest* r,
                                 brain::v1::BindResponse* out) override;
  grpc::ServerUnaryReactor* Unbind(grpc::CallbackServerContext* context, const brain::v1::UnbindRequest* r,
                                   brain::v1::UnbindResponse* out) override;
  grpc::ServerUnaryReactor* Superpose(grpc::CallbackServerContext* context, const brain::v1::SuperposeRequest* r,
                                      brain::v1::SuperposeResponse* out) override;
  grpc::ServerUnaryReactor* Permute(grpc::CallbackServerContext* context, const brain::v1::PermuteRequest* r,
                                    brain::v1::PermuteResponse* out) override;
  grpc::ServerUnaryReactor* Power(grpc::CallbackServerContext* context, const brain::v1::PowerRequest* r,
                                  brain::v1::PowerResponse* out) override;
  grpc::ServerUnaryReactor* Similarity(grpc::CallbackServerContext* context, const brain::v1::SimilarityRequest* r,
                                       brain::v1::SimilarityResponse* out) override;
  grpc::ServerUnaryReactor* Cleanup(grpc::CallbackServerContext* context, const brain::v1::CleanupRequest* r,
                                    brain::v1::CleanupResponse* out) override;

 private:
  MemoryService(BatchScheduler& scheduler, const MemoryOptions& options);
  // Checks the request here, then runs `op` on the store as one engine-thread job and finishes
  // the call with its status.
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* Serve(grpc::CallbackServerContext* context, const Request* request, Response* response,
                                  absl::Status (MemoryStore::*op)(const Request&, Response*));

  BatchScheduler& scheduler_;
  const RequestLimits limits_;
  const AccessControl* const access_;
  std::string backend_;
  std::atomic<bool> shutting_down_{false};
  std::unique_ptr<MemoryStore> store_;  // engine thread only (made, used and reset there)
  absl::Mutex release_mu_;
  bool released_ ABSL_GUARDED_BY(release_mu_) = false;
};

}  // namespace fieldbrain::server::memory

// MemoryService: the gRPC callback service brain.v1.Memory (proto/brain/v1/memory.proto).
//
// Thread discipline: a gRPC thread only parses and checks a request by itself
// (request_checks.h), then hands the whole request to the service's own MemoryThread as ONE job,
// which runs it on the MemoryStore and finishes the call from its result. The store (its arena,
// the spaces and through them any GPU memory) is made, used and destroyed only on that thread,
// never on the robots' engine thread, so Memory work never holds up a robot's batch.
//
// Faults: a request whose device work fails is answered with that error alone; the service goes
// on. A sticky device error (the process's device context is lost, for the engine too) is
// reported once through MemoryOptions::on_device_lost, and every later request is answered
// UNAVAILABLE: the process must be restarted.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "brain/v1/memory.grpc.pb.h"
#include "server/access_control.h"
#include "server/call_metadata.h"
#include "server/memory/memory_limits.h"
#include "server/memory/memory_store.h"
#include "server/memory/memory_thread.h"
#include "telemetry/metrics.h"

namespace fieldbrain::server::memory {

class MemoryService final : public brain::v1::Memory::CallbackService {
 public:
  // Starts the Memory thread, makes the store there and returns once it exists (or failed: the
  // arena could not be allocated). `metrics` (nullable) outlives the service.
  static absl::StatusOr<std::unique_ptr<MemoryService>> Start(const MemoryOptions& options,
                                                              telemetry::Metrics* metrics);
  ~MemoryService() override;  // ReleaseStore()
  MemoryService(const MemoryService&) = delete;
  MemoryService& operator=(const MemoryService&) = delete;

  // New requests are answered UNAVAILABLE at once; queued ones still run. Idempotent.
  void BeginShutdown();
  // Destroys the store (every space, the arena) on the Memory thread, then ends that thread, and
  // returns when that is done; later requests are answered UNAVAILABLE. Idempotent.
  void ReleaseStore();

  const std::string& backend() const { return backend_; }  // "cpu" or "cuda"
  // Jobs the Memory thread ran (the store's creation, requests); for tests.
  int64_t jobs_run() const { return thread_.jobs_run(); }
  // OK, or the sticky device error that stopped the service.
  absl::Status device_lost() const;

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
  explicit MemoryService(const MemoryOptions& options);
  // Checks the request here, then runs `op` on the store as one Memory-thread job and finishes
  // the call with its status.
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* Serve(grpc::CallbackServerContext* context, const Request* request, Response* response,
                                  absl::Status (MemoryStore::*op)(const Request&, Response*));

  // Memory thread: after a failed request, asks the store whether the device context is lost.
  void CheckDevice();

  const RequestLimits limits_;
  const AccessControl* const access_;
  const std::function<void(const absl::Status&)> on_device_lost_;
  std::string backend_;
  int64_t shared_bytes_ = 0;  // the backend's shared context, counted once in the arena
  std::atomic<bool> shutting_down_{false};
  std::atomic<bool> lost_{false};
  mutable absl::Mutex lost_mu_;
  absl::Status lost_status_ ABSL_GUARDED_BY(lost_mu_);
  std::unique_ptr<MemoryStore> store_;  // Memory thread only (made, used and reset there)
  absl::Mutex release_mu_;
  bool released_ ABSL_GUARDED_BY(release_mu_) = false;
  MemoryThread thread_;  // last: started after, and ended before, everything it uses
};

}  // namespace fieldbrain::server::memory

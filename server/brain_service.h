// BrainService: the gRPC callback service brain.v1.Brain. Each Cycle stream gets a CycleStream
// reactor; GetServerInfo answers from fixed facts and live counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "brain/v1/brain.grpc.pb.h"
#include "server/call_metadata.h"
#include "server/frame_rate_limits.h"
#include "server/hello_admission.h"
#include "server/service_deps.h"
#include "server/stream_registry.h"
#include "telemetry/metrics.h"

namespace fieldbrain::server {

// What the service works with; all owned elsewhere and outliving the service.

// Cycle is a raw (bytes) method so that CycleStream parses requests itself (cycle_stream.h).
class BrainService final
    : public brain::v1::Brain::WithRawCallbackMethod_Cycle<
          brain::v1::Brain::WithCallbackMethod_GetServerInfo<brain::v1::Brain::Service>> {
 public:
  explicit BrainService(ServiceDeps deps);
  BrainService(const BrainService&) = delete;
  BrainService& operator=(const BrainService&) = delete;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Cycle(grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const brain::v1::GetServerInfoRequest* request,
                                          brain::v1::ServerInfo* info) override;

  // New streams end with UNAVAILABLE; live ones stop reading, get their remaining answers
  // written (pending frames come back SHUTTING_DOWN from the drained scheduler) and end with
  // UNAVAILABLE. Idempotent.
  void BeginShutdown();
  bool shutting_down() const { return shutting_down_.load(std::memory_order_acquire); }

  // The engine has latched `failure`: robots must go to another server. New streams and live
  // ones end with UNAVAILABLE (live ones after writing what they owe). Idempotent.
  void EngineFailed(const absl::Status& failure);
  // After a reload of the tokens file: live streams whose token no longer covers their robot end.
  void RecheckAccess();
  // Set (and fixed) once EngineFailed ran; what streams are ended with.
  std::optional<grpc::Status> engine_failure() const;

  const ServiceDeps& deps() const { return deps_; }
  StreamRegistry& registry() { return registry_; }
  // Every robot's frame-rate limit, kept across its streams.
  FrameRateLimits& rate_limits() { return rate_limits_; }
  // Where Hellos are admitted, off the gRPC threads.
  HelloAdmission& admission() { return admission_; }
  void FillFieldShape(brain::v1::FieldShape* field) const;

 private:
  const ServiceDeps deps_;
  StreamRegistry registry_;
  FrameRateLimits rate_limits_;
  HelloAdmission admission_;
  std::atomic<bool> shutting_down_{false};
  mutable absl::Mutex failure_mu_;
  std::optional<grpc::Status> engine_failure_ ABSL_GUARDED_BY(failure_mu_);
  std::atomic<StreamId> next_stream_id_{1};
};

// absl::Status -> grpc::Status (the codes are the same numbers).
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace fieldbrain::server

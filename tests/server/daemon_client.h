// The gRPC side of a brain-server under test: one plaintext channel to 127.0.0.1:port and the
// stubs the end-to-end tests call (Brain, Health, Memory through MemoryCalls).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "brain/v1/brain.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "memory_calls.h"

namespace fieldbrain::server::testing {

class DaemonClient {
 public:
  // nullopt when the channel is not connected within `timeout`.
  static std::optional<DaemonClient> Connect(int port, absl::Duration timeout) {
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
    if (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + timeout))) return std::nullopt;
    return DaemonClient(std::move(channel));
  }

  brain::v1::Brain::Stub* brain() { return brain_.get(); }
  MemoryCalls& memory() { return memory_; }

  // The health of `service` ("" for the whole server), or the gRPC error code of the check as a
  // negative number (NOT_FOUND for a service the process does not run).
  int Health(const std::string& service, absl::Duration deadline = absl::Seconds(20)) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status s = health_->Check(&ctx, request, &response);
    return s.ok() ? int(response.status()) : -int(s.error_code());
  }

 private:
  explicit DaemonClient(std::shared_ptr<grpc::Channel> channel)
      : channel_(std::move(channel)),
        brain_(brain::v1::Brain::NewStub(channel_)),
        health_(grpc::health::v1::Health::NewStub(channel_)),
        memory_(channel_) {}

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<brain::v1::Brain::Stub> brain_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
  MemoryCalls memory_;
};

}  // namespace fieldbrain::server::testing

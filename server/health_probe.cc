#include "server/health_probe.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace fieldbrain::server {

absl::Status ProbeHealth(const std::string& target, absl::Duration deadline) {
  using grpc::health::v1::HealthCheckResponse;
  std::unique_ptr<grpc::health::v1::Health::Stub> health =
      grpc::health::v1::Health::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  grpc::health::v1::HealthCheckRequest request;  // service "": the server as a whole
  HealthCheckResponse response;
  const grpc::Status status = health->Check(&context, request, &response);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat("health check of ", target, " failed: ", status.error_message()));
  }
  if (response.status() == HealthCheckResponse::SERVING) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat(target, " is ", HealthCheckResponse::ServingStatus_Name(response.status())));
}

}  // namespace fieldbrain::server

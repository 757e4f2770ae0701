#include "server/call_metadata.h"

#include <grpcpp/server_context.h>

namespace fieldbrain::server {

std::string AuthorizationOf(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::string();
  return std::string(it->second.data(), it->second.size());
}

std::optional<std::string> RobotIdHeaderOf(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("x-robot-id");
  if (it == metadata.end()) return std::nullopt;
  return std::string(it->second.data(), it->second.size());
}

}  // namespace fieldbrain::server

// What the server reads from a call's metadata (kept apart from access_control.h, which has no
// gRPC in it, so that the tokens parser can be fuzzed on its own).
#pragma once

#include <optional>
#include <string>

namespace grpc {
class ServerContextBase;
}

namespace fieldbrain::server {

// The call's "authorization" metadata value ("Bearer <token>"), empty when absent.
std::string AuthorizationOf(const grpc::ServerContextBase& context);

// The call's "x-robot-id" metadata value (the key a proxy routes robots by), nullopt when absent.
std::optional<std::string> RobotIdHeaderOf(const grpc::ServerContextBase& context);

}  // namespace fieldbrain::server

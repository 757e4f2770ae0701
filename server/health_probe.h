// The daemon's own health check, for a container's HEALTHCHECK: `brain-server
// --health_probe=127.0.0.1:50051` asks the standard gRPC health service of a running daemon
// whether it serves, so the image needs no probe tool of its own. Plaintext only: a daemon that
// serves TLS is probed by its orchestrator (Kubernetes' gRPC probes) or a client with its CA.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace fieldbrain::server {

// OK when the server at `target` answers SERVING for the whole server (service ""); UNAVAILABLE
// naming the status it answered otherwise, or the call's own error (refused, deadline passed).
absl::Status ProbeHealth(const std::string& target, absl::Duration deadline);

}  // namespace fieldbrain::server

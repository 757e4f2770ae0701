// Command-line flags of brain-server (Abseil flags; `brain-server --help` documents each).
#pragma once

#include <string>

#include "server/server_config.h"

namespace fieldbrain::server {

// The configuration the parsed flags describe (not yet validated).
ServerConfig ConfigFromFlags();

// --health_probe: when not empty, brain-server only probes the daemon at this address
// (health_probe.h) and exits.
std::string HealthProbeTargetFromFlags();

}  // namespace fieldbrain::server

// Command-line flags of brain-server (Abseil flags; `brain-server --help` documents each).
#pragma once

#include "server/server_config.h"

namespace fieldbrain::server {

// The configuration the parsed flags describe (not yet validated).
ServerConfig ConfigFromFlags();

}  // namespace fieldbrain::server

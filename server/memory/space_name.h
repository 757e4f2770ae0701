// The one rule for a Memory space's name (apart, so the request checks need nothing else).
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace fieldbrain::server::memory {

// INVALID_ARGUMENT unless `name` is 1-64 bytes of [A-Za-z0-9._-]: safe in logs, messages and
// file names, whatever a client sends.
absl::Status CheckSpaceName(absl::string_view name);

}  // namespace fieldbrain::server::memory

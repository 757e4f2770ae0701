// Reading PEM files (certificates, keys, CA bundles) for TLS, with errors that name the flag.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fieldbrain {

// The file's text. Refuses, naming `flag` and `path`: a file that cannot be read, an empty one,
// or one without a "-----BEGIN " line (not PEM).
absl::StatusOr<std::string> ReadPemFile(const std::string& path, absl::string_view flag);

}  // namespace fieldbrain

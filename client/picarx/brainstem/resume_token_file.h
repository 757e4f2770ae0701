// Keeping a robot's resume token across restarts of its program: the server refuses a Hello for a
// kept brain without its token (FAILED_PRECONDITION), so a brainstem that systemd restarts must
// present the token of its last Welcome to get its brain back. The file holds the token alone, is
// readable by its owner only (0600) and is replaced atomically.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fieldbrain::picarx {

// The token in `path`; nullopt when there is no file. An error when it cannot be read or does not
// hold a plausible token (1-128 printable characters).
absl::StatusOr<std::optional<std::string>> ReadResumeToken(const std::string& path);

// Writes `token` to a temporary file beside `path` (0600), fsyncs it and renames it over `path`.
absl::Status WriteResumeToken(const std::string& path, const std::string& token);

}  // namespace fieldbrain::picarx

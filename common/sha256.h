// SHA-256 in one call, for what is hashed now and then (tokens, robot ids, checkpoint files).
// The Memory service's per-vector digests keep their reusable context (server/memory/vector_digest.h).
#pragma once

#include <array>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace fieldbrain {

using Sha256Digest = std::array<uint8_t, 32>;

// SHA-256 of `a` followed by `b`. Should OpenSSL fail, all bytes are 0xff: a value no real input
// hashes to, so whatever it is compared with does not match.
Sha256Digest Sha256(absl::string_view a, absl::string_view b = {});

}  // namespace fieldbrain

#include "server/memory/space_name.h"

#include "absl/strings/str_cat.h"
#include "server/memory/memory_limits.h"

namespace fieldbrain::server::memory {

absl::Status CheckSpaceName(absl::string_view name) {
  if (name.empty() || name.size() > size_t(kMaxSpaceNameBytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a space name has 1-", kMaxSpaceNameBytes, " bytes; this one has ", name.size()));
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "space name byte ", i, " (code ", int(static_cast<unsigned char>(c)), ") is not one of [A-Za-z0-9._-]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace fieldbrain::server::memory

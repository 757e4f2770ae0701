// Arbitrary bytes as a tokens file: the parser must refuse or accept, never crash, and a table
// it accepts must hold only 32-byte hashes.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "server/access_control.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<fieldbrain::server::TokenTable> table = fieldbrain::server::ParseTokensFile(text);
  if (!table.ok()) return 0;
  for (const auto& [digest, grant] : *table) {
    if (digest.size() != 32) __builtin_trap();
    for (const std::string& p : grant.robots) (void)fieldbrain::server::PatternCovers(p, text.substr(0, 16));
  }
  return 0;
}

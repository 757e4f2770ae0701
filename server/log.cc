#include "server/log.h"

#include <cstdio>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace fieldbrain::server {

void LogLine(LogLevel level, std::string_view message) {
  const char tag = level == LogLevel::kInfo ? 'I' : level == LogLevel::kWarning ? 'W' : 'E';
  const std::string when =
      absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone());
  // One fprintf per record so lines from different threads do not interleave.
  std::fprintf(stderr, "%s brain-server %c %.*s\n", when.c_str(), tag,
               static_cast<int>(message.size()), message.data());
}

}  // namespace fieldbrain::server

// One-line log records on stderr ("2024-01-01T12:00:00.123456Z brain-server I message"): the
// Debian 12 Abseil (20220623) has no absl/log yet, and the daemon logs little.
#pragma once

#include <string_view>

#include "absl/strings/str_cat.h"

namespace fieldbrain::server {

enum class LogLevel { kInfo, kWarning, kError };

void LogLine(LogLevel level, std::string_view message);

template <typename... Args>
void LogInfo(const Args&... args) {
  LogLine(LogLevel::kInfo, absl::StrCat(args...));
}
template <typename... Args>
void LogWarning(const Args&... args) {
  LogLine(LogLevel::kWarning, absl::StrCat(args...));
}
template <typename... Args>
void LogError(const Args&... args) {
  LogLine(LogLevel::kError, absl::StrCat(args...));
}

}  // namespace fieldbrain::server

#include "common/program_usage.h"

#include <algorithm>
#include <utility>

#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"

namespace fieldbrain {
namespace {

std::string BaseName(absl::string_view path) {
  const size_t slash = path.find_last_of('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace

void SetProgramUsage(absl::string_view program, absl::string_view usage, std::vector<std::string> flag_files) {
  absl::SetProgramUsageMessage(usage);  // absl prints "<program>: " before it
  absl::FlagsUsageConfig config;
  // absl hands contains_*_flags the normalised name, so both see base names.
  config.normalize_filename = [](absl::string_view path) { return BaseName(path); };
  config.contains_help_flags = [files = std::move(flag_files)](absl::string_view name) {
    return std::find(files.begin(), files.end(), BaseName(name)) != files.end();
  };
  config.contains_helpshort_flags = config.contains_help_flags;
  config.version_string = [version = absl::StrCat(program, " ", FIELDBRAIN_VERSION, "\n")] { return version; };
  absl::SetFlagsUsageConfig(std::move(config));
}

}  // namespace fieldbrain

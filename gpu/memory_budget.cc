#include "gpu/memory_budget.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fieldbrain {
namespace {

std::optional<int64_t> MeminfoBytes(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0 || line.size() <= key.size() || line[key.size()] != ':') continue;
    std::istringstream fields(line.substr(key.size() + 1));
    int64_t kib = 0;
    if (fields >> kib) return kib * 1024;  // the kernel writes "kB" and means KiB
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::string FormatBytes(int64_t bytes) {
  constexpr double kMiB = 1024.0 * 1024.0, kGiB = kMiB * 1024.0;
  if (bytes >= int64_t(kGiB)) return absl::StrFormat("%.2f GiB", double(bytes) / kGiB);
  if (bytes >= int64_t(kMiB)) return absl::StrFormat("%.1f MiB", double(bytes) / kMiB);
  return absl::StrCat(bytes, " B");
}

std::optional<int64_t> HostMemoryAvailable() { return MeminfoBytes("MemAvailable"); }
std::optional<int64_t> HostMemoryTotal() { return MeminfoBytes("MemTotal"); }

std::string DescribePool(const EngineConfig& config) {
  return absl::StrCat("the brain pool (", config.max_robots + config.max_batch, " fields for ", config.max_robots,
                      " robots and batches of ", config.max_batch, ")");
}

absl::Status CheckMemoryFits(absl::string_view what, int64_t needed, absl::string_view where,
                             int64_t available) {
  if (needed <= available) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(what, " need ", FormatBytes(needed), ", but ", where,
                                                   " has only ", FormatBytes(available), " free"));
}

}  // namespace fieldbrain

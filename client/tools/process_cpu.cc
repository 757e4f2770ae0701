#include "client/tools/process_cpu.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace fieldbrain::sim {

absl::StatusOr<ProcessCpu> ReadProcessCpu(pid_t pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/stat");
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("no process ", pid, " (", path, " unreadable)"));
  std::stringstream all;
  all << in.rdbuf();
  const std::string line = all.str();
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return absl::FailedPreconditionError(absl::StrCat(path, ": no command field"));
  const std::vector<std::string> fields = absl::StrSplit(line.substr(close + 2), ' ', absl::SkipEmpty());
  // From the state (field 3 of proc(5)): utime is field 14, stime field 15.
  constexpr size_t kUtime = 14 - 3, kStime = 15 - 3;
  long long utime = 0, stime = 0;
  if (fields.size() <= kStime || !absl::SimpleAtoi(fields[kUtime], &utime) || !absl::SimpleAtoi(fields[kStime], &stime)) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": unexpected format"));
  }
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  return ProcessCpu{.user_s = double(utime) / tick, .system_s = double(stime) / tick};
}

}  // namespace fieldbrain::sim

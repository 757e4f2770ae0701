// CPU time a process has used, from /proc/<pid>/stat (Linux): brain-load's measure of the
// daemon's cost per frame when both run on one machine.
#pragma once

#include <sys/types.h>

#include "absl/status/statusor.h"

namespace fieldbrain::sim {

struct ProcessCpu {
  double user_s = 0;
  double system_s = 0;
};

// NotFound when the process does not exist; FailedPrecondition when its stat line is unreadable.
absl::StatusOr<ProcessCpu> ReadProcessCpu(pid_t pid);

}  // namespace fieldbrain::sim

// Whether an engine's memory fits where it is going, checked once at start: a pool that does not
// fit is refused with the figures, not discovered later by the out-of-memory killer or a failed
// allocation in the middle of serving.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "gpu/engine.h"

namespace fieldbrain {

// "2.50 GiB", "512.0 MiB", "4096 B": for messages and logs.
std::string FormatBytes(int64_t bytes);

// MemAvailable of /proc/meminfo: what the kernel can hand out without swapping; nullopt when it
// cannot be read.
std::optional<int64_t> HostMemoryAvailable();
// MemTotal of /proc/meminfo.
std::optional<int64_t> HostMemoryTotal();

// "the brain pool (320 fields for 256 robots and batches of 64)": what an engine's pool holds.
std::string DescribePool(const EngineConfig& config);

// RESOURCE_EXHAUSTED naming what needs how much and what `where` has, when needed > available;
// OK otherwise. `what` lists the parts, e.g. "the brain pool (320 fields) and workspaces".
absl::Status CheckMemoryFits(absl::string_view what, int64_t needed, absl::string_view where,
                             int64_t available);

}  // namespace fieldbrain

#include "server/server_config.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "gpu/engine.h"
#include "gpu/model/field_shape.h"
#include "server/device_fault_hook.h"

namespace fieldbrain::server {
namespace {

absl::Status CheckRange(const char* flag, int value, int lo, int hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, " is out of range [", lo, ", ", hi, "]"));
}

// "host:port" with a non-empty host and a numeric port in [0, 65535].
absl::Status CheckAddress(const char* flag, const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=\"", address, "\" is not host:port"));
  }
  int port = 0;
  for (char c : address.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, "=\"", address, "\" has a bad port"));
    }
    port = port * 10 + (c - '0');
  }
  if (port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=\"", address, "\" has a bad port"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FieldShape> FieldShapeFor(const ServerConfig& c) {
  if (c.field == "default") return FieldShape::Default();
  if (c.field == "small") return FieldShape::Small();
  if (c.field == "tiny") return FieldShape::Tiny();
  if (c.field == "auto") {
    const bool cuda = c.engine == "cuda" || (c.engine == "auto" && CudaEngineAvailable());
    return cuda ? FieldShape::Default() : FieldShape::Small();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--field=\"", c.field, "\" is not one of: auto, default, small, tiny"));
}

bool ServesBrain(const ServerConfig& c) { return c.serve == "both" || c.serve == "brain"; }
bool ServesMemory(const ServerConfig& c) {
  return (c.serve == "both" || c.serve == "memory") && c.memory_arena_bytes > 0;
}

absl::Status ValidateConfig(const ServerConfig& c) {
  if (absl::Status s = CheckAddress("listen", c.listen); !s.ok()) return s;
  if (c.serve != "both" && c.serve != "brain" && c.serve != "memory") {
    return absl::InvalidArgumentError(absl::StrCat("--serve=\"", c.serve, "\" is not one of: both, brain, memory"));
  }
  if (c.serve == "memory" && c.memory_arena_bytes == 0) {
    return absl::InvalidArgumentError("--serve=memory needs a Memory arena: --memory_arena_bytes must not be 0");
  }
  if (!c.test_inject_device_fault.empty()) {
    if (absl::StatusOr<DeviceFaultHook> hook = ParseDeviceFaultHook(c.test_inject_device_fault); !hook.ok()) {
      return absl::InvalidArgumentError(hook.status().message());
    }
  }
  if (c.engine != "auto" && c.engine != "cpu" && c.engine != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--engine=\"", c.engine, "\" is not one of: auto, cpu, cuda"));
  }
  if (absl::StatusOr<FieldShape> shape = FieldShapeFor(c); !shape.ok()) {
    return shape.status();
  }
  if (absl::Status s = CheckRange("max_robots", c.max_robots, 1, kMaxRobotsLimit); !s.ok()) return s;
  if (absl::Status s = CheckRange("max_batch", c.max_batch, 0, c.max_robots); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.message(), " (0 means min(--max_robots, ", kDefaultMaxBatch,
                     "); a batch cannot exceed the slots)"));
  }
  if (absl::Status s = CheckRange("batch_window_us", c.batch_window_us, 0, kMaxBatchWindowUs);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckRange("max_message_bytes", c.max_message_bytes, kMinMessageBytes,
                                  kMaxMessageBytesLimit);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckRange("idle_keep_s", c.idle_keep_s, 0, kMaxIdleKeepS); !s.ok()) return s;
  if (absl::Status s = CheckRange("hello_timeout_s", c.hello_timeout_s, 1, kMaxHelloTimeoutS); !s.ok()) {
    return s;
  }
  if (const double t = c.stream_idle_timeout_s;
      !(t == 0 || (t >= kMinStreamIdleTimeoutS && t <= kMaxStreamIdleTimeoutS))) {
    return absl::InvalidArgumentError(absl::StrCat("--stream_idle_timeout_s=", t, " must be 0 (never) or in [",
                                                   kMinStreamIdleTimeoutS, ", ", kMaxStreamIdleTimeoutS, "]"));
  }
  if (absl::Status s = CheckRange("max_frame_hz", c.max_frame_hz, 0, kMaxFrameHz); !s.ok()) return s;
  if (absl::Status s = CheckRange("checkpoint_every_cycles", c.checkpoint_every_cycles, 0, 100000000); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckRange("frame_burst", c.frame_burst, 1, kMaxFrameHz); !s.ok()) return s;
  if (absl::Status s = CheckRange("shutdown_deadline_s", c.shutdown_deadline_s, 0,
                                  kMaxShutdownDeadlineS);
      !s.ok()) {
    return s;
  }
  if (!c.metrics_listen.empty()) {
    if (absl::Status s = CheckAddress("metrics_listen", c.metrics_listen); !s.ok()) return s;
  }
  if (absl::Status s = CheckRange("threads", c.threads, 0, kMaxThreads); !s.ok()) return s;
  if (c.memory_arena_bytes != 0 &&
      (c.memory_arena_bytes < kMinMemoryArenaBytes || c.memory_arena_bytes > kMaxMemoryArenaBytes)) {
    return absl::InvalidArgumentError(absl::StrCat("--memory_arena_bytes=", c.memory_arena_bytes,
                                                   " must be 0 (no Memory service) or in [", kMinMemoryArenaBytes,
                                                   ", ", kMaxMemoryArenaBytes, "]"));
  }
  if (absl::Status s = CheckRange("memory_max_request_vectors", c.memory_max_request_vectors, 1,
                                  kMaxMemoryRequestVectors);
      !s.ok()) {
    return s;
  }
  if (c.test_fail_engine_after_batches < 0) {
    return absl::InvalidArgumentError("--test_fail_engine_after_batches must be 0 (off) or positive");
  }
  if (c.test_fail_engine_after_batches > 0 && c.engine != "cpu") {
    return absl::InvalidArgumentError("--test_fail_engine_after_batches works with --engine=cpu only");
  }
  return absl::OkStatus();
}

int EffectiveMaxBatch(const ServerConfig& c) {
  return c.max_batch > 0 ? c.max_batch : std::min(c.max_robots, kDefaultMaxBatch);
}

EngineConfig MakeEngineConfig(const ServerConfig& c) {
  EngineConfig e;
  e.shape = FieldShapeFor(c).value_or(FieldShape::Default());
  e.max_robots = c.max_robots;
  e.max_batch = EffectiveMaxBatch(c);
  e.threads = c.threads;
  return e;
}

brain::v1::ServerLimits MakeLimits(const ServerConfig& c) {
  brain::v1::ServerLimits limits;
  limits.set_max_sensors(kMaxSensors);
  limits.set_max_motors(kMaxMotors);
  limits.set_max_message_bytes(static_cast<uint32_t>(c.max_message_bytes));
  limits.set_max_robots(static_cast<uint32_t>(c.max_robots));
  limits.set_stream_idle_timeout_ms(static_cast<uint32_t>(std::lround(c.stream_idle_timeout_s * 1000)));
  return limits;
}

}  // namespace fieldbrain::server

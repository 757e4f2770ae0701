// The daemon's configuration as a plain struct (filled from flags in server_flags.cc, or directly
// by tests), its validation, and what the engine and the wire limits derive from it.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "brain/v1/brain.pb.h"
#include "gpu/engine.h"

namespace fieldbrain::server {

inline constexpr int64_t kDefaultMemoryArenaBytes = int64_t(256) << 20;
inline constexpr int kDefaultMemoryMaxRequestVectors = 256;

struct ServerConfig {
  std::string listen = "127.0.0.1:50051";
  // Which services this process runs: "both" (robots' brains and the Memory service: the
  // one-command demo), "brain" (no Memory service) or "memory" (no engine, no robot sessions).
  // docs/deploying.md says when to run them apart.
  std::string serve = "both";
  std::string engine = "auto";      // auto | cpu | cuda
  std::string field = "auto";       // auto | default | small | tiny
  int max_robots = 64;
  int max_batch = 0;                // 0 = min(max_robots, kDefaultMaxBatch)
  int batch_window_us = 200;
  int max_message_bytes = 16 * 1024;
  int idle_keep_s = 60;
  int hello_timeout_s = 10;         // a stream must say Hello within this, or it is ended
  // A running stream that sends no frame for this long is ended (its brain kept): behind a proxy
  // HTTP/2 keepalive reaches only the proxy, so silence is the one sign of a vanished robot.
  // 0 = never.
  double stream_idle_timeout_s = 1.0;
  // Per-robot frame-rate limit (token bucket): max_frame_hz on average after a burst of
  // frame_burst; frames beyond it are answered RATE_LIMITED. 0 = no limit.
  int max_frame_hz = 1000;
  int frame_burst = 200;
  int shutdown_deadline_s = 5;
  std::string metrics_listen;       // empty = no metrics endpoint
  // TLS (server_credentials.h): cert and key PEM files, and a client CA for mutual TLS.
  std::string tls_cert, tls_key, tls_client_ca;
  // Bearer tokens (access_control.h); empty = open server. Re-read on SIGHUP.
  std::string tokens_file;
  // Checkpoints (server/checkpoint/checkpointer.h): a directory (empty = none) and how often per
  // robot, in its own cycles, besides on disconnect, idle expiry and shutdown.
  std::string checkpoint_dir;
  int checkpoint_every_cycles = 500;
  int threads = 0;                  // CPU engine threads; 0 = all cores
  // The Memory service (proto/brain/v1/memory.proto): the bytes its spaces may take in all
  // (0 = no Memory service), and the most vectors one request may name or make.
  int64_t memory_arena_bytes = kDefaultMemoryArenaBytes;
  int memory_max_request_vectors = kDefaultMemoryMaxRequestVectors;
  // Testing only (--test_fail_engine_after_batches): the CPU engine fails after this many
  // batches, as a GPU would after a device error; 0 = never.
  int64_t test_fail_engine_after_batches = 0;
  // Testing only (--test_inject_device_fault, emulation build): a fault armed once the daemon
  // serves (server/device_fault_hook.h); empty = none.
  std::string test_inject_device_fault;
};

// A daemon that stops because its device context was lost (a sticky device error: the process
// must restart) exits with this status, after health NOT_SERVING and every stream ended.
inline constexpr int kExitDeviceLost = 3;

bool ServesBrain(const ServerConfig& config);   // serve is "both" or "brain"
bool ServesMemory(const ServerConfig& config);  // serve is "both" or "memory", with an arena

// Batches larger than this rarely form (robots' ticks are spread over the control period) and
// each batch row costs a spare field: 64 keeps 256 default-field robots at 2.5 GiB of fields.
inline constexpr int kDefaultMaxBatch = 64;

// Accepted ranges, shared by validation and --help texts.
inline constexpr int kMaxRobotsLimit = 4096;
inline constexpr int kMaxBatchWindowUs = 1'000'000;
inline constexpr int kMinMessageBytes = 1024;
inline constexpr int kMaxMessageBytesLimit = 4 * 1024 * 1024;
inline constexpr int kMaxIdleKeepS = 7 * 24 * 3600;
inline constexpr int kMaxHelloTimeoutS = 3600;
inline constexpr double kMinStreamIdleTimeoutS = 0.05;
inline constexpr double kMaxStreamIdleTimeoutS = 3600;
inline constexpr int kMaxFrameHz = 100000;
inline constexpr int kMaxShutdownDeadlineS = 600;
inline constexpr int kMaxThreads = 1024;
inline constexpr int64_t kMinMemoryArenaBytes = int64_t(1) << 20;   // or 0: no Memory service
inline constexpr int64_t kMaxMemoryArenaBytes = int64_t(1) << 40;
inline constexpr int kMaxMemoryRequestVectors = 65536;

// InvalidArgument naming the first bad setting and what it accepts.
absl::Status ValidateConfig(const ServerConfig& config);

// The field shape --field names: "default", "small", or "auto" (the default field where the CUDA
// engine will run, the small one on the CPU engine, as DESIGN.md section 4 intends).
absl::StatusOr<FieldShape> FieldShapeFor(const ServerConfig& config);

// max_batch with 0 resolved to min(max_robots, kDefaultMaxBatch).
int EffectiveMaxBatch(const ServerConfig& config);

// The engine's configuration (config must be valid).
EngineConfig MakeEngineConfig(const ServerConfig& config);

// What the Welcome and ServerInfo advertise.
brain::v1::ServerLimits MakeLimits(const ServerConfig& config);

}  // namespace fieldbrain::server

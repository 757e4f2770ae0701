// BrainServer: the daemon assembled — metrics, the engine thread (BatchScheduler), the session
// table, the gRPC services (Brain, and Memory unless --memory_arena_bytes=0; --serve picks one or
// both) with health checking per service and reflection, the optional /metrics endpoint and the
// idle-session reaper. main.cc runs one; the in-process tests run one on a loopback port.
//
// A lost device context (a sticky device error, found by the Memory service or latched by the
// CUDA engine) poisons every service of the process: health goes NOT_SERVING for all, every robot
// stream ends UNAVAILABLE saying so (robots resume from their checkpoints on another server), and
// device_lost() tells main.cc to shut down and exit with kExitDeviceLost.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "server/batch_scheduler.h"
#include "server/brain_service.h"
#include "server/checkpoint/checkpointer.h"
#include "server/memory/memory_service.h"
#include "server/server_config.h"
#include "telemetry/metrics.h"
#include "telemetry/metrics_exposer.h"

namespace fieldbrain::server {

// HTTP/2 keepalive. A robot whose Wi-Fi drops without closing TCP would otherwise keep its stream,
// and so its robot id, live for as long as TCP takes to notice (hours when nothing is written),
// and every reconnect would be refused ALREADY_EXISTS. The server pings a connection after
// kKeepaliveTimeMs and closes it when the ack is kKeepaliveTimeoutMs late, so a robot that
// vanishes frees its id within about 15 s. Robots ping too (BrainClient every 10 s, to notice a
// dead server): pings as often as every kMinClientPingIntervalMs are accepted, with or without
// streams or data, and never counted as abuse.
inline constexpr int kKeepaliveTimeMs = 10'000;
inline constexpr int kKeepaliveTimeoutMs = 5'000;
inline constexpr int kMinClientPingIntervalMs = 5'000;

class BrainServer {
 public:
  // Validates `config`, makes the engine and starts serving. An error names what failed
  // (bad flag, engine, listen address, metrics address).
  static absl::StatusOr<std::unique_ptr<BrainServer>> Start(const ServerConfig& config,
                                                            std::string version);
  ~BrainServer();  // Shutdown()
  BrainServer(const BrainServer&) = delete;
  BrainServer& operator=(const BrainServer&) = delete;

  // The graceful stop of DESIGN.md section 6: health NOT_SERVING, new streams refused with
  // UNAVAILABLE, the batch in flight finished, pending frames answered SHUTTING_DOWN, streams
  // ended (within shutdown_deadline), gRPC stopped, engine thread stopped. Idempotent.
  void Shutdown();

  int port() const { return port_; }                 // the bound gRPC port
  int metrics_port() const;                          // 0 when --metrics_listen is empty
  bool serves_brain() const { return scheduler_ != nullptr; }  // false for --serve=memory
  // Only when serves_brain().
  const EngineFacts& facts() const { return scheduler_->facts(); }
  const ServerConfig& config() const { return config_; }
  telemetry::Metrics& metrics() { return *metrics_; }
  BrainDirectory& directory() { return *directory_; }  // only when serves_brain()
  BatchScheduler& scheduler() { return *scheduler_; }  // only when serves_brain()
  memory::MemoryService* memory_service() { return memory_.get(); }  // null when not served
  Checkpointer* checkpointer() { return checkpointer_.get(); }      // null without --checkpoint_dir
  int open_streams() const;                          // Cycle streams not yet ended
  // Set once the device context was lost: the process must stop (exit kExitDeviceLost).
  std::optional<absl::Status> device_lost() const;
  // Re-reads --tokens_file (on SIGHUP). Live streams whose token still covers their robot keep
  // running; the others end (UNAUTHENTICATED, or PERMISSION_DENIED for a token that no longer
  // names the robot). A file that does not parse is refused and the tokens in use stay. No
  // effect without --tokens_file.
  absl::Status ReloadTokens();

 private:
  explicit BrainServer(const ServerConfig& config);
  // The robots' half: brain directory, checkpointer, engine thread, the Brain service.
  absl::Status StartBrain(const std::string& version);
  // --serve=memory: the Memory service's backend by --engine, a CUDA one proven by its start-up
  // HRR round trip (server/engine_choice.h); said in the log and in brain_engine_info.
  absl::StatusOr<std::string> ChooseMemoryBackend();
  void ReapIdle();
  // The engine latched a failure (engine thread): health NOT_SERVING, every stream ended; on the
  // CUDA engine the device context is lost too (OnDeviceLost).
  void OnEngineFailure(const absl::Status& failure);
  // A sticky device error (Memory thread or engine thread): see the class comment.
  void OnDeviceLost(const absl::Status& lost);
  void SetHealth(bool serving);
  // Stops what Start made so far, after Start failed.
  void StopEarly();

  const ServerConfig config_;
  std::unique_ptr<telemetry::Metrics> metrics_;
  AccessControl access_;  // before the services that read it
  // The directory outlives the checkpointer (whose last writes report to it); both outlive the
  // scheduler, which hands the checkpointer snapshots.
  std::unique_ptr<BrainDirectory> directory_;
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<BatchScheduler> scheduler_;
  std::unique_ptr<BrainService> service_;
  std::unique_ptr<memory::MemoryService> memory_;  // after scheduler_: its store lives on that thread
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<telemetry::MetricsExposer> exposer_;
  absl::Notification stop_reaper_;
  std::thread reaper_;
  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
  int port_ = 0;
  mutable absl::Mutex lost_mu_;
  std::optional<absl::Status> device_lost_ ABSL_GUARDED_BY(lost_mu_);
};

}  // namespace fieldbrain::server

// BrainServer: the daemon assembled — metrics, the engine thread (BatchScheduler), the session
// table, the gRPC services (Brain, and Memory unless --memory_arena_bytes=0) with health checking
// and reflection, the optional /metrics endpoint and the idle-session reaper. main.cc runs one; the in-process tests run one on a loopback port.
#pragma once

#include <memory>
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
#include "server/session_table.h"
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
  const EngineFacts& facts() const { return scheduler_->facts(); }
  const ServerConfig& config() const { return config_; }
  telemetry::Metrics& metrics() { return *metrics_; }
  SessionTable& sessions() { return *sessions_; }
  BatchScheduler& scheduler() { return *scheduler_; }
  memory::MemoryService* memory_service() { return memory_.get(); }  // null when disabled
  Checkpointer* checkpointer() { return checkpointer_.get(); }      // null without --checkpoint_dir
  int open_streams() const;                          // Cycle streams not yet ended
  // Re-reads --tokens_file (on SIGHUP). Live streams keep running; a file that does not parse is
  // refused and the tokens in use stay. No effect without --tokens_file.
  absl::Status ReloadTokens();

 private:
  explicit BrainServer(const ServerConfig& config);
  void ReapIdle();
  // The engine latched a failure (engine thread): health NOT_SERVING, every stream ended.
  void OnEngineFailure(const absl::Status& failure);

  const ServerConfig config_;
  std::unique_ptr<telemetry::Metrics> metrics_;
  AccessControl access_;  // before the services that read it
  std::unique_ptr<Checkpointer> checkpointer_;  // before the scheduler, which hands it snapshots
  std::unique_ptr<BatchScheduler> scheduler_;
  std::unique_ptr<SessionTable> sessions_;
  std::unique_ptr<BrainService> service_;
  std::unique_ptr<memory::MemoryService> memory_;  // after scheduler_: its store lives on that thread
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<telemetry::MetricsExposer> exposer_;
  absl::Notification stop_reaper_;
  std::thread reaper_;
  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
  int port_ = 0;
};

}  // namespace fieldbrain::server

#include "server/brain_server.h"

#include <algorithm>
#include <chrono>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gpu/cpu_arch.h"
#include "server/checkpoint/checkpoint_files.h"
#include "server/cycle_stream.h"
#include "server/device_fault_hook.h"
#include "server/log.h"
#include "server/server_credentials.h"

namespace fieldbrain::server {
namespace {

constexpr char kBrainServiceName[] = "brain.v1.Brain";
constexpr char kMemoryServiceName[] = "brain.v1.Memory";

}  // namespace

absl::StatusOr<std::unique_ptr<BrainServer>> BrainServer::Start(const ServerConfig& config,
                                                                 std::string version) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  auto server = absl::WrapUnique(new BrainServer(config));
  server->metrics_ = std::make_unique<telemetry::Metrics>();
  if (!config.tokens_file.empty()) {
    if (absl::Status s = server->access_.Load(config.tokens_file); !s.ok()) return s;
  }
  if (ServesBrain(config)) {
    if (absl::Status s = server->StartBrain(version); !s.ok()) return s;
  }

  if (ServesMemory(config)) {
    memory::MemoryOptions memory_options;
    memory_options.arena_bytes = config.memory_arena_bytes;
    memory_options.max_request_vectors = config.memory_max_request_vectors;
    if (ServesBrain(config)) {
      memory_options.engine_kind = server->facts().kind;  // the engine's self-check covered the HRR too
    } else {
      absl::StatusOr<std::string> backend = server->ChooseMemoryBackend();
      if (!backend.ok()) {
        server->StopEarly();
        return backend.status();
      }
      memory_options.engine_kind = *std::move(backend);
    }
    memory_options.access = &server->access_;
    // Runs on the Memory thread, only once requests run, by which time server_ is set.
    memory_options.on_device_lost = [srv = server.get()](const absl::Status& lost) { srv->OnDeviceLost(lost); };
    absl::StatusOr<std::unique_ptr<memory::MemoryService>> memory =
        memory::MemoryService::Start(memory_options, server->metrics_.get());
    if (!memory.ok()) {
      server->StopEarly();
      return absl::Status(memory.status().code(), absl::StrCat("Memory service: ", memory.status().message()));
    }
    server->memory_ = *std::move(memory);
  }

  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(TlsFiles{config.tls_cert, config.tls_key, config.tls_client_ca});
  if (!credentials.ok()) {
    server->StopEarly();
    return credentials.status();
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.listen, *credentials, &server->port_);
  // A service this process does not run is answered UNIMPLEMENTED by gRPC itself.
  if (server->service_ != nullptr) builder.RegisterService(server->service_.get());
  if (server->memory_ != nullptr) builder.RegisterService(server->memory_.get());
  // Larger requests end their stream with RESOURCE_EXHAUSTED inside gRPC.
  builder.SetMaxReceiveMessageSize(config.max_message_bytes);
  // Silent robots free their id (see kKeepaliveTimeMs), robots' own pings are welcome.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             kMinClientPingIntervalMs);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);  // 0: never GOAWAY for pings
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    server->StopEarly();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.listen));
  }
  // Per service: only those this process runs are known to the health service.
  server->SetHealth(true);

  if (!config.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<telemetry::MetricsExposer>> exposer =
        telemetry::MetricsExposer::Start(config.metrics_listen, server->metrics_->registry());
    if (!exposer.ok()) {
      server->Shutdown();
      return exposer.status();
    }
    server->exposer_ = *std::move(exposer);
  }
  if (server->service_ != nullptr) server->reaper_ = std::thread(&BrainServer::ReapIdle, server.get());
  if (!config.test_inject_device_fault.empty()) {
    absl::StatusOr<DeviceFaultHook> hook = ParseDeviceFaultHook(config.test_inject_device_fault);
    absl::Status armed = hook.ok() ? ArmDeviceFault(*hook) : hook.status();
    if (!armed.ok()) {
      server->Shutdown();
      return armed;
    }
    LogWarning("test hook: the device fault ", config.test_inject_device_fault, " is armed");
  }
  return server;
}

absl::StatusOr<std::string> BrainServer::ChooseMemoryBackend() {
  absl::StatusOr<HrrBackendChoice> choice = ChooseHrrBackend(config_.engine);
  if (!choice.ok()) return choice.status();
  metrics_->SetEngineInfo(choice->backend, EngineReasonName(choice->reason));
  switch (choice->reason) {
    case EngineReason::kSelfCheckPassed:
      LogInfo("CUDA HRR backend self-check passed: ", choice->self_check);
      break;
    case EngineReason::kSelfCheckFailed:
      LogWarning(choice->self_check, "; the Memory service runs on the CPU backend instead (--engine=cuda would refuse to start)");
      break;
    case EngineReason::kNoCudaDevice:
      if (!choice->self_check.empty()) LogWarning("Memory service: ", choice->self_check, "; it runs on the CPU backend");
      break;
    case EngineReason::kCpuRequested:
      break;
  }
  return choice->backend;
}

absl::Status BrainServer::StartBrain(const std::string& version) {
  const ServerConfig& config = config_;
  if (absl::Status s = CheckCpuRunsEngines(); !s.ok()) return s;
  if (!config.checkpoint_dir.empty()) {
    if (absl::Status s = CheckCheckpointDir(config.checkpoint_dir); !s.ok()) return s;
  }
  // Slots the directory gives up go to the engine thread's inbox. No session exists before the
  // scheduler does, so none is released before scheduler_ is set.
  directory_ = std::make_unique<BrainDirectory>(
      config.max_robots, absl::Seconds(config.idle_keep_s), /*saves_brains=*/!config.checkpoint_dir.empty(),
      [this](int slot) { scheduler_->ReleaseBrain(slot); }, metrics_.get());
  if (!config.checkpoint_dir.empty()) {
    checkpointer_ = std::make_unique<Checkpointer>(config.checkpoint_dir, directory_.get(), metrics_.get());
  }

  SchedulerOptions options;
  options.engine_kind = config.engine;
  options.snapshot_sink = checkpointer_.get();
  options.snapshot_every_cycles = uint64_t(config.checkpoint_every_cycles);
  options.engine = MakeEngineConfig(config);
  options.fail_engine_after_batches = config.test_fail_engine_after_batches;
  options.batch_window = std::chrono::microseconds(config.batch_window_us);
  // Runs on the engine thread, only once streams exist (a batch or a create failed), by which
  // time server_ and service_ are set.
  options.on_engine_failure = [this](const absl::Status& failure) { OnEngineFailure(failure); };
  absl::StatusOr<std::unique_ptr<BatchScheduler>> scheduler = BatchScheduler::Start(std::move(options), metrics_.get());
  if (!scheduler.ok()) {
    return absl::Status(scheduler.status().code(),
                        absl::StrCat("engine \"", config.engine, "\": ", scheduler.status().message(),
                                     absl::IsResourceExhausted(scheduler.status())
                                         ? "; lower --max_robots or --max_batch, or use --field=small"
                                         : ""));
  }
  scheduler_ = *std::move(scheduler);
  const EngineFacts& facts = scheduler_->facts();
  if (checkpointer_ != nullptr) checkpointer_->set_shape(facts.shape);
  metrics_->SetBuildInfo(version, facts.kind);
  metrics_->SetEngineInfo(facts.kind, EngineReasonName(facts.reason));
  switch (facts.reason) {
    case EngineReason::kSelfCheckPassed:
      LogInfo("CUDA engine self-check passed: ", facts.self_check);
      break;
    case EngineReason::kSelfCheckFailed:
      LogWarning(facts.self_check, "; serving on the CPU engine instead (--engine=cuda would refuse to start)");
      break;
    case EngineReason::kCpuRequested:
    case EngineReason::kNoCudaDevice:
      break;
  }
  metrics_->SetPoolBytes(facts.pool_bytes);

  ServiceDeps deps;
  deps.directory = directory_.get();
  deps.scheduler = scheduler_.get();
  deps.metrics = metrics_.get();
  deps.limits = MakeLimits(config);
  deps.max_frame_hz = config.max_frame_hz;
  deps.frame_burst = config.frame_burst;
  deps.access = &access_;
  deps.checkpointer = checkpointer_.get();
  deps.version = version;
  service_ = std::make_unique<BrainService>(std::move(deps));
  return absl::OkStatus();
}

void BrainServer::StopEarly() {
  if (memory_ != nullptr) memory_->ReleaseStore();
  if (scheduler_ != nullptr) scheduler_->Stop();
}

void BrainServer::SetHealth(bool serving) {
  if (server_ == nullptr) return;
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);
  if (service_ != nullptr) health->SetServingStatus(kBrainServiceName, serving);
  if (memory_ != nullptr) health->SetServingStatus(kMemoryServiceName, serving);
}

std::optional<absl::Status> BrainServer::device_lost() const {
  absl::MutexLock lock(&lost_mu_);
  return device_lost_;
}

void BrainServer::OnDeviceLost(const absl::Status& lost) {
  {
    absl::MutexLock lock(&lost_mu_);
    if (device_lost_.has_value()) return;
    device_lost_ = lost;
  }
  LogError("the device context is lost (", lost.message(), "): health NOT_SERVING, every robot stream ends, and ",
           "the process exits with status ", kExitDeviceLost, " for a restart");
  SetHealth(false);
  // Robots go elsewhere with a reason they can log, and resume from their last checkpoints there.
  if (service_ != nullptr) {
    service_->EngineFailed(absl::UnavailableError(
        absl::StrCat("the engine failed: this server's GPU device context was lost (", lost.message(),
                     "); reconnect to another server, which resumes your brain from its last checkpoint")));
  }
}

BrainServer::BrainServer(const ServerConfig& config) : config_(config) {}

BrainServer::~BrainServer() { Shutdown(); }

int BrainServer::open_streams() const { return service_ != nullptr ? service_->registry().size() : 0; }

absl::Status BrainServer::ReloadTokens() {
  if (config_.tokens_file.empty()) return absl::FailedPreconditionError("no --tokens_file to reload");
  if (absl::Status s = access_.Load(config_.tokens_file); !s.ok()) return s;
  // A revoked token's live streams end now; its Memory calls are refused from here on (each call
  // is checked against the table in use).
  if (service_ != nullptr) service_->RecheckAccess();
  return absl::OkStatus();
}

int BrainServer::metrics_port() const { return exposer_ != nullptr ? exposer_->port() : 0; }

void BrainServer::ReapIdle() {
  // Checked often enough that a brain is kept at most ~1/4 longer than idle_keep, and a silent
  // stream lives at most ~1/4 longer than hello_timeout or stream_idle_timeout.
  const absl::Duration hello_timeout = absl::Seconds(config_.hello_timeout_s);
  const absl::Duration frame_timeout = absl::Seconds(config_.stream_idle_timeout_s);
  absl::Duration shortest = hello_timeout;  // of the limits in force (0 = none)
  for (absl::Duration limit : {absl::Seconds(config_.idle_keep_s), frame_timeout}) {
    if (limit > absl::ZeroDuration()) shortest = std::min(shortest, limit);
  }
  const absl::Duration period = std::clamp(shortest / 4, absl::Milliseconds(10), absl::Seconds(5));
  while (!stop_reaper_.WaitForNotificationWithTimeout(period)) {
    const absl::Time now = absl::Now();
    directory_->ExpireIdle(now);
    service_->registry().ForEachLive(
        [&](CycleStream& s) { s.ExpireIfSilent(now, hello_timeout, frame_timeout); });
  }
}

void BrainServer::OnEngineFailure(const absl::Status& failure) {
  // The CUDA engine latches only device errors: the context the Memory service shares is gone too.
  if (scheduler_->facts().kind == "cuda") {
    OnDeviceLost(failure);
    return;
  }
  // Load balancers and robots' health checks stop sending robots here; live robots are told to
  // reconnect (elsewhere) instead of getting INTERNAL_ERROR for every frame.
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
    health->SetServingStatus(false);
    health->SetServingStatus(kBrainServiceName, false);
  }
  service_->EngineFailed(failure);
}

void BrainServer::Shutdown() {
  absl::MutexLock lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  if (server_ != nullptr) {
    if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
      health->SetServingStatus(false);
    }
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(config_.shutdown_deadline_s);
  if (service_ != nullptr) service_->BeginShutdown();
  if (memory_ != nullptr) memory_->BeginShutdown();
  if (scheduler_ != nullptr) scheduler_->Drain();
  // Every brain to disk before anything is released: a restarted daemon gives them back.
  if (scheduler_ != nullptr && checkpointer_ != nullptr) {
    const BatchScheduler::SnapshotCount copies = scheduler_->SnapshotAll(deadline);
    const bool flushed = checkpointer_->Flush(std::max(deadline - absl::Now(), absl::ZeroDuration()));
    if (copies.lost == 0 && flushed) {
      LogInfo("shutdown: ", copies.copied, " brains copied for their checkpoints, every checkpoint written");
    } else {
      LogError("shutdown: ", copies.copied, " brains copied for their checkpoints, ", copies.lost,
               " not copied (their files keep their last checkpoints)",
               flushed ? "" : "; not every checkpoint was written by the shutdown deadline");
    }
  }
  // Every Cycle stream now owes at most its last writes. Let them finish, within the deadline,
  // then end gRPC at once: its own Shutdown(deadline) would also wait out the deadline for every
  // idle robot connection (gRPC ends a server only when all connections are gone), so one
  // connected robot would hold a SIGTERM for the whole deadline.
  while (service_ != nullptr && service_->registry().size() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  stop_reaper_.Notify();
  if (reaper_.joinable()) reaper_.join();
  // Every Memory call has been answered; its spaces go while the engine thread still runs.
  if (memory_ != nullptr) memory_->ReleaseStore();
  // Streams still owed an answer get it now (SHUTTING_DOWN) and delete themselves.
  if (scheduler_ != nullptr) scheduler_->Stop();
  exposer_.reset();
}

}  // namespace fieldbrain::server

// brain-server: the fieldbrain daemon. Flags in server_flags.cc (`brain-server --help`).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "common/program_usage.h"
#include "server/brain_server.h"
#include "server/health_probe.h"
#include "server/log.h"
#include "server/server_flags.h"
#include "server/termination_signals.h"

#ifndef FIELDBRAIN_VERSION
#define FIELDBRAIN_VERSION "0.0.0"
#endif

namespace {

// OpenMP workers that spin after each batch take the cores that gRPC's threads need to read and
// answer frames: on a 2-core machine, 4 robots' round trip fell from p50 16 ms (spinning) to
// 3.4 ms (passive), see docs/benchmarks.md. libgomp reads OMP_WAIT_POLICY once, while loading, so
// the daemon sets passive as its default by running itself again; an explicit setting wins.
void DefaultToPassiveOpenMpWorkers(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then run on with libgomp's default
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fieldbrain::server;
  DefaultToPassiveOpenMpWorkers(argv);
  fieldbrain::SetProgramUsage(
      "brain-server",
      "the fieldbrain gRPC brain server. Robots stream sensor frames on brain.v1.Brain/Cycle and get\n"
      "motor frames back; it also serves brain.v1.Brain/GetServerInfo, brain.v1.Memory (HRR vectors,\n"
      "unless --memory_arena_bytes=0), grpc.health.v1.Health and server reflection on --listen, and\n"
      "Prometheus metrics at http://<--metrics_listen>/metrics. --serve=brain or --serve=memory runs\n"
      "one of the two services alone (docs/deploying.md). Exit status: 0 after SIGTERM/SIGINT, 1 when\n"
      "it cannot start, 2 for a bad flag, 3 when the device context was lost (restart it).\n"
      "  brain-server --listen=0.0.0.0:50051 --engine=auto --metrics_listen=0.0.0.0:9464",
      {"server_flags.cc"});
  absl::ParseCommandLine(argc, argv);
  if (const std::string probe = HealthProbeTargetFromFlags(); !probe.empty()) {
    const absl::Status health = ProbeHealth(probe, absl::Seconds(3));
    std::printf("%s\n", health.ok() ? absl::StrCat(probe, " is SERVING").c_str() : health.ToString().c_str());
    return health.ok() ? 0 : 1;
  }
  const ServerConfig config = ConfigFromFlags();
  if (absl::Status s = ValidateConfig(config); !s.ok()) {
    std::fprintf(stderr, "brain-server: %s\n", std::string(s.message()).c_str());
    return 2;
  }

  BlockControlSignals();  // before any thread starts, so every thread inherits the mask
  absl::StatusOr<std::unique_ptr<BrainServer>> server = BrainServer::Start(config, FIELDBRAIN_VERSION);
  if (!server.ok()) {
    std::fprintf(stderr, "brain-server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  const std::string host = config.listen.substr(0, config.listen.rfind(':'));
  const std::string metrics =
      config.metrics_listen.empty()
          ? std::string()
          : absl::StrCat(" metrics=", config.metrics_listen.substr(0, config.metrics_listen.rfind(':')), ":",
                         (*server)->metrics_port(), "/metrics");
  if ((*server)->serves_brain()) {
    const EngineFacts& facts = (*server)->facts();
    LogInfo("brain-server ", FIELDBRAIN_VERSION, " listening on ", host, ":", (*server)->port(), " serve=", config.serve,
            " engine=", facts.kind, " device=\"", facts.device_description, "\" field=", facts.shape.channels, "x",
            facts.shape.nx, "x", facts.shape.ny, "x", facts.shape.nz, " pool_bytes=", facts.pool_bytes,
            " max_robots=", facts.max_robots, " max_batch=", facts.max_batch,
            " batch_window_us=", config.batch_window_us, metrics);
  } else {
    LogInfo("brain-server ", FIELDBRAIN_VERSION, " listening on ", host, ":", (*server)->port(), " serve=", config.serve,
            " memory_backend=", (*server)->memory_service()->backend(), metrics);
  }

  // Signals, or a lost device context (polled: it is found on the Memory or the engine thread).
  int sig = 0;
  for (;;) {
    sig = WaitForControlSignalFor(absl::Milliseconds(100));
    if (sig == SIGHUP) {
      if (absl::Status s = (*server)->ReloadTokens(); s.ok()) {
        LogInfo("SIGHUP: tokens file ", config.tokens_file, " reloaded");
      } else {
        LogError("SIGHUP: ", s.message(), "; the tokens in use stay");
      }
      continue;
    }
    if (sig != 0 || (*server)->device_lost().has_value()) break;
  }
  if (sig != 0) {
    LogInfo("signal ", sig, ": shutting down (deadline ", config.shutdown_deadline_s, " s)");
  } else {
    LogError("shutting down: the device context is lost");
  }
  (*server)->Shutdown();
  if ((*server)->serves_brain()) LogInfo("stopped after ", (*server)->scheduler().cycles_total(), " cycles");
  return (*server)->device_lost().has_value() ? kExitDeviceLost : 0;
}

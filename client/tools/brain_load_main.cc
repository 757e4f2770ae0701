// brain-load: N robots at R Hz against a brain server (or a proxy in front of several), for
// capacity figures. Prints one live line per second and a summary: throughput, round trip
// p50/p99/max, the daemon's share of it (MotorFrame.server_time_us: frame arrival -> answer), non-OK
// statuses, starved robots and, with --server_pid on the same machine, the daemon's CPU time per
// frame. The robots are LoadRobot reactors fed by one pacer thread, so the tool itself costs little
// of the machine it measures. Exit status: 0 after a run, 1 when no robot connected, 2 on bad flags.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client_security_flags.h"
#include "client/tools/load_robot.h"
#include "client/tools/process_cpu.h"
#include "common/program_usage.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "brain server (or proxy) address");
ABSL_FLAG(int, robots, 256, "robots, one Cycle stream each (1-4096)");
ABSL_FLAG(double, hz, 50, "control rate per robot (0.1-1000); the robots' ticks are spread over the period");
ABSL_FLAG(double, seconds, 20, "measured run time, after the warm-up");
ABSL_FLAG(double, warmup_s, 2, "seconds run before measuring (connections settle, brains warm up)");
ABSL_FLAG(int, sensors, 12, "sensors per robot (1-64)");
ABSL_FLAG(int, motors, 4, "motors per robot (1-16)");
ABSL_FLAG(int, connections, 0,
          "TCP connections the robots share (0 = one per robot, as a real fleet has)");
ABSL_FLAG(std::string, id_prefix, "load-", "robot ids are <id_prefix><index>");
ABSL_FLAG(int, server_pid, 0, "the daemon's pid on this machine: report its CPU time per frame (0 = not measured)");
ABSL_FLAG(double, connect_timeout_s, 10, "how long to wait for every robot's Welcome");
ABSL_FLAG(double, starved_below, 0.9,
          "a robot whose brain ran (status OK) fewer than this share of its ticks in the measured time "
          "is starved");
ABSL_FLAG(bool, quiet, false, "no live lines, only the summary");

namespace {

using fieldbrain::sim::LoadRobot;
using fieldbrain::sim::LoadWindow;

std::string Ms(absl::Duration d) { return absl::StrFormat("%.2f ms", absl::ToDoubleMilliseconds(d)); }

std::string NotOkText(const std::map<std::string, uint64_t>& counts) {
  if (counts.empty()) return "none";
  return absl::StrJoin(counts, ", ", [](std::string* out, const auto& kv) { absl::StrAppend(out, kv.first, " ", kv.second); });
}

uint64_t Sum(const std::map<std::string, uint64_t>& counts) {
  uint64_t sum = 0;
  for (const auto& [name, c] : counts) sum += c;
  return sum;
}

std::optional<std::string> FlagProblem() {
  const int robots = absl::GetFlag(FLAGS_robots);
  const double hz = absl::GetFlag(FLAGS_hz);
  if (robots < 1 || robots > 4096) return "--robots must be in [1, 4096]";
  if (!(hz >= 0.1 && hz <= 1000)) return "--hz must be in [0.1, 1000]";
  if (!(absl::GetFlag(FLAGS_seconds) > 0)) return "--seconds must be positive";
  if (!(absl::GetFlag(FLAGS_warmup_s) >= 0)) return "--warmup_s must be 0 or positive";
  if (absl::GetFlag(FLAGS_sensors) < 1 || absl::GetFlag(FLAGS_sensors) > 64) return "--sensors must be in [1, 64]";
  if (absl::GetFlag(FLAGS_motors) < 1 || absl::GetFlag(FLAGS_motors) > 16) return "--motors must be in [1, 16]";
  if (absl::GetFlag(FLAGS_connections) < 0 || absl::GetFlag(FLAGS_connections) > robots) {
    return "--connections must be in [0, --robots]";
  }
  if (!(absl::GetFlag(FLAGS_starved_below) >= 0 && absl::GetFlag(FLAGS_starved_below) <= 1)) {
    return "--starved_below must be in [0, 1]";
  }
  return std::nullopt;
}

// Sends every robot's frame at its own phase of the control period: robot i at period * i / N.
class Pacer {
 public:
  Pacer(std::vector<std::unique_ptr<LoadRobot>>& robots, double hz) : robots_(robots), period_(absl::Seconds(1 / hz)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Pacer() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // The pacer's worst lateness: a tick sent later than its time by this much (the tool's own limit).
  absl::Duration worst_lag() const { return absl::Nanoseconds(worst_lag_ns_.load()); }
  void ResetLag() { worst_lag_ns_ = 0; }

 private:
  void Run() {
    const absl::Time start = absl::Now();
    const int n = static_cast<int>(robots_.size());
    for (int64_t k = 0; !stop_; ++k) {
      for (int i = 0; i < n && !stop_; ++i) {
        const absl::Time due = start + period_ * (double(k) + double(i) / n);
        const absl::Duration wait = due - absl::Now();
        if (wait > absl::ZeroDuration()) {
          absl::SleepFor(wait);
        } else {
          worst_lag_ns_ = std::max<int64_t>(worst_lag_ns_.load(), absl::ToInt64Nanoseconds(-wait));
        }
        robots_[i]->Tick();
      }
    }
  }

  std::vector<std::unique_ptr<LoadRobot>>& robots_;
  const absl::Duration period_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> worst_lag_ns_{0};
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  fieldbrain::SetProgramUsage(
      "brain-load",
      "N robots at R Hz against a brain server, for capacity figures (docs/benchmarks.md).\n"
      "  brain-load --target=127.0.0.1:50051 --robots=256 --hz=50 --seconds=20 --server_pid=$(pidof brain-server)",
      {"brain_load_main.cc", fieldbrain::client::kClientSecurityFlagsFile});
  absl::ParseCommandLine(argc, argv);
  if (std::optional<std::string> problem = FlagProblem()) {
    std::fprintf(stderr, "brain-load: %s\n", problem->c_str());
    return 2;
  }
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      fieldbrain::client::ChannelCredentialsFromFlags();
  absl::StatusOr<std::string> token = fieldbrain::client::BearerTokenFromFlags();
  if (!credentials.ok() || !token.ok()) {
    std::fprintf(stderr, "brain-load: %s\n",
                 std::string((credentials.ok() ? token.status() : credentials.status()).message()).c_str());
    return 2;
  }
  const int n = absl::GetFlag(FLAGS_robots);
  const double hz = absl::GetFlag(FLAGS_hz);
  const int connections = absl::GetFlag(FLAGS_connections) > 0 ? absl::GetFlag(FLAGS_connections) : n;
  const std::string target = absl::GetFlag(FLAGS_target);

  std::vector<std::unique_ptr<brain::v1::Brain::Stub>> stubs;
  for (int c = 0; c < connections; ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own, not a shared one
    args.SetInt("fieldbrain.load_connection", c);
    stubs.push_back(brain::v1::Brain::NewStub(grpc::CreateCustomChannel(target, *credentials, args)));
  }
  std::vector<std::unique_ptr<LoadRobot>> robots;
  for (int i = 0; i < n; ++i) {
    robots.push_back(std::make_unique<LoadRobot>(absl::StrCat(absl::GetFlag(FLAGS_id_prefix), i),
                                                 absl::GetFlag(FLAGS_sensors), absl::GetFlag(FLAGS_motors)));
    robots.back()->Start(stubs[i % connections].get(), *token);
  }
  // Ticking starts at once (a robot's ticks wait for its Welcome): a robot welcomed early must
  // not sit silent while the others connect, or the daemon's stream idle timeout ends it.
  Pacer pacer(robots, hz);
  const absl::Time connect_deadline = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_connect_timeout_s));
  int connected = 0;
  for (auto& r : robots) connected += r->WaitWelcome(std::max(connect_deadline - absl::Now(), absl::ZeroDuration())) ? 1 : 0;
  std::printf("brain-load: %d robots at %g Hz against %s (%d connections): %d connected\n", n, hz, target.c_str(),
              connections, connected);
  if (connected == 0) {
    pacer.Stop();
    for (auto& r : robots) r->Close(absl::Seconds(2));
    std::fprintf(stderr, "brain-load: no robot got a Welcome within %g s\n", absl::GetFlag(FLAGS_connect_timeout_s));
    return 1;
  }

  const pid_t server_pid = absl::GetFlag(FLAGS_server_pid);
  const absl::Duration warmup = absl::Seconds(absl::GetFlag(FLAGS_warmup_s));
  const absl::Duration measured = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  const absl::Time start = absl::Now();
  absl::Time measure_start = start + warmup;
  bool measuring = warmup <= absl::ZeroDuration();
  absl::StatusOr<fieldbrain::sim::ProcessCpu> cpu_before = absl::UnknownError("not read");
  if (measuring && server_pid > 0) cpu_before = fieldbrain::sim::ReadProcessCpu(server_pid);
  LoadWindow total;
  std::vector<uint64_t> ok_answers(robots.size(), 0);  // per robot: frames its brain ran
  for (absl::Time next = start + absl::Seconds(1);; next += absl::Seconds(1)) {
    const absl::Time end = measure_start + measured;
    absl::SleepFor(std::min(next, end) - absl::Now());
    const absl::Time now = absl::Now();
    if (!measuring && now >= measure_start) {  // warm-up over: nothing before counts
      for (auto& r : robots) r->TakeWindow();
      measure_start = now;
      measuring = true;
      pacer.ResetLag();
      if (server_pid > 0) cpu_before = fieldbrain::sim::ReadProcessCpu(server_pid);
      continue;
    }
    LoadWindow second;
    for (size_t i = 0; i < robots.size(); ++i) {
      LoadWindow w = robots[i]->TakeWindow();
      if (measuring) ok_answers[i] += w.answered - Sum(w.not_ok);
      second.Merge(w);
    }
    if (measuring) total.Merge(second);
    if (!absl::GetFlag(FLAGS_quiet)) {
      std::printf("[%6.1f s]%s %8.0f frames/s  rtt p50 %s p99 %s max %s  non-OK %llu  skipped %llu\n",
                  absl::ToDoubleSeconds(now - start), measuring ? "" : " warm-up", double(second.answered),
                  Ms(second.round_trip.Percentile(0.5)).c_str(), Ms(second.round_trip.Percentile(0.99)).c_str(),
                  Ms(second.round_trip.max()).c_str(),
                  static_cast<unsigned long long>(Sum(second.not_ok)),
                  static_cast<unsigned long long>(second.skipped));
      std::fflush(stdout);
    }
    if (measuring && now >= end) break;
  }
  const absl::Duration ran = absl::Now() - measure_start;
  absl::StatusOr<fieldbrain::sim::ProcessCpu> cpu_after = absl::UnknownError("not read");
  if (server_pid > 0) cpu_after = fieldbrain::sim::ReadProcessCpu(server_pid);
  pacer.Stop();

  std::map<std::string, uint64_t> stream_ends;  // streams that ended before the run did
  int starved = 0;
  for (size_t i = 0; i < robots.size(); ++i) {
    const bool ended = robots[i]->ended();
    const grpc::Status status = robots[i]->Close(absl::Seconds(5));
    if (ended) ++stream_ends[absl::StrCat(absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())),
                                          ": ", status.error_message())];
  }
  const double offered_per_robot = hz * absl::ToDoubleSeconds(ran);
  uint64_t fewest = UINT64_MAX;
  for (size_t i = 0; i < robots.size(); ++i) {
    fewest = std::min(fewest, ok_answers[i]);
    if (double(ok_answers[i]) < absl::GetFlag(FLAGS_starved_below) * offered_per_robot) ++starved;
  }
  const uint64_t not_ok = Sum(total.not_ok);

  const double seconds = absl::ToDoubleSeconds(ran);
  std::printf("\nbrain-load summary: %d robots at %g Hz, %.1f s measured after %.1f s of warm-up\n", n, hz, seconds,
              absl::ToDoubleSeconds(warmup));
  std::printf("  throughput: %.0f frames/s answered of %.0f offered; sent %llu, answered %llu, skipped %llu "
              "(a robot's previous frame still being written)\n",
              double(total.answered) / seconds, n * hz, static_cast<unsigned long long>(total.sent),
              static_cast<unsigned long long>(total.answered), static_cast<unsigned long long>(total.skipped));
  std::printf("  round trip: p50 %s  p99 %s  max %s\n", Ms(total.round_trip.Percentile(0.5)).c_str(),
              Ms(total.round_trip.Percentile(0.99)).c_str(), Ms(total.round_trip.max()).c_str());
  std::printf("  in the daemon (frame arrival -> answer): p50 %s  p99 %s  max %s; the rest is gRPC, the "
              "kernel and this tool\n",
              Ms(total.server_time.Percentile(0.5)).c_str(), Ms(total.server_time.Percentile(0.99)).c_str(),
              Ms(total.server_time.max()).c_str());
  std::printf("  non-OK statuses: %llu (%s)\n", static_cast<unsigned long long>(not_ok), NotOkText(total.not_ok).c_str());
  std::printf("  streams ended early: %s\n", NotOkText(stream_ends).c_str());
  std::printf("  robots starved: %d of %d (fewest OK answers: %llu of %.0f ticks; starved below %.0f %%)\n",
              starved, n, static_cast<unsigned long long>(fewest == UINT64_MAX ? 0 : fewest),
              offered_per_robot, 100 * absl::GetFlag(FLAGS_starved_below));
  std::printf("  pacer's worst lateness: %s (this tool's own limit)\n", Ms(pacer.worst_lag()).c_str());
  if (server_pid > 0) {
    if (cpu_before.ok() && cpu_after.ok() && total.answered > 0) {
      const double user = cpu_after->user_s - cpu_before->user_s, sys = cpu_after->system_s - cpu_before->system_s;
      std::printf("  server CPU: %.1f us per frame (user %.1f, system %.1f), %.2f cores\n",
                  1e6 * (user + sys) / double(total.answered), 1e6 * user / double(total.answered),
                  1e6 * sys / double(total.answered), (user + sys) / seconds);
    } else {
      std::printf("  server CPU: not measured (%s)\n",
                  std::string((cpu_before.ok() ? cpu_after.status() : cpu_before.status()).message()).c_str());
    }
  }
  return 0;
}

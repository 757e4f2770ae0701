// The robots' cycle latency while the Memory service creates and deletes 100 spaces, against the
// same robots undisturbed, and against the same churn run the way it ran before the Memory
// service had its own thread (each create and delete a job on the engine thread, between
// batches). An in-process daemon on the CPU engine; 4 robots in lockstep over loopback gRPC, each
// timing its own round trips. Prints p50/p99/max per phase for docs/benchmarks.md.
// --rounds repeats each churn phase (100 creates and deletes a round) for enough frames to rank.
//   memory_churn_bench [--engine=cpu] [--robots=4] [--field=small] [--dim=1024] [--capacity=4096] [--rounds=5]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "brain/v1/brain.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "latency_report.h"
#include "memory_calls.h"
#include "raw_stream.h"
#include "server/brain_server.h"
#include "server/memory/memory_store.h"

namespace fieldbrain::server {
namespace {

using Clock = std::chrono::steady_clock;

enum Phase { kQuiet = 0, kMemoryThread = 1, kEngineThreadJobs = 2, kPhases = 3 };
const char* const kPhaseNames[kPhases] = {"no churn", "churn on the Memory thread (now)",
                                          "churn as engine-thread jobs (before)"};

struct Options {
  std::string engine = "cpu";
  int rounds = 5;
  int robots = 4;
  std::string field = "small";
  int dim = 1024;
  int capacity = 4096;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const size_t n = std::strlen(flag);
      return a.compare(0, n, flag) == 0 ? argv[i] + n : nullptr;
    };
    if (const char* v = value("--robots=")) o.robots = std::atoi(v);
    if (const char* v = value("--engine=")) o.engine = v;
    if (const char* v = value("--rounds=")) o.rounds = std::max(1, std::atoi(v));
    if (const char* v = value("--field=")) o.field = v;
    if (const char* v = value("--dim=")) o.dim = std::atoi(v);
    if (const char* v = value("--capacity=")) o.capacity = std::atoi(v);
  }
  return o;
}

struct Latencies {
  absl::Mutex mu;
  std::vector<double> us[kPhases];
};

void Report(const char* name, std::vector<double>& v, double churn_s) {
  bench::PrintLatencies(name, 40, v);
  if (churn_s > 0 && !v.empty()) std::printf("  (100 creates + deletes: %.3f s)", churn_s);
  std::printf("\n");
}

int Run(const Options& o) {
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.engine = o.engine;
  config.field = o.field;
  config.max_robots = o.robots;
  config.threads = 1;
  config.max_frame_hz = 0;
  config.stream_idle_timeout_s = 0;
  absl::StatusOr<std::unique_ptr<BrainServer>> server = BrainServer::Start(config, "bench");
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials());
  auto brain = brain::v1::Brain::NewStub(channel);
  testing::MemoryCalls memory(channel);

  std::atomic<int> phase{kQuiet};
  std::atomic<bool> done{false};
  std::atomic<int> ready{0};
  Latencies lat;
  std::vector<std::thread> robots;
  for (int r = 0; r < o.robots; ++r) {
    robots.emplace_back([&, r] {
      testing::RawStream stream(brain.get(), absl::Minutes(30));
      if (!stream.Open(testing::MakeHello(absl::StrCat("robot-", r))).has_value()) return;
      ready.fetch_add(1);
      std::vector<double> mine[kPhases];
      for (uint64_t seq = 1; !done.load(); ++seq) {
        const int p = phase.load();
        const Clock::time_point t0 = Clock::now();
        std::optional<brain::v1::MotorFrame> m = stream.Step(testing::FrameRequest(seq, {0.1f, 0.2f, 0.3f, 0.4f}));
        if (!m.has_value()) break;
        if (p == phase.load()) mine[p].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
      stream.Close();
      absl::MutexLock lock(&lat.mu);
      for (int p = 0; p < kPhases; ++p) lat.us[p].insert(lat.us[p].end(), mine[p].begin(), mine[p].end());
    });
  }
  while (ready.load() < o.robots) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  std::this_thread::sleep_for(std::chrono::seconds(3));  // kQuiet

  double churn_s[kPhases] = {0, 0, 0};
  phase.store(kMemoryThread);
  Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 100 * o.rounds; ++i) {
    const std::string name = absl::StrCat("churn-", i);
    if (!memory.CreateSpace(name, uint32_t(o.dim), uint32_t(o.capacity)).ok() || !memory.DeleteSpace(name).ok()) {
      std::fprintf(stderr, "create/delete %s failed\n", name.c_str());
      return 1;
    }
  }
  churn_s[kMemoryThread] = std::chrono::duration<double>(Clock::now() - t0).count() / o.rounds;

  // Before: the same store operations, each one job on the engine thread (what
  // MemoryService did through BatchScheduler::RunOnEngineThread).
  memory::MemoryOptions mo;
  mo.arena_bytes = config.memory_arena_bytes;
  mo.engine_kind = (*server)->facts().kind;
  std::unique_ptr<memory::MemoryStore> store;
  {
    absl::Notification made;
    (*server)->scheduler().RunOnEngineThread([&](EngineJobState) {
      store = *memory::MemoryStore::Create(mo, nullptr);
      made.Notify();
    });
    made.WaitForNotification();
  }
  phase.store(kEngineThreadJobs);
  t0 = Clock::now();
  for (int i = 0; i < 100 * o.rounds; ++i) {
    for (int op = 0; op < 2; ++op) {
      absl::Notification ran;
      (*server)->scheduler().RunOnEngineThread([&](EngineJobState) {
        if (op == 0) {
          brain::v1::CreateSpaceRequest r;
          r.set_name(absl::StrCat("old-", i));
          r.set_dimension(uint32_t(o.dim));
          r.set_capacity(uint32_t(o.capacity));
          brain::v1::CreateSpaceResponse out;
          store->CreateSpace(r, &out).IgnoreError();
        } else {
          brain::v1::DeleteSpaceRequest r;
          r.set_name(absl::StrCat("old-", i));
          brain::v1::DeleteSpaceResponse out;
          store->DeleteSpace(r, &out).IgnoreError();
        }
        ran.Notify();
      });
      ran.WaitForNotification();
    }
  }
  churn_s[kEngineThreadJobs] = std::chrono::duration<double>(Clock::now() - t0).count() / o.rounds;
  phase.store(kQuiet);
  done.store(true);
  for (std::thread& t : robots) t.join();
  {
    absl::Notification gone;
    (*server)->scheduler().RunOnEngineThread([&](EngineJobState) {
      store.reset();
      gone.Notify();
    });
    gone.WaitForNotification();
  }
  (*server)->Shutdown();

  std::printf("memory_churn_bench: %d robots in lockstep, %s engine (--threads=1), field %s; %d x 100 spaces of "
              "dimension %d x capacity %d created and deleted one after another\n",
              o.robots, (*server)->facts().kind.c_str(), o.field.c_str(), o.rounds, o.dim, o.capacity);
  for (int p = 0; p < kPhases; ++p) Report(kPhaseNames[p], lat.us[p], churn_s[p]);
  return 0;
}

}  // namespace
}  // namespace fieldbrain::server

int main(int argc, char** argv) { return fieldbrain::server::Run(fieldbrain::server::Parse(argc, argv)); }

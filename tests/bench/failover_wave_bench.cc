// A wave of robots failing over onto one daemon: their brains come from checkpoints on a shared
// volume (a daemon that died wrote them), all Hellos at once, while robots already on the daemon
// keep their tick. Prints the live robots' round trips before and during the wave (p50/p99/max,
// and the p99 ratio), and how long the wave's robots took to get their brains back. The Hellos'
// checkpoint reads run on the admission threads (server/hello_admission.h), not on gRPC's.
// Each wave robot sends --wave_frames frames after its Welcome (1 by default: the wave's own
// load then stays out of the live robots' figures, which measure admission and restore; more
// frames add its robots to every batch, which the CPU engine pays for).
// An in-process daemon on the CPU engine over loopback gRPC.
//   failover_wave_bench [--wave=64] [--live=8] [--field=small] [--hz=50] [--wave_frames=1] [--dir=/tmp/...]
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "brain/v1/brain.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "latency_report.h"
#include "raw_stream.h"
#include "server/brain_server.h"

namespace fieldbrain::server {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int wave = 64;
  int live = 8;
  int hz = 50;
  int wave_frames = 1;
  std::string field = "small";
  std::string dir;
};

Options Parse(int argc, char** argv) {
  Options o;
  o.dir = absl::StrCat(std::filesystem::temp_directory_path().string(), "/failover_wave.", ::getpid());
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const size_t n = std::strlen(flag);
      return a.compare(0, n, flag) == 0 ? argv[i] + n : nullptr;
    };
    if (const char* v = value("--wave=")) o.wave = std::max(1, std::atoi(v));
    if (const char* v = value("--live=")) o.live = std::max(1, std::atoi(v));
    if (const char* v = value("--hz=")) o.hz = std::max(1, std::atoi(v));
    if (const char* v = value("--wave_frames=")) o.wave_frames = std::max(0, std::atoi(v));
    if (const char* v = value("--field=")) o.field = v;
    if (const char* v = value("--dir=")) o.dir = v;
  }
  return o;
}

ServerConfig Config(const Options& o, int robots) {
  ServerConfig c;
  c.listen = "127.0.0.1:0";
  c.engine = "cpu";
  c.field = o.field;
  c.max_robots = robots;
  c.threads = 1;
  c.max_frame_hz = 0;
  c.stream_idle_timeout_s = 0;
  c.checkpoint_dir = o.dir;
  c.checkpoint_every_cycles = 1000;
  return c;
}

std::unique_ptr<brain::v1::Brain::Stub> StubOf(BrainServer& server) {
  return brain::v1::Brain::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", server.port()), grpc::InsecureChannelCredentials()));
}

brain::v1::CycleRequest Frame(uint64_t seq) { return testing::FrameRequest(seq, {0.1f, -0.2f, 0.3f, 0.05f}); }

void Report(const char* name, std::vector<double>& v) {
  bench::PrintLatencies(name, 34, v);
  std::printf("\n");
}

double P99(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return bench::Quantile(v, 0.99);
}

int Run(const Options& o) {
  std::filesystem::create_directories(o.dir);
  // The daemon that dies: it served the wave's robots and wrote their brains at its end.
  std::vector<std::string> tokens;
  {
    absl::StatusOr<std::unique_ptr<BrainServer>> source = BrainServer::Start(Config(o, o.wave), "bench");
    if (!source.ok()) {
      std::fprintf(stderr, "%s\n", source.status().ToString().c_str());
      return 1;
    }
    auto stub = StubOf(**source);
    for (int r = 0; r < o.wave; ++r) {
      testing::RawStream s(stub.get(), absl::Minutes(5));
      std::optional<brain::v1::Welcome> w = s.Open(testing::MakeHello(absl::StrCat("wave-", r)));
      if (!w.has_value() || !s.Step(Frame(1)).has_value()) return 1;
      tokens.push_back(w->resume_token());
    }
    (*source)->Shutdown();
  }

  absl::StatusOr<std::unique_ptr<BrainServer>> server = BrainServer::Start(Config(o, o.wave + o.live), "bench");
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  auto stub = StubOf(**server);
  const auto tick = std::chrono::microseconds(1'000'000 / o.hz);
  std::atomic<int> phase{0};  // 0 before the wave, 1 during it, 2 after
  std::atomic<bool> done{false};
  std::atomic<int> ready{0};
  absl::Mutex mu;
  std::vector<double> rtt[3];
  int missed = 0;  // live robots' round trips longer than a tick
  std::vector<std::thread> live;
  for (int r = 0; r < o.live; ++r) {
    live.emplace_back([&, r] {
      testing::RawStream s(stub.get(), absl::Minutes(30));
      if (!s.Open(testing::MakeHello(absl::StrCat("live-", r))).has_value()) return;
      ready.fetch_add(1);
      std::vector<double> mine[3];
      int late = 0;
      Clock::time_point next = Clock::now();
      for (uint64_t seq = 1; !done.load(); ++seq) {
        const int p = phase.load();
        const Clock::time_point t0 = Clock::now();
        if (!s.Step(Frame(seq)).has_value()) break;
        const Clock::duration took = Clock::now() - t0;
        mine[p].push_back(std::chrono::duration<double, std::micro>(took).count());
        late += took > tick ? 1 : 0;
        next += tick;
        std::this_thread::sleep_until(next);
      }
      s.Close();
      absl::MutexLock lock(&mu);
      for (int p = 0; p < 3; ++p) rtt[p].insert(rtt[p].end(), mine[p].begin(), mine[p].end());
      missed += late;
    });
  }
  while (ready.load() < o.live) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::seconds(2));

  phase.store(1);
  const Clock::time_point wave_start = Clock::now();
  std::vector<double> resume_ms(size_t(o.wave), -1.0);
  std::vector<std::thread> wave;
  std::atomic<int> resumed{0};
  for (int r = 0; r < o.wave; ++r) {
    wave.emplace_back([&, r] {
      testing::RawStream s(stub.get(), absl::Minutes(5));
      brain::v1::Hello hello = testing::MakeHello(absl::StrCat("wave-", r));
      hello.set_resume_token(tokens[size_t(r)]);
      std::optional<brain::v1::Welcome> w = s.Open(hello);
      if (!w.has_value() || !w->resumed()) return;
      resume_ms[size_t(r)] = std::chrono::duration<double, std::milli>(Clock::now() - wave_start).count();
      resumed.fetch_add(1);
      for (uint64_t seq = 2; seq < 2 + uint64_t(o.wave_frames) && s.Step(Frame(seq)).has_value(); ++seq)
        std::this_thread::sleep_for(tick);
      s.Close();
    });
  }
  for (std::thread& t : wave) t.join();
  const double wave_s = std::chrono::duration<double>(Clock::now() - wave_start).count();
  phase.store(2);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  done.store(true);
  for (std::thread& t : live) t.join();

  std::vector<double> back;
  for (double ms : resume_ms)
    if (ms >= 0) back.push_back(ms);
  std::sort(back.begin(), back.end());
  std::printf("failover wave: %d robots resume from checkpoints (%s field) onto a daemon serving %d live robots at %d Hz\n",
              o.wave, o.field.c_str(), o.live, o.hz);
  Report("live robots, before the wave", rtt[0]);
  Report("live robots, during the wave", rtt[1]);
  Report("live robots, after the wave", rtt[2]);
  std::printf("live p99 during / before: %.2f; live round trips over a tick (%lld us): %d\n", P99(rtt[1]) / P99(rtt[0]),
              static_cast<long long>(tick.count()), missed);
  if (!back.empty()) {
    std::printf("wave robots resumed: %d of %d; Hello to Welcome from the wave's start: median %.0f ms, max %.0f ms; "
                "wave (with %d frames each) %.2f s\n",
                resumed.load(), o.wave, back[back.size() / 2], back.back(), o.wave_frames, wave_s);
  }
  server->reset();  // its writer finishes the wave robots' last checkpoints first
  std::error_code ignored;
  std::filesystem::remove_all(o.dir, ignored);
  return resumed.load() == o.wave ? 0 : 1;
}

}  // namespace
}  // namespace fieldbrain::server

int main(int argc, char** argv) { return fieldbrain::server::Run(fieldbrain::server::Parse(argc, argv)); }

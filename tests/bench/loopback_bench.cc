// One robot's round trip over loopback gRPC through libbrain_client: sensors out, motors back.
// The reference is the transport floor, measured in the same run: the same client against an
// in-process server that answers every frame at once with zero motors (no brain). Then the real
// brain-server daemon (CPU engine) with the small and the default field. Reports p50/p99/max.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "brain/v1/brain.grpc.pb.h"
#include "client/brain_client.h"
#include "grpcpp/grpcpp.h"

extern char** environ;

namespace fieldbrain {
namespace {

// The transport floor: answers Hello with a Welcome and each frame with zero motors, one
// message in flight each way, exactly like the real service's stream shape.
class EchoReactor : public grpc::ServerBidiReactor<brain::v1::CycleRequest, brain::v1::CycleResponse> {
 public:
  EchoReactor() { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);
    response_.Clear();
    if (request_.has_hello()) {
      response_.mutable_welcome()->set_engine("echo");
    } else {
      brain::v1::MotorFrame* m = response_.mutable_motors();
      m->set_seq(request_.sensors().seq());
      m->set_status(brain::v1::OK);
      for (int k = 0; k < 4; ++k) m->add_values(0.0f);
    }
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);
    StartRead(&request_);
  }
  void OnDone() override { delete this; }  // the callback API's contract: the reactor owns itself

 private:
  brain::v1::CycleRequest request_;
  brain::v1::CycleResponse response_;
};

class EchoService final : public brain::v1::Brain::CallbackService {
  grpc::ServerBidiReactor<brain::v1::CycleRequest, brain::v1::CycleResponse>* Cycle(
      grpc::CallbackServerContext*) override {
    return new EchoReactor();
  }
};

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// brain-server as a child process, stopped with SIGTERM.
class Daemon {
 public:
  Daemon(const std::string& field, int port) {
    std::vector<std::string> args = {FIELDBRAIN_SERVER_BINARY, "--listen=127.0.0.1:" + std::to_string(port),
                                     "--engine=cpu", "--field=" + field, "--max_robots=1",
                                     // One robot stepping back to back outruns the default
                                     // per-robot limit (1000 Hz): measure the round trip, not it.
                                     "--max_frame_hz=0"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
  }
  ~Daemon() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

void RunRoundTrips(benchmark::State& state, const std::string& target) {
  client::ClientOptions options;
  options.target = target;
  options.profile.set_robot_id("bench-robot");
  options.profile.set_sensor_count(12);
  options.profile.set_motor_count(4);
  options.seed = 1;
  auto c = client::BrainClient::Create(options);
  if (!c.ok() || !(*c)->WaitConnected(absl::Seconds(10)).ok()) {
    state.SkipWithError("could not connect");
    return;
  }
  std::vector<float> sensors(12, 0.25f);
  for (int i = 0; i < 200; ++i) (*c)->Step(sensors, 0.0f, absl::Seconds(1));  // warm up
  std::vector<double> us;
  us.reserve(200000);
  int64_t stops = 0;
  for (auto _ : state) {
    const client::StepResult r = (*c)->Step(sensors, 0.0f, absl::Seconds(1));
    us.push_back(absl::ToDoubleMicroseconds(r.round_trip));
    stops += r.safe_stop;
  }
  std::sort(us.begin(), us.end());
  auto pct = [&](double p) { return us[std::min(us.size() - 1, size_t(p * double(us.size())))]; };
  state.counters["p50_us"] = pct(0.50);
  state.counters["p99_us"] = pct(0.99);
  state.counters["max_us"] = us.back();
  state.counters["safe_stops"] = double(stops);
}

void BM_LoopbackEcho(benchmark::State& state) {
  const std::string address = "127.0.0.1:" + std::to_string(FreePort());
  EchoService service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  RunRoundTrips(state, address);
  state.SetLabel("transport floor: in-process echo, no brain");
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

void BM_LoopbackBrain(benchmark::State& state) {
  const bool small = state.range(0) == 0;
  const int port = FreePort();
  Daemon daemon(small ? "small" : "default", port);
  if (!daemon.ok()) return state.SkipWithError("could not start brain-server");
  RunRoundTrips(state, "127.0.0.1:" + std::to_string(port));
  state.SetLabel(std::string("brain-server, CPU engine, ") + (small ? "small" : "default") + " field");
}

BENCHMARK(BM_LoopbackEcho)->Iterations(20000)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LoopbackBrain)->Arg(0)->Arg(1)->Iterations(5000)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace fieldbrain

BENCHMARK_MAIN();

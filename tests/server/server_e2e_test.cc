// End to end: the real brain-server binary on a loopback port, driven by the real client library
// (and the raw stub where a test needs the server's own answer).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/brain_client.h"
#include "gmock/gmock.h"
#include "gpu/memory_budget.h"
#include "eventually.h"
#include "gtest/gtest.h"
#include "raw_stream.h"
#include "server_process.h"

#ifndef BRAIN_SERVER_PATH
#error "BRAIN_SERVER_PATH must name the brain-server binary"
#endif

namespace fieldbrain::server {
namespace {

using testing::Eventually;

// The daemon under test and its engine. The defaults are the build tree's binary and the CPU
// engine; a GPU session runs the same tests from a bundle with FIELDBRAIN_E2E_ENGINE=cuda and
// BRAIN_SERVER=<bundle>/bin/brain-server (tests/bench/run_gpu_bench.sh).
std::string FromEnv(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}
const std::string& ServerBinary() {
  static const std::string path = FromEnv("BRAIN_SERVER", BRAIN_SERVER_PATH);
  return path;
}
const std::string& EngineUnderTest() {
  static const std::string engine = FromEnv("FIELDBRAIN_E2E_ENGINE", "cpu");
  return engine;
}

using client::BrainClient;
using client::ClientOptions;
using client::StepResult;
using testing::ChildProcess;
using testing::FrameRequest;
using testing::MakeHello;
using testing::RawStream;
using ::testing::HasSubstr;

constexpr int kSensors = 4;
constexpr int kMotors = 2;
const std::vector<float> kValues = {0.2f, -0.1f, 0.7f, 0.0f};

brain::v1::RobotProfile Profile(const std::string& id) {
  brain::v1::RobotProfile p;
  p.set_robot_id(id);
  p.set_robot_type("e2e");
  p.set_sensor_count(kSensors);
  p.set_motor_count(kMotors);
  return p;
}

std::unique_ptr<BrainClient> Connect(const std::string& target, const std::string& id) {
  ClientOptions o;
  o.target = target;
  o.profile = Profile(id);
  absl::StatusOr<std::unique_ptr<BrainClient>> c = BrainClient::Create(std::move(o));
  EXPECT_TRUE(c.ok()) << c.status();
  if (!c.ok()) return nullptr;
  const absl::Status connected = (*c)->WaitConnected(absl::Seconds(30));
  EXPECT_TRUE(connected.ok()) << connected;
  return *std::move(c);
}


class ServerE2eTest : public ::testing::Test {
 protected:
  // Starts the daemon (small field, the engine under test) and waits until it answers
  // GetServerInfo.
  void StartDaemon(std::vector<std::string> extra = {}) {
    // Port 0: the daemon picks free ports and names them in its start-up log.
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    log_path_ = ::testing::TempDir() + "server_e2e_" + test->name() + ".log";
    std::vector<std::string> argv = {ServerBinary(),        "--listen=127.0.0.1:0",
                                     "--engine=" + EngineUnderTest(), "--field=small",
                                     "--max_robots=8",      "--threads=1",
                                     "--shutdown_deadline_s=5"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::optional<ChildProcess> p = ChildProcess::Spawn(argv, log_path_);
    ASSERT_TRUE(p.has_value()) << "cannot start " << ServerBinary();
    daemon_.emplace(std::move(*p));
    const std::optional<testing::DaemonPorts> ports = testing::WaitForDaemonPorts(*daemon_, log_path_, absl::Seconds(30));
    ASSERT_TRUE(ports.has_value()) << "brain-server did not start:\n" << testing::ReadFile(log_path_);
    ports_ = *ports;
    port_ = ports->grpc;
    target_ = absl::StrCat("127.0.0.1:", port_);
    channel_ = grpc::CreateChannel(target_, grpc::InsecureChannelCredentials());
    stub_ = brain::v1::Brain::NewStub(channel_);
    ASSERT_TRUE(Eventually([&] { return Info().has_value() || !daemon_->running(); }));
    ASSERT_TRUE(daemon_->running()) << "brain-server exited at start";
  }

  std::optional<brain::v1::ServerInfo> Info() {
    grpc::ClientContext ctx;
    ctx.set_wait_for_ready(true);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    brain::v1::ServerInfo info;
    if (!stub_->GetServerInfo(&ctx, {}, &info).ok()) return std::nullopt;
    return info;
  }

  void TearDown() override {
    if (HasFailure() && !log_path_.empty()) std::printf("brain-server's log:\n%s", testing::ReadFile(log_path_).c_str());
  }

  std::string log_path_;
  testing::DaemonPorts ports_;
  int port_ = 0;
  std::string target_;
  std::optional<ChildProcess> daemon_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<brain::v1::Brain::Stub> stub_;
};

TEST_F(ServerE2eTest, FourRobotsThousandCyclesEachAllOk) {
  // The robots step as fast as the daemon answers; on a GPU machine that is over the default
  // 1000 frames/s per robot (RATE_LIMITED frames on the H200 of 2026-11-26). The limit has its own
  // tests; this one is about every cycle being served.
  StartDaemon({"--max_frame_hz=0"});
  constexpr int kRobots = 4;
  constexpr int kCycles = 1000;
  std::vector<std::thread> robots;
  std::atomic<int> ok{0};
  std::atomic<int> bad{0};
  std::vector<std::string> first_failure(kRobots);
  for (int r = 0; r < kRobots; ++r) {
    robots.emplace_back([&, r] {
      std::unique_ptr<BrainClient> c = Connect(target_, absl::StrCat("robot-", r));
      if (c == nullptr) return;
      for (int i = 1; i <= kCycles; ++i) {
        // Generous deadline: correctness, not latency, on a shared 2-core machine.
        StepResult s = c->Step(kValues, 0.1f, absl::Seconds(10));
        if (!s.safe_stop && s.status == brain::v1::OK && s.cycle == static_cast<uint64_t>(i) &&
            s.motors.size() == kMotors) {
          ++ok;
        } else {
          if (bad++ == 0 || first_failure[r].empty()) {
            first_failure[r] = absl::StrCat("cycle ", i, ": ", s.reason, " status ",
                                            brain::v1::FrameStatus_Name(s.status), " brain cycle ",
                                            s.cycle);
          }
        }
      }
    });
  }
  for (auto& t : robots) t.join();
  for (const std::string& f : first_failure) EXPECT_TRUE(f.empty()) << f;
  EXPECT_EQ(ok.load(), kRobots * kCycles);
  std::optional<brain::v1::ServerInfo> info = Info();
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->cycles_total(), static_cast<uint64_t>(kRobots * kCycles));
}

TEST_F(ServerE2eTest, TinyDeadlineAgainstSlowBatchWindowIsASafeStop) {
  // A robot that sends nothing keeps every window open: the others' frames wait 300 ms.
  StartDaemon({"--batch_window_us=300000"});
  std::unique_ptr<BrainClient> quiet = Connect(target_, "quiet");
  ASSERT_NE(quiet, nullptr);
  std::unique_ptr<BrainClient> c = Connect(target_, "hasty");
  ASSERT_NE(c, nullptr);
  StepResult s = c->Step(kValues, std::nullopt, absl::Milliseconds(2));
  EXPECT_TRUE(s.safe_stop);
  EXPECT_FALSE(s.reason.empty());
  ASSERT_EQ(s.motors.size(), static_cast<size_t>(kMotors));
  for (float m : s.motors) EXPECT_EQ(m, 0.0f);

  // The server's own verdict on such a frame: DEADLINE_EXCEEDED, zero motors, not run.
  RawStream raw(stub_.get());
  ASSERT_TRUE(raw.Open(MakeHello("hasty-raw", kSensors, kMotors)).has_value());
  std::optional<brain::v1::MotorFrame> late = raw.Step(FrameRequest(1, kValues, 0.0f, 2000));
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(late->status(), brain::v1::DEADLINE_EXCEEDED) << late->detail();
  for (float m : late->values()) EXPECT_EQ(m, 0.0f);
  EXPECT_EQ(late->cycle(), 0u);
  std::optional<brain::v1::MotorFrame> patient = raw.Step(FrameRequest(2, kValues));
  ASSERT_TRUE(patient.has_value());
  EXPECT_EQ(patient->status(), brain::v1::OK);
  EXPECT_EQ(patient->cycle(), 1u);
}

TEST_F(ServerE2eTest, KilledClientLeavesTheDaemonServingOthers) {
  StartDaemon();
  std::unique_ptr<BrainClient> steady = Connect(target_, "steady");
  ASSERT_NE(steady, nullptr);
  // The victim is this test binary in client mode (see main below), so it can be SIGKILLed.
  std::optional<ChildProcess> victim =
      ChildProcess::Spawn({"/proc/self/exe", "--client_child=" + target_, "--robot=victim"});
  ASSERT_TRUE(victim.has_value());
  ASSERT_TRUE(Eventually([&] {
    std::optional<brain::v1::ServerInfo> i = Info();
    return i && i->sessions_active() == 2;
  })) << "the victim never connected";
  absl::SleepFor(absl::Milliseconds(200));  // let it be mid-stream
  victim->Signal(SIGKILL);
  ASSERT_TRUE(victim->WaitExit(absl::Seconds(30)).has_value());

  for (int i = 0; i < 200; ++i) {
    StepResult s = steady->Step(kValues, std::nullopt, absl::Seconds(10));
    ASSERT_FALSE(s.safe_stop) << s.reason;
    EXPECT_EQ(s.status, brain::v1::OK);
  }
  EXPECT_TRUE(Eventually([&] {
    std::optional<brain::v1::ServerInfo> i = Info();
    return i && i->sessions_active() == 1;
  })) << "the killed client's session was never detached";
  EXPECT_TRUE(daemon_->running());
}

TEST_F(ServerE2eTest, SigtermExitsZeroWithinTheShutdownDeadline) {
  StartDaemon({"--shutdown_deadline_s=3"});
  std::unique_ptr<BrainClient> c = Connect(target_, "busy");
  ASSERT_NE(c, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int> steps{0};
  std::thread loop([&] {
    while (!stop) {
      c->Step(kValues, std::nullopt, absl::Milliseconds(500));
      ++steps;
    }
  });
  ASSERT_TRUE(Eventually([&] { return steps.load() > 20; }));
  daemon_->Signal(SIGTERM);
  // 3 s deadline plus generous room for a busy machine; the daemon needs far less.
  std::optional<int> status = daemon_->WaitExit(absl::Seconds(3 + 12));
  stop = true;
  loop.join();
  ASSERT_TRUE(status.has_value()) << "still running after SIGTERM";
  ASSERT_TRUE(WIFEXITED(*status)) << "killed by signal " << WTERMSIG(*status);
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

TEST_F(ServerE2eTest, ServesMetricsOverHttp) {
  StartDaemon({"--metrics_listen=127.0.0.1:0"});
  const int metrics_port = ports_.metrics;
  ASSERT_GT(metrics_port, 0);
  std::unique_ptr<BrainClient> c = Connect(target_, "measured");
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < 5; ++i) ASSERT_FALSE(c->Step(kValues, 0.0f, absl::Seconds(10)).safe_stop);
  std::string body;
  ASSERT_TRUE(Eventually([&] {
    body = testing::HttpGet(metrics_port, "/metrics");
    return absl::StrContains(body, "brain_cycles_total 5");
  })) << body;
  EXPECT_THAT(body, HasSubstr("brain_sessions_active 1"));
  EXPECT_THAT(body, HasSubstr("brain_build_info{engine=\"" + EngineUnderTest() + "\""));
  EXPECT_THAT(body, HasSubstr("brain_engine_info{engine=\"" + EngineUnderTest() + "\",reason=\""));
}

TEST(ServerFlagsE2eTest, BadFlagsExitNonZeroWithAMessage) {
  for (const char* bad : {"--max_robots=0", "--engine=tpu", "--field=huge", "--listen=nowhere"}) {
    std::optional<ChildProcess> p = ChildProcess::Spawn({ServerBinary(), bad});
    ASSERT_TRUE(p.has_value());
    std::optional<int> status = p->WaitExit(absl::Seconds(30));
    ASSERT_TRUE(status.has_value()) << bad;
    ASSERT_TRUE(WIFEXITED(*status)) << bad;
    EXPECT_NE(WEXITSTATUS(*status), 0) << bad;
  }
}

// A pool larger than the machine's free memory is refused at start, with the figures and the
// flags that make it smaller, instead of the daemon being killed by the kernel later. The CPU
// engine's check (host memory); the CUDA engine's (device memory) is a gpu test, since a GPU of
// 80 GiB or more holds even the largest pool the flags allow.
TEST(ServerFlagsE2eTest, APoolThatDoesNotFitIsRefusedNamingTheFlags) {
  // The pool the flags below ask for: a field per robot and per batch row (4608 fields).
  constexpr int kMaxRobots = 4096, kMaxBatch = 512;
  // It fits a machine with more free memory than that, such as the 128 GiB GPU machines: nothing
  // can be refused there.
  const int64_t largest_pool_bytes =
      int64_t(kMaxRobots + kMaxBatch) * FieldShape::Default().floats() * int64_t(sizeof(float));
  if (const std::optional<int64_t> available = HostMemoryAvailable(); available && *available > largest_pool_bytes) {
    GTEST_SKIP() << "this machine has " << FormatBytes(*available) << " free, more than the largest pool";
  }
  const std::string log_path = ::testing::TempDir() + "oversized_pool_stderr.log";
  // 4096 default-field robots: 36 GiB of fields, more than any of our test machines has free.
  std::optional<ChildProcess> p = ChildProcess::Spawn(
      {ServerBinary(), "--listen=127.0.0.1:0", "--engine=cpu", "--field=default",
       absl::StrCat("--max_robots=", kMaxRobots), absl::StrCat("--max_batch=", kMaxBatch)},
      log_path);
  ASSERT_TRUE(p.has_value());
  std::optional<int> status = p->WaitExit(absl::Seconds(60));
  ASSERT_TRUE(status.has_value()) << "still running with a 36 GiB pool";
  ASSERT_TRUE(WIFEXITED(*status)) << "killed by signal " << WTERMSIG(*status);
  EXPECT_EQ(WEXITSTATUS(*status), 1);
  std::ifstream in(log_path);
  std::stringstream log;
  log << in.rdbuf();
  EXPECT_THAT(log.str(), HasSubstr("RESOURCE_EXHAUSTED"));
  EXPECT_THAT(log.str(), HasSubstr("4608 fields"));
  EXPECT_THAT(log.str(), HasSubstr("--max_robots"));
  EXPECT_THAT(log.str(), HasSubstr("--field=small"));
}

// Client mode for the kill test: connect and step until killed.
int RunClientChild(const std::string& target, const std::string& robot) {
  ClientOptions o;
  o.target = target;
  o.profile = Profile(robot);
  absl::StatusOr<std::unique_ptr<BrainClient>> c = BrainClient::Create(std::move(o));
  if (!c.ok()) return 3;
  for (;;) (*c)->Step(kValues, std::nullopt, absl::Seconds(1));
}

}  // namespace
}  // namespace fieldbrain::server

int main(int argc, char** argv) {
  std::string child_target;
  std::string robot = "child";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (absl::StartsWith(a, "--client_child=")) child_target = a.substr(std::strlen("--client_child="));
    if (absl::StartsWith(a, "--robot=")) robot = a.substr(std::strlen("--robot="));
  }
  if (!child_target.empty()) return fieldbrain::server::RunClientChild(child_target, robot);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

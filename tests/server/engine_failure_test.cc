// A daemon whose engine fails (a GPU's device error, injected here into the CPU engine through
// the test-only --test_fail_engine_after_batches) must say so: health NOT_SERVING for the server
// and for brain.v1.Brain, brain_engine_healthy 0, one log line, and every stream ended with
// UNAVAILABLE so that robots reconnect to another server, while new streams are refused.
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "brain/v1/brain.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "raw_stream.h"
#include "server_process.h"

namespace fieldbrain::server {
namespace {

using grpc::health::v1::HealthCheckResponse;
using testing::ChildProcess;
using testing::FrameRequest;
using testing::MakeHello;
using testing::RawStream;
using ::testing::HasSubstr;

constexpr int kFailAfterBatches = 20;
constexpr int kRobots = 3;
constexpr char kFailureLog[] = "engine failed and refuses every batch";

int CountOccurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class EngineFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_path_ = ::testing::TempDir() + "engine_failure_test_stderr.log";
    std::optional<ChildProcess> child = ChildProcess::Spawn(
        {BRAIN_SERVER_PATH, "--listen=127.0.0.1:0", "--engine=cpu", "--field=small", "--max_robots=4",
         "--threads=1", "--batch_window_us=0", "--metrics_listen=127.0.0.1:0",
         absl::StrCat("--test_fail_engine_after_batches=", kFailAfterBatches)},
        log_path_);
    ASSERT_TRUE(child.has_value());
    daemon_.emplace(std::move(*child));
    const std::optional<testing::DaemonPorts> ports = testing::WaitForDaemonPorts(*daemon_, log_path_, absl::Seconds(30));
    ASSERT_TRUE(ports.has_value()) << "brain-server did not start:\n" << Log();
    port_ = ports->grpc;
    metrics_port_ = ports->metrics;
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials());
    ASSERT_TRUE(channel_->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(20)))
        << "brain-server did not come up";
    stub_ = brain::v1::Brain::NewStub(channel_);
    health_ = grpc::health::v1::Health::NewStub(channel_);
  }

  std::optional<HealthCheckResponse::ServingStatus> Health(const std::string& service) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    if (!health_->Check(&ctx, request, &response).ok()) return std::nullopt;
    return response.status();
  }

  std::string Log() const { return testing::ReadFile(log_path_); }

  int port_ = 0, metrics_port_ = 0;
  std::string log_path_;
  std::optional<ChildProcess> daemon_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<brain::v1::Brain::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

TEST_F(EngineFailureTest, HealthMetricLogAndStreamsAllSayTheEngineFailed) {
  EXPECT_EQ(Health(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("brain.v1.Brain"), HealthCheckResponse::SERVING);
  EXPECT_THAT(testing::HttpGet(metrics_port_, "/metrics"), HasSubstr("brain_engine_healthy 1"));

  // Robots step in lockstep until their streams end. The engine runs kFailAfterBatches batches,
  // then every batch fails; each robot sees OK answers, then at most a few INTERNAL_ERRORs, then
  // the end of its stream.
  std::vector<grpc::Status> ends(kRobots);
  std::vector<int> ok_answers(kRobots, 0), error_answers(kRobots, 0);
  std::vector<std::thread> robots;
  for (int r = 0; r < kRobots; ++r) {
    robots.emplace_back([&, r] {
      RawStream stream(stub_.get());
      if (!stream.Open(MakeHello(absl::StrCat("robot-", r)))) return;
      // Bounded: a daemon that never ends the streams fails the test below, not by timeout.
      for (uint64_t seq = 1; seq < 10000 && error_answers[r] < 100; ++seq) {
        std::optional<brain::v1::MotorFrame> m = stream.Step(FrameRequest(seq, {0.1f, 0.2f, -0.3f, 0.4f}));
        if (!m.has_value()) break;
        if (m->status() == brain::v1::OK) ++ok_answers[r];
        if (m->status() == brain::v1::INTERNAL_ERROR) ++error_answers[r];
      }
      if (error_answers[r] >= 100) stream.Cancel();
      ends[r] = stream.Finish();
    });
  }
  for (std::thread& t : robots) t.join();

  int ok_total = 0;
  for (int r = 0; r < kRobots; ++r) {
    EXPECT_EQ(ends[r].error_code(), grpc::StatusCode::UNAVAILABLE) << "robot " << r << ": " << ends[r].error_message();
    EXPECT_THAT(ends[r].error_message(), HasSubstr("engine failed"));
    EXPECT_LE(error_answers[r], 8) << "robot " << r << " kept getting INTERNAL_ERROR instead of an end";
    ok_total += ok_answers[r];
  }
  // Each batch runs at least one robot's frame and at most all of them.
  EXPECT_GE(ok_total, kFailAfterBatches);
  EXPECT_LE(ok_total, kFailAfterBatches * kRobots);

  EXPECT_EQ(Health(""), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Health("brain.v1.Brain"), HealthCheckResponse::NOT_SERVING);
  const std::string metrics = testing::HttpGet(metrics_port_, "/metrics");
  EXPECT_THAT(metrics, HasSubstr("brain_engine_healthy 0"));
  EXPECT_THAT(metrics, HasSubstr("brain_frames_rejected_total{reason=\"engine_error\"}"));

  // A robot arriving now is sent away at once.
  RawStream late(stub_.get(), absl::Seconds(20));
  EXPECT_FALSE(late.Open(MakeHello("late-robot")).has_value());
  const grpc::Status late_end = late.Finish();
  EXPECT_EQ(late_end.error_code(), grpc::StatusCode::UNAVAILABLE) << late_end.error_message();

  daemon_->Signal(SIGTERM);
  const std::optional<int> status = daemon_->WaitExit(absl::Seconds(20));
  ASSERT_TRUE(status.has_value()) << "still running after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  const std::string log = Log();
  EXPECT_EQ(CountOccurrences(log, kFailureLog), 1) << log;
  EXPECT_THAT(log, HasSubstr("injected engine failure"));
}

TEST(EngineFailureFlagTest, TheHookIsRefusedOutsideTheCpuEngine) {
  const std::string log_path = ::testing::TempDir() + "engine_failure_flag_stderr.log";
  std::optional<ChildProcess> child =
      ChildProcess::Spawn({BRAIN_SERVER_PATH, "--listen=127.0.0.1:0", "--engine=auto",
                           "--test_fail_engine_after_batches=5"},
                          log_path);
  ASSERT_TRUE(child.has_value());
  const std::optional<int> status = child->WaitExit(absl::Seconds(30));
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  std::ifstream in(log_path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("--engine=cpu only"));
}

}  // namespace
}  // namespace fieldbrain::server

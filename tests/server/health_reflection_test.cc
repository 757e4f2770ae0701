// The real brain-server binary serves the standard gRPC health and reflection services beside
// brain.v1.Brain, so load balancers can probe it and grpcurl-style tools can discover it.
// (A child process: this test's own client stubs of the reflection protocol would clash with the
// server side's generated descriptors if the daemon's libraries were linked in.)
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server_process.h"

namespace fieldbrain::server {
namespace {

using testing::ChildProcess;

class HealthReflectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = testing::PickFreePort();
    const int port = port_;
    std::optional<ChildProcess> child = ChildProcess::Spawn(
        {BRAIN_SERVER_PATH, "--listen=127.0.0.1:" + std::to_string(port), "--engine=cpu", "--field=small",
         "--max_robots=1", "--shutdown_deadline_s=30"});
    ASSERT_TRUE(child.has_value());
    daemon_ = std::make_unique<ChildProcess>(std::move(*child));
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
    ASSERT_TRUE(channel_->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(20)))
        << "brain-server did not come up";
  }
  void TearDown() override {
    if (!daemon_) return;
    // The channel stays connected: an idle robot connection must not hold the shutdown for its
    // whole deadline (30 s here; it takes milliseconds when nothing is in flight).
    daemon_->Signal(SIGTERM);
    const std::optional<int> status = daemon_->WaitExit(absl::Seconds(10));
    ASSERT_TRUE(status.has_value());
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  }

  int port_ = 0;
  std::unique_ptr<ChildProcess> daemon_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(HealthReflectionTest, HealthReportsServing) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = health->Check(&ctx, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

// The container's HEALTHCHECK: brain-server --health_probe exits 0 for a serving daemon and 1
// where none answers.
TEST_F(HealthReflectionTest, HealthProbeModeExitsZeroOnlyForAServingDaemon) {
  auto probe_exit = [](int target_port) -> std::optional<int> {
    std::optional<ChildProcess> probe =
        ChildProcess::Spawn({BRAIN_SERVER_PATH, "--health_probe=127.0.0.1:" + std::to_string(target_port)});
    if (!probe.has_value()) return std::nullopt;
    const std::optional<int> status = probe->WaitExit(absl::Seconds(20));
    if (!status.has_value() || !WIFEXITED(*status)) return std::nullopt;
    return WEXITSTATUS(*status);
  };
  EXPECT_EQ(probe_exit(port_), 0);
  EXPECT_EQ(probe_exit(testing::PickFreePort()), 1) << "nothing listens there";
}

TEST_F(HealthReflectionTest, ReflectionListsTheServices) {
  auto reflection = grpc::reflection::v1alpha::ServerReflection::NewStub(channel_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = reflection->ServerReflectionInfo(&ctx);
  grpc::reflection::v1alpha::ServerReflectionRequest request;
  request.set_list_services("*");
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_TRUE(response.has_list_services_response()) << response.DebugString();
  std::vector<std::string> names;
  for (const auto& s : response.list_services_response().service()) names.push_back(s.name());
  for (const char* wanted : {"brain.v1.Brain", "grpc.health.v1.Health"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), wanted), names.end()) << wanted << " not listed";
  }
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace fieldbrain::server

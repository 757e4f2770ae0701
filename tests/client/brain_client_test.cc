// BrainClient against the fake in-process Brain service: answers, deadlines, server rejections,
// dropped streams with reconnect and resume, a server that is down at first, and Close.
#include "client/brain_client.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/black_hole_proxy.h"
#include "tests/client/fake_brain_server.h"

namespace fieldbrain::client {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::FakeBrainServer;

constexpr absl::Duration kGenerous = absl::Seconds(10);  // correctness timeouts only

brain::v1::RobotProfile Profile(const std::string& id = "robot-a") {
  brain::v1::RobotProfile p;
  p.set_robot_id(id);
  p.set_robot_type("test");
  p.set_sensor_count(3);
  p.set_motor_count(2);
  p.set_has_reward(true);
  return p;
}

ClientOptions Options(const std::string& target) {
  ClientOptions o;
  o.target = target;
  o.profile = Profile();
  o.seed = 7;
  o.fresh = true;
  o.initial_backoff = absl::Milliseconds(20);
  o.max_backoff = absl::Milliseconds(200);
  return o;
}

std::unique_ptr<BrainClient> Connect(const FakeBrainServer& server) {
  auto client = BrainClient::Create(Options(server.target()));
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return nullptr;
  EXPECT_TRUE((*client)->WaitConnected(kGenerous).ok());
  return std::move(*client);
}

TEST(BrainClientTest, CreateRejectsBadOptions) {
  ClientOptions no_target = Options("");
  EXPECT_EQ(BrainClient::Create(no_target).status().code(), absl::StatusCode::kInvalidArgument);

  ClientOptions bad_names = Options("127.0.0.1:1");
  bad_names.profile.add_sensor_names("only-one");
  EXPECT_EQ(BrainClient::Create(bad_names).status().code(), absl::StatusCode::kInvalidArgument);

  ClientOptions no_motors = Options("127.0.0.1:1");
  no_motors.profile.set_motor_count(0);
  EXPECT_EQ(BrainClient::Create(no_motors).status().code(), absl::StatusCode::kInvalidArgument);

  ClientOptions bad_backoff = Options("127.0.0.1:1");
  bad_backoff.max_backoff = absl::Milliseconds(1);
  EXPECT_EQ(BrainClient::Create(bad_backoff).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BrainClientTest, HelloWelcomeAndStepReturnsMotors) {
  auto server = FakeBrainServer::Start();
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->connected());

  const std::vector<brain::v1::Hello> hellos = server->hellos();
  ASSERT_EQ(hellos.size(), 1u);
  EXPECT_EQ(hellos[0].profile().robot_id(), "robot-a");
  EXPECT_EQ(hellos[0].profile().sensor_count(), 3u);
  EXPECT_EQ(hellos[0].seed(), 7u);
  EXPECT_TRUE(hellos[0].fresh());
  EXPECT_EQ(hellos[0].resume_token(), "");
  EXPECT_EQ(server->robot_id_headers().at(0), "robot-a") << "the key a routing proxy hashes on";

  const auto welcome = client->welcome();
  ASSERT_TRUE(welcome.has_value());
  EXPECT_EQ(welcome->session_id(), "session-1");
  EXPECT_EQ(welcome->resume_token(), "resume-robot-a-1");
  EXPECT_EQ(welcome->engine(), "fake");

  const std::vector<float> sensors = {0.2f, -0.4f, 0.6f};
  StepResult r = client->Step(sensors, 0.5f, kGenerous);
  EXPECT_FALSE(r.safe_stop) << r.reason;
  EXPECT_EQ(r.cause, StopCause::kNone);
  EXPECT_EQ(r.reason, "");
  EXPECT_EQ(r.status, brain::v1::OK);
  EXPECT_THAT(r.motors, ElementsAre(FloatEq(0.1f), FloatEq(-0.2f)));
  EXPECT_FLOAT_EQ(r.confidence, 0.75f);
  EXPECT_FLOAT_EQ(r.prediction_error, 0.125f);
  EXPECT_EQ(r.seq, 1u);
  EXPECT_EQ(r.cycle, 1u);
  EXPECT_GT(r.round_trip, absl::ZeroDuration());

  r = client->Step(std::vector<float>{-1.0f, 1.0f, 0.0f}, std::nullopt, kGenerous);
  EXPECT_FALSE(r.safe_stop) << r.reason;
  EXPECT_THAT(r.motors, ElementsAre(FloatEq(-0.5f), FloatEq(0.5f)));
  EXPECT_EQ(r.seq, 2u);
  EXPECT_EQ(r.cycle, 2u);
}

TEST(BrainClientTest, DeadlinePassingGivesSafeStopAndTheLateFrameIsDropped) {
  auto server = FakeBrainServer::Start();
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  ASSERT_NE(client, nullptr);

  server->set_delay(absl::Milliseconds(400));
  StepResult late = client->Step(std::vector<float>{0.2f, -0.4f, 0.6f}, std::nullopt,
                                 absl::Milliseconds(30));
  EXPECT_TRUE(late.safe_stop);
  EXPECT_EQ(late.cause, StopCause::kDeadline);
  EXPECT_EQ(late.reason, "deadline of 30ms passed");
  EXPECT_THAT(late.motors, ElementsAre(0.0f, 0.0f));
  EXPECT_EQ(late.seq, 1u);
  EXPECT_EQ(late.cycle, 0u);
  EXPECT_GE(late.round_trip, absl::Milliseconds(30));
  EXPECT_LT(late.round_trip, absl::Milliseconds(390)) << "Step waited for the late answer";

  // The answer to seq 1 arrives while seq 2 waits: seq 2 must get its own motors, not seq 1's.
  server->set_delay(absl::ZeroDuration());
  StepResult next = client->Step(std::vector<float>{0.8f, 0.8f, 0.8f}, std::nullopt, kGenerous);
  EXPECT_FALSE(next.safe_stop) << next.reason;
  EXPECT_EQ(next.seq, 2u);
  EXPECT_EQ(next.cycle, 2u);
  EXPECT_THAT(next.motors, ElementsAre(FloatEq(0.4f), FloatEq(0.4f)));
}

// "Wait as long as it takes" must wait, not overflow the end time and give up at once. The
// server answers after a short delay, so a Step that does not wait sees no answer.
TEST(BrainClientTest, InfiniteOrHugeDeadlineWaitsForTheAnswer) {
  auto server = FakeBrainServer::Start();
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  ASSERT_NE(client, nullptr);
  server->set_delay(absl::Milliseconds(50));
  const std::vector<float> sensors = {0.2f, -0.4f, 0.6f};
  for (absl::Duration deadline :
       {absl::InfiniteDuration(), absl::Hours(24 * 365 * 1000), kMaxStepDeadline}) {
    StepResult r = client->Step(sensors, std::nullopt, deadline);
    EXPECT_FALSE(r.safe_stop) << absl::FormatDuration(deadline) << ": " << r.reason;
    EXPECT_EQ(r.cause, StopCause::kNone) << absl::FormatDuration(deadline);
    EXPECT_THAT(r.motors, ElementsAre(FloatEq(0.1f), FloatEq(-0.2f)))
        << absl::FormatDuration(deadline);
    EXPECT_GE(r.round_trip, absl::Milliseconds(50)) << absl::FormatDuration(deadline);
  }
  EXPECT_NEAR(absl::ToDoubleMinutes(kMaxStepDeadline), 71.58, 0.01);
}

TEST(BrainClientTest, FrameRejectedByServerIsASafeStopWithTheServersReason) {
  auto server = FakeBrainServer::Start();
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  ASSERT_NE(client, nullptr);

  StepResult r = client->Step(std::vector<float>{1.5f, 0.0f, 0.0f}, std::nullopt, kGenerous);
  EXPECT_TRUE(r.safe_stop);
  EXPECT_EQ(r.cause, StopCause::kServer);
  EXPECT_EQ(r.status, brain::v1::OUT_OF_RANGE);
  EXPECT_THAT(r.reason, StartsWith("server: OUT_OF_RANGE: value 0 is 1.5"));
  EXPECT_THAT(r.motors, ElementsAre(0.0f, 0.0f));
  EXPECT_TRUE(client->connected()) << "a frame error must not end the stream";
}

TEST(BrainClientTest, WrongSensorCountIsRejectedLocally) {
  auto server = FakeBrainServer::Start();
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  ASSERT_NE(client, nullptr);

  StepResult r = client->Step(std::vector<float>{0.1f, 0.2f}, std::nullopt, kGenerous);
  EXPECT_TRUE(r.safe_stop);
  EXPECT_EQ(r.cause, StopCause::kBadInput);
  EXPECT_EQ(r.reason, "sensor count 2 differs from the profile's 3");
  EXPECT_THAT(r.motors, ElementsAre(0.0f, 0.0f));
  EXPECT_EQ(server->frames_answered(), 0u);
}

TEST(BrainClientTest, DroppedStreamIsLinkDownThenReconnectsWithResumeToken) {
  auto server = FakeBrainServer::Start();
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  ASSERT_NE(client, nullptr);
  const std::vector<float> sensors = {0.2f, -0.4f, 0.6f};
  ASSERT_FALSE(client->Step(sensors, std::nullopt, kGenerous).safe_stop);

  server->DropStreamsOnNextFrame();
  StepResult down = client->Step(sensors, std::nullopt, kGenerous);
  EXPECT_TRUE(down.safe_stop);
  EXPECT_EQ(down.cause, StopCause::kLinkDown);
  EXPECT_EQ(down.reason, "link down: UNAVAILABLE: fake server dropped the stream");
  EXPECT_THAT(down.motors, ElementsAre(0.0f, 0.0f));

  ASSERT_TRUE(server->WaitForHellos(2, kGenerous));
  ASSERT_TRUE(client->WaitConnected(kGenerous).ok());
  const std::vector<brain::v1::Hello> hellos = server->hellos();
  EXPECT_EQ(hellos[1].resume_token(), "resume-robot-a-1");
  EXPECT_FALSE(hellos[1].fresh()) << "a reconnect must not throw the brain away";
  EXPECT_EQ(hellos[1].seed(), 7u);
  EXPECT_EQ(hellos[1].profile().robot_id(), "robot-a");
  EXPECT_EQ(client->welcome()->session_id(), "session-2");
  EXPECT_TRUE(client->welcome()->resumed());

  StepResult back = client->Step(sensors, std::nullopt, kGenerous);
  EXPECT_FALSE(back.safe_stop) << back.reason;
  EXPECT_THAT(back.motors, ElementsAre(FloatEq(0.1f), FloatEq(-0.2f)));
  EXPECT_EQ(back.seq, 3u);
  EXPECT_EQ(back.cycle, 1u);  // the fake counts cycles per stream
}

// A server that goes silent without closing TCP (through a proxy that turns into a black hole)
// is noticed by the client's keepalive: the link goes down within about 15 s (10-15 s here) and
// Steps say so, instead of the stream looking alive until TCP gives up.
TEST(BrainClientTest, SilentServerIsNoticedByKeepalive) {
  auto server = FakeBrainServer::Start();
  ASSERT_NE(server, nullptr);
  auto proxy = testing::BlackHoleProxy::Start(server->port());
  ASSERT_NE(proxy, nullptr);
  auto client = BrainClient::Create(Options(proxy->target()));
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->WaitConnected(kGenerous).ok());
  const std::vector<float> sensors = {0.2f, -0.4f, 0.6f};
  ASSERT_FALSE((*client)->Step(sensors, std::nullopt, kGenerous).safe_stop);

  proxy->BlackHole();
  const absl::Time silent = absl::Now();
  while ((*client)->connected() && absl::Now() - silent < absl::Seconds(30)) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  const absl::Duration noticed = absl::Now() - silent;
  ASSERT_FALSE((*client)->connected())
      << "still connected " << absl::FormatDuration(noticed) << " after the server went silent";
  EXPECT_LE(noticed, absl::Seconds(20));
  const StepResult r = (*client)->Step(sensors, std::nullopt, kGenerous);
  EXPECT_TRUE(r.safe_stop);
  EXPECT_EQ(r.cause, StopCause::kLinkDown) << r.reason;
  EXPECT_LT(r.round_trip, absl::Seconds(1)) << "a known-dead link must not wait for the deadline";
}

TEST(BrainClientTest, RefusedResumeTokenFallsBackToANewBrain) {
  auto server = FakeBrainServer::Start();
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  ASSERT_NE(client, nullptr);
  server->set_refuse_resume(true);
  server->DropStreamsOnNextFrame();
  EXPECT_EQ(client->Step(std::vector<float>{0, 0, 0}, std::nullopt, kGenerous).cause,
            StopCause::kLinkDown);

  ASSERT_TRUE(server->WaitForHellos(3, kGenerous));
  ASSERT_TRUE(client->WaitConnected(kGenerous).ok());
  const std::vector<brain::v1::Hello> hellos = server->hellos();
  EXPECT_EQ(hellos[1].resume_token(), "resume-robot-a-1");  // refused
  EXPECT_EQ(hellos[2].resume_token(), "");                  // then a new brain
  EXPECT_EQ(client->welcome()->session_id(), "session-3");
  EXPECT_FALSE(client->Step(std::vector<float>{0, 0, 0}, std::nullopt, kGenerous).safe_stop);
}

TEST(BrainClientTest, ATokenKeptFromAnEarlierRunIsPresentedOnTheFirstHelloOnly) {
  auto server = FakeBrainServer::Start();
  ASSERT_NE(server, nullptr);
  ClientOptions options = Options(server->target());
  options.resume_token = "kept-from-yesterday";
  auto client = BrainClient::Create(options);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->WaitConnected(kGenerous).ok());
  server->DropStreamsOnNextFrame();
  (*client)->Step(std::vector<float>{0, 0, 0}, std::nullopt, kGenerous);
  ASSERT_TRUE(server->WaitForHellos(2, kGenerous));
  const std::vector<brain::v1::Hello> hellos = server->hellos();
  EXPECT_EQ(hellos[0].resume_token(), "kept-from-yesterday");
  EXPECT_FALSE(hellos[0].fresh()) << "a token asks for the kept brain, fresh would discard it";
  EXPECT_EQ(hellos[1].resume_token(), "resume-robot-a-1");  // then the Welcome's
}

TEST(BrainClientTest, ServerDownAtFirstThenUpConnectsByBackoff) {
  int port = 0;
  {
    auto probe = FakeBrainServer::Start();  // find a free port, then free it again
    ASSERT_NE(probe, nullptr);
    port = probe->port();
  }
  auto client = BrainClient::Create(Options("127.0.0.1:" + std::to_string(port)));
  ASSERT_TRUE(client.ok());
  StepResult r = (*client)->Step(std::vector<float>{0, 0, 0}, std::nullopt, kGenerous);
  EXPECT_TRUE(r.safe_stop);
  EXPECT_EQ(r.cause, StopCause::kLinkDown);
  EXPECT_THAT(r.reason, StartsWith("link down: "));
  EXPECT_LT(r.round_trip, absl::Seconds(5)) << "no link must not wait for the deadline";
  const absl::Status wait = (*client)->WaitConnected(absl::Milliseconds(300));
  EXPECT_EQ(wait.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(wait.message(), HasSubstr("last link error"));

  auto server = FakeBrainServer::Start(port);
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE((*client)->WaitConnected(kGenerous).ok());
  EXPECT_FALSE((*client)->Step(std::vector<float>{0, 0, 0}, std::nullopt, kGenerous).safe_stop);
  EXPECT_EQ(server->hellos().size(), 1u);
}

TEST(BrainClientTest, CloseWakesAWaitingStepAndIsIdempotent) {
  auto server = FakeBrainServer::Start();
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  ASSERT_NE(client, nullptr);
  server->set_delay(absl::Seconds(1));

  StepResult blocked;
  std::thread stepper([&] {
    blocked = client->Step(std::vector<float>{0, 0, 0}, std::nullopt, absl::Seconds(30));
  });
  absl::SleepFor(absl::Milliseconds(100));
  client->Close();
  stepper.join();
  EXPECT_TRUE(blocked.safe_stop);
  EXPECT_EQ(blocked.cause, StopCause::kClosed);
  EXPECT_EQ(blocked.reason, "client closed");
  EXPECT_LT(blocked.round_trip, absl::Seconds(20)) << "Close must not wait for the deadline";

  client->Close();
  EXPECT_FALSE(client->connected());
  EXPECT_EQ(client->WaitConnected(absl::Seconds(1)).code(),
            absl::StatusCode::kFailedPrecondition);
  StepResult after = client->Step(std::vector<float>{0, 0, 0}, std::nullopt, kGenerous);
  EXPECT_EQ(after.cause, StopCause::kClosed);
  EXPECT_THAT(after.motors, ElementsAre(0.0f, 0.0f));
}

TEST(BrainClientTest, DestructorStopsAReconnectingClient) {
  // Nothing listens: the background thread is in its backoff loop when the client goes away.
  auto client = BrainClient::Create(Options("127.0.0.1:1"));
  ASSERT_TRUE(client.ok());
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_FALSE((*client)->connected());
  client->reset();  // joins the thread; a leak or hang fails the test (TIMEOUT / sanitizers)
  SUCCEED();
}

}  // namespace
}  // namespace fieldbrain::client

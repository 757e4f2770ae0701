// The service in-process over a loopback port, driven with the raw generated stub: stream errors,
// in-stream frame errors, sessions, resume, limits, shutdown.
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/sync_stream.h>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "eventually.h"
#include "gtest/gtest.h"
#include "raw_stream.h"
#include "test_server_config.h"
#include "server/brain_server.h"

namespace fieldbrain::server {
namespace {

using testing::Eventually;

using brain::v1::CycleResponse;
using brain::v1::MotorFrame;
using brain::v1::Welcome;
using testing::FrameRequest;
using testing::MakeHello;
using testing::RawStream;
using testing::TestServerConfig;
using ::testing::HasSubstr;
using ::testing::Not;

const std::vector<float> kGood = {0.1f, -0.4f, 0.9f, 0.0f};



void ExpectSafeStop(const MotorFrame& m, brain::v1::FrameStatus status, uint64_t seq) {
  EXPECT_EQ(m.status(), status) << brain::v1::FrameStatus_Name(m.status()) << " " << m.detail();
  EXPECT_EQ(m.seq(), seq);
  EXPECT_FALSE(m.detail().empty());
  ASSERT_EQ(m.values_size(), 2);
  for (float v : m.values()) EXPECT_EQ(v, 0.0f);
}

class BrainServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(TestServerConfig()); }

  void StartServer(const ServerConfig& config) {
    absl::StatusOr<std::unique_ptr<BrainServer>> s = BrainServer::Start(config, "test");
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, -1);
    channel_ = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server_->port()),
                                         grpc::InsecureChannelCredentials(), args);
    stub_ = brain::v1::Brain::NewStub(channel_);
  }

  std::unique_ptr<BrainServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<brain::v1::Brain::Stub> stub_;
};

TEST_F(BrainServiceTest, HelloGetsWelcomeAndFramesGetMotors) {
  RawStream s(stub_.get());
  std::optional<Welcome> w = s.Open(MakeHello("r1"));
  ASSERT_TRUE(w.has_value());
  EXPECT_FALSE(w->resumed());
  EXPECT_EQ(w->cycle(), 0u);
  EXPECT_EQ(w->engine(), "cpu");
  EXPECT_EQ(w->field().channels(), 32u);
  EXPECT_EQ(w->field().x(), 16u);
  EXPECT_EQ(w->limits().max_robots(), 4u);
  EXPECT_EQ(w->limits().max_message_bytes(), 16u * 1024u);
  EXPECT_FALSE(w->resume_token().empty());
  EXPECT_FALSE(w->session_id().empty());
  EXPECT_NE(w->seed(), 0u);
  for (uint64_t seq = 10; seq < 13; ++seq) {
    std::optional<MotorFrame> m = s.Step(FrameRequest(seq, kGood, 0.5f));
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->status(), brain::v1::OK) << m->detail();
    EXPECT_EQ(m->seq(), seq);
    EXPECT_EQ(m->cycle(), seq - 9);
    ASSERT_EQ(m->values_size(), 2);
    for (float v : m->values()) EXPECT_TRUE(v >= -1.0f && v <= 1.0f);
    EXPECT_GE(m->confidence(), 0.0f);
    EXPECT_LE(m->confidence(), 1.0f);
    EXPECT_TRUE(m->detail().empty());
  }
  EXPECT_TRUE(s.Close().ok());
}

TEST_F(BrainServiceTest, BadFramesAreAnsweredInStreamAndTheStreamStaysUp) {
  RawStream s(stub_.get());
  ASSERT_TRUE(s.Open(MakeHello("r1")).has_value());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Bad {
    brain::v1::CycleRequest frame;
    brain::v1::FrameStatus status;
  };
  const std::vector<Bad> bad = {
      {FrameRequest(1, {0.1f, 0.2f}), brain::v1::WRONG_SENSOR_COUNT},
      {FrameRequest(2, {0, 0, 0, 0, 0}), brain::v1::WRONG_SENSOR_COUNT},
      {FrameRequest(3, {0, nan, 0, 0}), brain::v1::NON_FINITE},
      {FrameRequest(4, {0, 0, inf, 0}), brain::v1::NON_FINITE},
      {FrameRequest(5, kGood, inf), brain::v1::NON_FINITE},
      {FrameRequest(6, kGood, nan), brain::v1::NON_FINITE},
      {FrameRequest(7, {0, 0, 0, 1.5f}), brain::v1::OUT_OF_RANGE},
      {FrameRequest(8, {-2.0f, 0, 0, 0}), brain::v1::OUT_OF_RANGE},
      {FrameRequest(9, kGood, -1.01f), brain::v1::OUT_OF_RANGE},
  };
  for (const Bad& b : bad) {
    std::optional<MotorFrame> m = s.Step(b.frame);
    ASSERT_TRUE(m.has_value()) << "stream ended on a bad frame";
    ExpectSafeStop(*m, b.status, b.frame.sensors().seq());
    EXPECT_EQ(m->cycle(), 0u) << "a rejected frame does not run";
  }
  std::optional<MotorFrame> good = s.Step(FrameRequest(100, kGood));
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(good->status(), brain::v1::OK) << good->detail();
  EXPECT_EQ(good->cycle(), 1u);
  EXPECT_TRUE(s.Close().ok());
  const std::string metrics = server_->metrics().Scrape();
  EXPECT_THAT(metrics, HasSubstr("brain_frames_rejected_total{reason=\"non_finite\"} 4"));
  EXPECT_THAT(metrics, HasSubstr("brain_frames_rejected_total{reason=\"wrong_sensor_count\"} 2"));
  EXPECT_THAT(metrics, HasSubstr("brain_frames_rejected_total{reason=\"out_of_range\"} 3"));
}

TEST_F(BrainServiceTest, FrameBeforeHelloIsInvalidArgument) {
  RawStream s(stub_.get());
  ASSERT_TRUE(s.Write(FrameRequest(1, kGood)));
  const grpc::Status status = s.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "first message must be Hello");
}

TEST_F(BrainServiceTest, SecondHelloIsInvalidArgument) {
  RawStream s(stub_.get());
  const std::optional<Welcome> first = s.Open(MakeHello("r1"));
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(s.Write(testing::HelloRequest(MakeHello("r1"))));
  const grpc::Status status = s.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("Hello sent twice"));
  // The robot's brain was kept: a new stream may take it back with its token once the old one is
  // gone, and without the token it is refused, not replaced.
  ASSERT_TRUE(Eventually([&] { return server_->directory().live() == 0; }));
  RawStream tokenless(stub_.get());
  EXPECT_FALSE(tokenless.Open(MakeHello("r1")).has_value());
  const grpc::Status refused = tokenless.Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("has a kept brain"));
  brain::v1::Hello resume = MakeHello("r1");
  resume.set_resume_token(first->resume_token());
  RawStream again(stub_.get());
  const std::optional<Welcome> back = again.Open(resume);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->resumed());
}

TEST_F(BrainServiceTest, MalformedProfilesAreInvalidArgument) {
  std::vector<brain::v1::Hello> bad;
  bad.push_back(MakeHello(""));
  bad.push_back(MakeHello(std::string(129, 'x')));
  bad.push_back(MakeHello("r", 0, 2));
  bad.push_back(MakeHello("r", kMaxSensors + 1, 2));
  bad.push_back(MakeHello("r", 4, 0));
  bad.push_back(MakeHello("r", 4, kMaxMotors + 1));
  brain::v1::Hello names = MakeHello("r");
  names.mutable_profile()->add_sensor_names("only one");
  bad.push_back(names);
  for (const brain::v1::Hello& hello : bad) {
    RawStream s(stub_.get());
    EXPECT_FALSE(s.Open(hello).has_value());
    const grpc::Status status = s.Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << hello.ShortDebugString() << ": " << status.error_message();
  }
  RawStream ok(stub_.get());
  EXPECT_TRUE(ok.Open(MakeHello(std::string(128, 'x'))).has_value());
}

TEST_F(BrainServiceTest, SecondLiveStreamForOneRobotIsAlreadyExistsAndFirstKeepsWorking) {
  RawStream first(stub_.get());
  ASSERT_TRUE(first.Open(MakeHello("twin")).has_value());
  ASSERT_TRUE(first.Step(FrameRequest(1, kGood)).has_value());
  RawStream second(stub_.get());
  EXPECT_FALSE(second.Open(MakeHello("twin")).has_value());
  const grpc::Status status = second.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(status.error_message(), HasSubstr("twin"));
  std::optional<MotorFrame> m = first.Step(FrameRequest(2, kGood));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->status(), brain::v1::OK);
  EXPECT_EQ(m->cycle(), 2u);
}

TEST_F(BrainServiceTest, OversizedMessageIsResourceExhausted) {
  RawStream s(stub_.get());
  const std::optional<Welcome> big = s.Open(MakeHello("big"));
  ASSERT_TRUE(big.has_value());
  std::vector<float> huge(8000, 0.0f);  // 32 KB of floats, over the 16 KiB cap
  s.Write(FrameRequest(1, huge));
  const grpc::Status status = s.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  // The server is fine: the robot comes back on a new stream once the old one is detached.
  ASSERT_TRUE(Eventually([&] { return server_->directory().live() == 0; }));
  brain::v1::Hello resume = MakeHello("big");
  resume.set_resume_token(big->resume_token());
  RawStream again(stub_.get());
  ASSERT_TRUE(again.Open(resume).has_value()) << again.Finish().error_message();
  std::optional<MotorFrame> m = again.Step(FrameRequest(2, kGood));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->status(), brain::v1::OK);
}

TEST_F(BrainServiceTest, FramesBeyondTheRateLimitAreRateLimitedAndNotRun) {
  server_.reset();
  ServerConfig config = TestServerConfig();
  config.max_frame_hz = 20;
  config.frame_burst = 5;
  StartServer(config);
  RawStream fast(stub_.get());
  ASSERT_TRUE(fast.Open(MakeHello("fast")).has_value());
  RawStream calm(stub_.get());
  ASSERT_TRUE(calm.Open(MakeHello("calm")).has_value());
  int ok = 0, limited = 0;
  uint64_t last_cycle = 0;
  for (int i = 1; i <= 30; ++i) {  // lockstep, far faster than 20 Hz
    std::optional<MotorFrame> m = fast.Step(FrameRequest(uint64_t(i), kGood));
    ASSERT_TRUE(m.has_value());
    if (m->status() == brain::v1::OK) {
      ++ok;
      last_cycle = m->cycle();
    } else {
      ASSERT_EQ(m->status(), brain::v1::RATE_LIMITED);
      EXPECT_THAT(m->detail(), HasSubstr("over 20 frames/s (burst 5)"));
      for (float v : m->values()) EXPECT_EQ(v, 0.0f);
      ++limited;
    }
  }
  // The burst, plus what 20 Hz refills while 30 frames go by (milliseconds each here): some of
  // them must have been refused.
  EXPECT_GE(ok, 5);
  EXPECT_LT(ok, 30);
  EXPECT_EQ(limited, 30 - ok);
  EXPECT_EQ(last_cycle, uint64_t(ok)) << "a limited frame is not run";
  // Another robot is not touched by the first one's limit.
  std::optional<MotorFrame> c = calm.Step(FrameRequest(1, kGood));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->status(), brain::v1::OK);
  // After a pause the bucket has refilled.
  absl::SleepFor(absl::Milliseconds(300));
  std::optional<MotorFrame> later = fast.Step(FrameRequest(31, kGood));
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->status(), brain::v1::OK);
  const std::string metrics = server_->metrics().Scrape();
  EXPECT_THAT(metrics, HasSubstr("brain_frames_rejected_total{reason=\"rate_limited\"} " + std::to_string(limited)));
}

// The limit is the robot's, not its stream's: reconnecting does not refill the burst.
TEST_F(BrainServiceTest, ReconnectingDoesNotRefillTheRateLimit) {
  server_.reset();
  ServerConfig config = TestServerConfig();
  config.max_frame_hz = 1;
  config.frame_burst = 3;
  StartServer(config);
  std::string token;
  {
    RawStream s(stub_.get());
    std::optional<brain::v1::Welcome> w = s.Open(MakeHello("eager"));
    ASSERT_TRUE(w.has_value());
    token = w->resume_token();
    int ok = 0;
    for (int i = 1; i <= 6; ++i) ok += s.Step(FrameRequest(uint64_t(i), kGood))->status() == brain::v1::OK;
    EXPECT_GE(ok, 3);
    EXPECT_TRUE(s.Close().ok());
  }
  RawStream again(stub_.get());
  brain::v1::Hello hello = MakeHello("eager");
  hello.set_resume_token(token);
  ASSERT_TRUE(again.Open(hello).has_value());
  int ok = 0;
  for (int i = 7; i <= 11; ++i) ok += again.Step(FrameRequest(uint64_t(i), kGood))->status() == brain::v1::OK;
  // A fresh bucket would pass its burst of 3; the robot's own refills 1 a second, so fewer pass
  // unless the reconnect took over two seconds.
  EXPECT_LT(ok, 3) << "the reconnect refilled the burst";
}

// The Cycle method as bytes, to send what no generated client can: messages that do not parse.
class BytesStream {
 public:
  explicit BytesStream(grpc::Channel* channel)
      : stream_(grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
            channel, grpc::internal::RpcMethod("/brain.v1.Brain/Cycle", grpc::internal::RpcMethod::BIDI_STREAMING),
            &context_)) {
    context_.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
  }
  bool Write(const std::string& bytes) {
    grpc::Slice slice(bytes.data(), bytes.size());
    grpc::ByteBuffer buffer(&slice, 1);
    return stream_->Write(buffer);
  }
  bool WriteMessage(const google::protobuf::Message& m) { return Write(m.SerializeAsString()); }
  std::optional<brain::v1::CycleResponse> Read() {
    grpc::ByteBuffer buffer;
    if (!stream_->Read(&buffer)) return std::nullopt;
    brain::v1::CycleResponse r;
    if (!grpc::SerializationTraits<brain::v1::CycleResponse>::Deserialize(&buffer, &r).ok()) return std::nullopt;
    return r;
  }
  grpc::Status Finish() {
    stream_->WritesDone();
    grpc::ByteBuffer rest;
    while (stream_->Read(&rest)) {
    }
    return stream_->Finish();
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream_;
};

const std::string kNotProtobuf("\xff\xff\xff\xff\x0f", 5);  // wire type 7 does not exist

TEST_F(BrainServiceTest, AnUndecodableMessageIsInvalidArgumentFirstOrLater) {
  {
    BytesStream first(channel_.get());
    ASSERT_TRUE(first.Write(kNotProtobuf));
    const grpc::Status status = first.Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr("request 1 of this stream is not a brain.v1.CycleRequest"));
  }
  BytesStream later(channel_.get());
  ASSERT_TRUE(later.WriteMessage(testing::HelloRequest(MakeHello("garbled"))));
  const std::optional<brain::v1::CycleResponse> welcome = later.Read();
  ASSERT_TRUE(welcome.has_value() && welcome->has_welcome());
  ASSERT_TRUE(later.WriteMessage(FrameRequest(1, kGood)));
  const std::optional<brain::v1::CycleResponse> answer = later.Read();
  ASSERT_TRUE(answer.has_value() && answer->has_motors());
  EXPECT_EQ(answer->motors().status(), brain::v1::OK);
  ASSERT_TRUE(later.Write(kNotProtobuf));
  const grpc::Status status = later.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("request 3 of this stream"));
  // The robot's brain is kept for a resume, as after any stream error.
  ASSERT_TRUE(Eventually([&] { return server_->directory().live() == 0; }));
  EXPECT_EQ(server_->directory().kept(), 1);
}

TEST_F(BrainServiceTest, WithATokensFileOnlyACoveringTokenDrivesARobot) {
  const std::string tokens = ::testing::TempDir() + "/brain_service_tokens." + std::to_string(::getpid());
  std::ofstream(tokens) << "fleet-token-0123456789 robots=car-*\nspare-token-0123456789 robots=car-9\n";
  server_.reset();
  ServerConfig config = TestServerConfig();
  config.tokens_file = tokens;
  StartServer(config);
  {
    RawStream none(stub_.get());
    EXPECT_FALSE(none.Open(MakeHello("car-1")).has_value());
    const grpc::Status s = none.Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  }
  {
    RawStream wrong(stub_.get(), absl::Seconds(60), "someone-elses-token-987");
    EXPECT_FALSE(wrong.Open(MakeHello("car-1")).has_value());
    EXPECT_EQ(wrong.Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    RawStream other(stub_.get(), absl::Seconds(60), "fleet-token-0123456789");
    EXPECT_FALSE(other.Open(MakeHello("arm-1")).has_value());
    const grpc::Status s = other.Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_THAT(s.error_message(), HasSubstr("may not drive robot_id \"arm-1\""));
    EXPECT_THAT(s.error_message(), Not(HasSubstr("fleet-token")));
  }
  RawStream ok(stub_.get(), absl::Seconds(60), "fleet-token-0123456789");
  ASSERT_TRUE(ok.Open(MakeHello("car-1")).has_value());
  std::optional<MotorFrame> m = ok.Step(FrameRequest(1, kGood));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->status(), brain::v1::OK);
  RawStream spare(stub_.get(), absl::Seconds(60), "spare-token-0123456789");
  ASSERT_TRUE(spare.Open(MakeHello("car-9")).has_value());
  // A reload that takes car-* away from the fleet token ends its live stream at once
  // (PERMISSION_DENIED); a stream whose token still covers its robot runs on; the next Hello is
  // refused.
  std::ofstream(tokens) << "fleet-token-0123456789 robots=arm-*\nspare-token-0123456789 robots=car-9\n";
  ASSERT_TRUE(server_->ReloadTokens().ok());
  const grpc::Status revoked = ok.Finish();
  EXPECT_EQ(revoked.error_code(), grpc::StatusCode::PERMISSION_DENIED) << revoked.error_message();
  EXPECT_THAT(revoked.error_message(), HasSubstr("access revoked by a reload of the tokens file"));
  m = spare.Step(FrameRequest(1, kGood));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->status(), brain::v1::OK);
  RawStream refused(stub_.get(), absl::Seconds(60), "fleet-token-0123456789");
  EXPECT_FALSE(refused.Open(MakeHello("car-2")).has_value());
  EXPECT_EQ(refused.Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // A token taken out of the file altogether: its stream ends UNAUTHENTICATED.
  std::ofstream(tokens) << "fleet-token-0123456789 robots=arm-*\n";
  ASSERT_TRUE(server_->ReloadTokens().ok());
  EXPECT_EQ(spare.Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  std::remove(tokens.c_str());
}

TEST_F(BrainServiceTest, AnXRobotIdHeaderMustNameTheHellosRobot) {
  RawStream other(stub_.get(), absl::Seconds(60), "", "car-1");
  EXPECT_FALSE(other.Open(MakeHello("car-2")).has_value());
  const grpc::Status s = other.Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("the x-robot-id header \"car-1\" differs from the Hello's robot_id \"car-2\""));
  RawStream same(stub_.get(), absl::Seconds(60), "", "car-1");
  ASSERT_TRUE(same.Open(MakeHello("car-1")).has_value());
  EXPECT_EQ(same.Step(FrameRequest(1, kGood))->status(), brain::v1::OK);
}

TEST_F(BrainServiceTest, FloodOfBadFramesDoesNotStarveAnotherRobot) {
  constexpr int kBad = 3000;
  constexpr int kGoodFrames = 100;
  RawStream flood(stub_.get());
  ASSERT_TRUE(flood.Open(MakeHello("flooder")).has_value());
  std::thread writer([&] {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int i = 0; i < kBad; ++i) {
      if (!flood.Write(FrameRequest(i, {nan, 0, 0, 0}))) break;
    }
  });
  int flood_answers = 0;
  bool flood_all_non_finite = true;
  std::thread reader([&] {
    while (flood_answers < kBad) {
      std::optional<CycleResponse> r = flood.Read();
      if (!r) break;
      ++flood_answers;
      flood_all_non_finite &= r->motors().status() == brain::v1::NON_FINITE;
    }
  });
  RawStream calm(stub_.get());
  ASSERT_TRUE(calm.Open(MakeHello("calm")).has_value());
  for (int i = 1; i <= kGoodFrames; ++i) {
    std::optional<MotorFrame> m = calm.Step(FrameRequest(i, kGood));
    ASSERT_TRUE(m.has_value());
    ASSERT_EQ(m->status(), brain::v1::OK) << m->detail();
    EXPECT_EQ(m->cycle(), static_cast<uint64_t>(i));
  }
  writer.join();
  reader.join();
  EXPECT_EQ(flood_answers, kBad);
  EXPECT_TRUE(flood_all_non_finite);
}

TEST_F(BrainServiceTest, ReconnectWithTokenResumesTheSameBrain) {
  std::optional<Welcome> first;
  {
    RawStream s(stub_.get());
    first = s.Open(MakeHello("rover"));
    ASSERT_TRUE(first.has_value());
    for (int i = 1; i <= 3; ++i) ASSERT_TRUE(s.Step(FrameRequest(i, kGood)).has_value());
    EXPECT_TRUE(s.Close().ok());
  }
  ASSERT_TRUE(Eventually([&] { return server_->directory().live() == 0; }));
  brain::v1::Hello hello = MakeHello("rover");
  hello.set_resume_token(first->resume_token());
  RawStream s(stub_.get());
  std::optional<Welcome> w = s.Open(hello);
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(w->resumed());
  EXPECT_EQ(w->cycle(), 3u);
  EXPECT_EQ(w->session_id(), first->session_id());
  EXPECT_EQ(w->seed(), first->seed());
  std::optional<MotorFrame> m = s.Step(FrameRequest(4, kGood));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->cycle(), 4u) << "the cycle continues";
  EXPECT_TRUE(s.Close().ok());
  ASSERT_TRUE(Eventually([&] { return server_->directory().live() == 0; }));

  RawStream fresh_stream(stub_.get());
  brain::v1::Hello fresh = hello;
  fresh.set_fresh(true);
  std::optional<Welcome> f = fresh_stream.Open(fresh);
  ASSERT_TRUE(f.has_value());
  EXPECT_FALSE(f->resumed());
  EXPECT_EQ(f->cycle(), 0u);
  EXPECT_NE(f->session_id(), first->session_id());
  EXPECT_EQ(server_->scheduler().double_releases(), 0);
}

TEST_F(BrainServiceTest, NoFreeSlotIsResourceExhausted) {
  std::vector<std::unique_ptr<RawStream>> live;
  for (int i = 0; i < 4; ++i) {
    live.push_back(std::make_unique<RawStream>(stub_.get()));
    ASSERT_TRUE(live.back()->Open(MakeHello("robot-" + std::to_string(i))).has_value());
  }
  RawStream extra(stub_.get());
  EXPECT_FALSE(extra.Open(MakeHello("robot-4")).has_value());
  const grpc::Status status = extra.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), HasSubstr("brain slots"));
  // A robot that leaves frees room: its kept brain is evicted for the newcomer.
  EXPECT_TRUE(live[0]->Close().ok());
  ASSERT_TRUE(Eventually([&] { return server_->directory().live() == 3; }));
  RawStream late(stub_.get());
  EXPECT_TRUE(late.Open(MakeHello("robot-4")).has_value());
}

TEST_F(BrainServiceTest, CancelledStreamDetachesAndOthersKeepWorking) {
  RawStream other(stub_.get());
  ASSERT_TRUE(other.Open(MakeHello("steady")).has_value());
  {
    RawStream doomed(stub_.get());
    ASSERT_TRUE(doomed.Open(MakeHello("doomed")).has_value());
    for (int i = 0; i < 20; ++i) doomed.Write(FrameRequest(i, kGood));
    doomed.Cancel();
  }
  ASSERT_TRUE(Eventually([&] { return server_->directory().live() == 1; }));
  EXPECT_EQ(server_->directory().kept(), 1);
  for (int i = 1; i <= 20; ++i) {
    std::optional<MotorFrame> m = other.Step(FrameRequest(i, kGood));
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->status(), brain::v1::OK);
  }
}

TEST_F(BrainServiceTest, GetServerInfoReportsEngineLimitsAndSessions) {
  RawStream s(stub_.get());
  ASSERT_TRUE(s.Open(MakeHello("r1")).has_value());
  ASSERT_TRUE(s.Step(FrameRequest(1, kGood)).has_value());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  brain::v1::ServerInfo info;
  ASSERT_TRUE(stub_->GetServerInfo(&ctx, {}, &info).ok());
  EXPECT_EQ(info.version(), "test");
  EXPECT_EQ(info.engine(), "cpu");
  EXPECT_FALSE(info.device().empty());
  EXPECT_EQ(info.field().channels(), 32u);
  EXPECT_EQ(info.limits().max_sensors(), static_cast<uint32_t>(kMaxSensors));
  EXPECT_EQ(info.sessions_active(), 1u);
  EXPECT_EQ(info.cycles_total(), 1u);
}

TEST_F(BrainServiceTest, ShutdownEndsStreamsWithUnavailableAndRefusesNewOnes) {
  RawStream s(stub_.get());
  ASSERT_TRUE(s.Open(MakeHello("r1")).has_value());
  ASSERT_TRUE(s.Step(FrameRequest(1, kGood)).has_value());
  std::thread stopper([&] { server_->Shutdown(); });
  const grpc::Status status = s.Finish();
  stopper.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  RawStream after(stub_.get(), absl::Seconds(5));
  EXPECT_FALSE(after.Open(MakeHello("r2")).has_value());
  EXPECT_EQ(after.Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(server_->scheduler().double_releases(), 0);
}


TEST_F(BrainServiceTest, ShutdownAnswersPendingFramesShuttingDown) {
  server_.reset();
  ServerConfig slow = TestServerConfig();
  slow.batch_window_us = 1'000'000;  // r1's frame waits here for r2's when shutdown begins
  StartServer(slow);
  RawStream s(stub_.get());
  ASSERT_TRUE(s.Open(MakeHello("r1")).has_value());
  RawStream idle(stub_.get());  // sends nothing, so the window stays open
  ASSERT_TRUE(idle.Open(MakeHello("r2")).has_value());
  ASSERT_TRUE(s.Write(FrameRequest(7, kGood)));
  ASSERT_TRUE(Eventually([&] { return server_->scheduler().pending() == 1; }));
  std::thread stopper([&] { server_->Shutdown(); });
  std::optional<CycleResponse> r = s.Read();
  const grpc::Status status = s.Finish();
  stopper.join();
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(r->has_motors());
  ExpectSafeStop(r->motors(), brain::v1::SHUTTING_DOWN, 7);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_EQ(idle.Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(server_->scheduler().cycles_total(), 0u);
}


// Shutdown while every robot's frames are still flowing in: each stream gets answers only to
// frames it sent, each at most once, OK or SHUTTING_DOWN, and then ends UNAVAILABLE. (Frames
// caught in validation when shutdown begins once made the stream write after Finish.)
TEST_F(BrainServiceTest, ShutdownWhileFramesFlowEndsEveryStreamCleanly) {
  constexpr int kRounds = 5;
  constexpr int kRobots = 4;
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) {
      server_.reset();
      StartServer(TestServerConfig());
    }
    std::vector<std::unique_ptr<RawStream>> streams;
    for (int r = 0; r < kRobots; ++r) {
      streams.push_back(std::make_unique<RawStream>(stub_.get()));
      ASSERT_TRUE(streams.back()->Open(MakeHello("flow-" + std::to_string(r))).has_value());
    }
    std::vector<std::atomic<uint64_t>> sent(kRobots);
    std::vector<std::vector<brain::v1::MotorFrame>> answers(kRobots);
    std::vector<grpc::Status> ends(kRobots);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRobots; ++r) {
      threads.emplace_back([&, r] {  // writer: frames as fast as the stream takes them
        for (uint64_t seq = 1; streams[r]->Write(FrameRequest(seq, kGood)); ++seq) sent[r] = seq;
      });
      threads.emplace_back([&, r] {  // reader: every answer until the server ends the stream
        while (std::optional<CycleResponse> a = streams[r]->Read()) {
          if (a->has_motors()) answers[r].push_back(a->motors());
        }
      });
    }
    absl::SleepFor(absl::Milliseconds(50 + 20 * round));
    server_->Shutdown();
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < kRobots; ++r) {
      ends[r] = streams[r]->Finish();
      EXPECT_EQ(ends[r].error_code(), grpc::StatusCode::UNAVAILABLE) << "round " << round << " robot " << r;
      std::set<uint64_t> seen;
      for (const brain::v1::MotorFrame& m : answers[r]) {
        EXPECT_TRUE(seen.insert(m.seq()).second) << "seq " << m.seq() << " answered twice";
        EXPECT_GE(m.seq(), 1u);
        EXPECT_LE(m.seq(), sent[r].load() + 1) << "an answer to a frame never sent";
        EXPECT_TRUE(m.status() == brain::v1::OK || m.status() == brain::v1::SHUTTING_DOWN ||
                    m.status() == brain::v1::SUPERSEDED)
            << brain::v1::FrameStatus_Name(m.status());
      }
      EXPECT_FALSE(answers[r].empty()) << "round " << round << " robot " << r << " got no answer";
    }
  }
}


// A stream that never says Hello is ended (it would hold server resources for ever), while a
// robot that said Hello in time keeps its stream however long it pauses (no stream idle timeout).
TEST_F(BrainServiceTest, StreamsWithoutAHelloAreEndedAfterTheTimeout) {
  server_.reset();
  ServerConfig c = TestServerConfig();
  c.hello_timeout_s = 1;
  c.stream_idle_timeout_s = 0;
  StartServer(c);
  RawStream talker(stub_.get());
  ASSERT_TRUE(talker.Open(MakeHello("talker")).has_value());
  RawStream silent(stub_.get(), absl::Seconds(30));
  const absl::Time start = absl::Now();
  const grpc::Status status = silent.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("no Hello"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(20)) << "ended by the server, not by the test's deadline";
  const std::optional<MotorFrame> m = talker.Step(FrameRequest(1, kGood));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->status(), brain::v1::OK);
}

// Behind a proxy the daemon cannot see a robot vanish (keepalive pings end at the proxy): a stream
// that sends no frame for stream_idle_timeout is ended, its brain kept for a resume, while a robot
// that keeps its tick is never touched.
TEST_F(BrainServiceTest, AStreamSilentForTheIdleTimeoutIsEndedAndItsBrainKept) {
  server_.reset();
  ServerConfig c = TestServerConfig();
  c.stream_idle_timeout_s = 1;
  StartServer(c);
  RawStream ticking(stub_.get());
  std::optional<Welcome> tw = ticking.Open(MakeHello("ticking"));
  ASSERT_TRUE(tw.has_value());
  EXPECT_EQ(tw->limits().stream_idle_timeout_ms(), 1000u);
  RawStream silent(stub_.get(), absl::Seconds(30));
  std::optional<Welcome> first = silent.Open(MakeHello("silent"));
  ASSERT_TRUE(first.has_value());
  for (int i = 1; i <= 2; ++i) ASSERT_TRUE(silent.Step(FrameRequest(i, kGood)).has_value());
  const absl::Time silent_since = absl::Now();
  // The ticking robot sends a frame every 50 ms for 3 s: three idle timeouts, never ended (a gap
  // would have to last 20 ticks, which no load here makes).
  int ticks = 0;
  for (; absl::Now() - silent_since < absl::Seconds(3); ++ticks) {
    const std::optional<MotorFrame> m = ticking.Step(FrameRequest(ticks + 1, kGood));
    ASSERT_TRUE(m.has_value()) << "the ticking robot's stream ended after " << ticks << " ticks";
    ASSERT_EQ(m->status(), brain::v1::OK);
    absl::SleepFor(absl::Milliseconds(50));
  }
  const grpc::Status status = silent.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("no SensorFrame for 1s"));
  ASSERT_TRUE(Eventually([&] { return server_->directory().live() == 1; }));
  EXPECT_EQ(server_->directory().kept(), 1);
  brain::v1::Hello again = MakeHello("silent");
  again.set_resume_token(first->resume_token());
  RawStream resumed(stub_.get());
  std::optional<Welcome> w = resumed.Open(again);
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(w->resumed());
  EXPECT_EQ(w->cycle(), 2u);
  EXPECT_TRUE(ticking.Close().ok());
}

// Open streams are bounded (2 x max_robots + 16): one more is refused, the others keep working.
TEST_F(BrainServiceTest, OpenStreamsAreBounded) {
  const int max_open = 2 * TestServerConfig().max_robots + 16;
  std::vector<std::unique_ptr<RawStream>> open;
  for (int i = 0; i < max_open; ++i) open.push_back(std::make_unique<RawStream>(stub_.get()));
  ASSERT_TRUE(open[0]->Open(MakeHello("first")).has_value());  // the streams exist on the server now
  ASSERT_TRUE(Eventually([&] { return server_->open_streams() == max_open; }));
  RawStream extra(stub_.get(), absl::Seconds(10));
  const grpc::Status status = extra.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  const std::optional<MotorFrame> m = open[0]->Step(FrameRequest(1, kGood));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->status(), brain::v1::OK);
}

}  // namespace
}  // namespace fieldbrain::server

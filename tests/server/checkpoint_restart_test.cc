// Brains that survive a daemon restart (server/checkpoint/): the daemon is stopped and started
// again on the same --checkpoint_dir, in process, on the CPU engine. A robot that comes back with
// its resume token continues its cycle count and answers, bit for bit, what a brain that never
// stopped answers; one without the token is refused; a damaged file gives a new brain, a log line
// and a metric; a disk that fails is counted and never stops cycles.
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <ctime>

#include <atomic>
#include <cmath>
#include <thread>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "eventually.h"
#include "gtest/gtest.h"
#include "raw_stream.h"
#include "server/brain_server.h"
#include "server/checkpoint/checkpoint_files.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/checkpoint/checkpointer.h"
#include "test_server_config.h"

namespace fieldbrain::server {
namespace {

using testing::Eventually;

using brain::v1::MotorFrame;
using brain::v1::Welcome;
using testing::FrameRequest;
using testing::MakeHello;
using testing::RawStream;
using testing::TestServerConfig;
using ::testing::HasSubstr;

// Frame t's sensors and reward: the same for every run.
brain::v1::CycleRequest Frame(int t) {
  std::vector<float> v(4);
  for (int i = 0; i < 4; ++i) v[size_t(i)] = std::sin(0.37f * float(t) + float(i));
  return FrameRequest(uint64_t(t), v, std::cos(0.11f * float(t)) * 0.5f);
}


class CheckpointRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/checkpoints." + std::to_string(::getpid()) + "." +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ::mkdir(dir_.c_str(), 0700);
  }

  static ServerConfig Config(const std::string& dir, int every = 1000, int robots = 4) {
    ServerConfig c = TestServerConfig();
    c.max_robots = robots;
    c.checkpoint_dir = dir;
    c.checkpoint_every_cycles = every;
    return c;
  }

  static std::unique_ptr<BrainServer> StartWith(const ServerConfig& c) {
    absl::StatusOr<std::unique_ptr<BrainServer>> s = BrainServer::Start(c, "test");
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }

  std::unique_ptr<BrainServer> Start(const std::string& dir, int every = 1000, int robots = 4) {
    return StartWith(Config(dir, every, robots));
  }

  static std::unique_ptr<brain::v1::Brain::Stub> StubOf(BrainServer& server) {
    return brain::v1::Brain::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(server.port()),
                                                         grpc::InsecureChannelCredentials()));
  }

  static brain::v1::Hello HelloOf(const std::string& id, const std::string& token = "") {
    brain::v1::Hello h = MakeHello(id);
    h.set_seed(99);
    h.set_resume_token(token);
    return h;
  }

  std::string dir_;
};

TEST_F(CheckpointRestartTest, ARestartedDaemonGivesTheBrainBackAndItAnswersBitForBit) {
  // The reference: one brain, 60 frames, no restart.
  std::vector<MotorFrame> reference;
  {
    std::unique_ptr<BrainServer> server = Start("");
    auto stub = StubOf(*server);
    RawStream s(stub.get());
    ASSERT_TRUE(s.Open(HelloOf("reference")).has_value());
    for (int t = 1; t <= 60; ++t) reference.push_back(*s.Step(Frame(t)));
  }
  std::vector<MotorFrame> restarted;
  std::string token;
  {
    std::unique_ptr<BrainServer> server = Start(dir_);
    auto stub = StubOf(*server);
    RawStream s(stub.get());
    std::optional<Welcome> w = s.Open(HelloOf("car"));
    ASSERT_TRUE(w.has_value());
    token = w->resume_token();
    for (int t = 1; t <= 30; ++t) restarted.push_back(*s.Step(Frame(t)));
    server->Shutdown();  // what SIGTERM does: every brain to disk first
    EXPECT_GE(server->checkpointer()->written(), 1);  // at shutdown (and maybe at the stream's end)
  }
  std::unique_ptr<BrainServer> server = Start(dir_);
  auto stub = StubOf(*server);
  {
    RawStream tokenless(stub.get());
    EXPECT_FALSE(tokenless.Open(HelloOf("car")).has_value());
    const grpc::Status refused = tokenless.Finish();
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(refused.error_message(), HasSubstr("has a checkpointed brain (cycle 30)"));
  }
  RawStream s(stub.get());
  std::optional<Welcome> back = s.Open(HelloOf("car", token));
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->resumed());
  EXPECT_EQ(back->cycle(), 30u);
  EXPECT_EQ(back->seed(), 99u);
  EXPECT_EQ(back->resume_token(), token) << "the same token keeps working";
  for (int t = 31; t <= 60; ++t) restarted.push_back(*s.Step(Frame(t)));
  ASSERT_EQ(restarted.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    ASSERT_EQ(restarted[i].status(), brain::v1::OK);
    ASSERT_EQ(restarted[i].cycle(), reference[i].cycle());
    ASSERT_EQ(restarted[i].values_size(), reference[i].values_size());
    for (int k = 0; k < reference[i].values_size(); ++k) {
      ASSERT_EQ(restarted[i].values(k), reference[i].values(k)) << "frame " << i + 1 << " motor " << k;
    }
    ASSERT_EQ(restarted[i].confidence(), reference[i].confidence()) << "frame " << i + 1;
    ASSERT_EQ(restarted[i].prediction_error(), reference[i].prediction_error()) << "frame " << i + 1;
  }
}

TEST_F(CheckpointRestartTest, CheckpointsAreWrittenEveryNCyclesAndOnDisconnect) {
  std::unique_ptr<BrainServer> server = Start(dir_, /*every=*/10);
  auto stub = StubOf(*server);
  {
    RawStream s(stub.get());
    ASSERT_TRUE(s.Open(HelloOf("walker")).has_value());
    for (int t = 1; t <= 25; ++t) ASSERT_TRUE(s.Step(Frame(t)).has_value());
    ASSERT_TRUE(server->checkpointer()->Flush(absl::Seconds(10)));
    absl::StatusOr<std::string> bytes = ReadWholeFile(CheckpointPath(dir_, "walker"));
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(DecodeCheckpoint(*bytes, FieldShape::Small())->header.cycle, 20u);
    // Copies at cycles 10 and 20; the writer may have taken the second before writing the first
    // (writes coalesce under load), so each copy is written or replaced.
    EXPECT_EQ(server->checkpointer()->written() + server->checkpointer()->coalesced(), 2);
  }
  // The robot went away: its brain (cycle 25) goes to disk although it is kept in memory.
  auto cycle_on_disk = [&]() -> uint64_t {
    absl::StatusOr<std::string> bytes = ReadWholeFile(CheckpointPath(dir_, "walker"));
    if (!bytes.ok()) return 0;
    absl::StatusOr<DecodedCheckpoint> decoded = DecodeCheckpoint(*bytes, FieldShape::Small());
    return decoded.ok() ? decoded->header.cycle : 0;
  };
  ASSERT_TRUE(Eventually([&] { return cycle_on_disk() == 25u; }));
  ASSERT_TRUE(server->checkpointer()->Flush(absl::Seconds(10)));
  EXPECT_EQ(server->checkpointer()->written() + server->checkpointer()->coalesced(), 3);
  const std::string metrics = server->metrics().Scrape();
  EXPECT_THAT(metrics, HasSubstr("brain_checkpoint_duration_seconds_count " +
                                 std::to_string(server->checkpointer()->written())));
  EXPECT_THAT(metrics, HasSubstr("brain_checkpoint_bytes_total"));
}

// Daemons behind one proxy share the directory. A robot that left this daemon may be running on
// another one, which writes newer checkpoints; this daemon's kept copy, unchanged since its own
// last write, must not overwrite them when it expires.
TEST_F(CheckpointRestartTest, AKeptBrainThatDidNotRunIsNotWrittenAgainWhenItExpires) {
  ServerConfig c = TestServerConfig();
  c.checkpoint_dir = dir_;
  c.checkpoint_every_cycles = 1000;
  c.idle_keep_s = 1;
  absl::StatusOr<std::unique_ptr<BrainServer>> server = BrainServer::Start(c, "test");
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = StubOf(**server);
  {
    RawStream s(stub.get());
    ASSERT_TRUE(s.Open(HelloOf("mover")).has_value());
    for (int t = 1; t <= 5; ++t) ASSERT_TRUE(s.Step(Frame(t)).has_value());
    EXPECT_TRUE(s.Close().ok());
  }
  Checkpointer& checkpointer = *(*server)->checkpointer();
  for (int i = 0; i < 500 && checkpointer.written() < 1; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_TRUE(checkpointer.Flush(absl::Seconds(10)));
  ASSERT_EQ(checkpointer.written(), 1) << "the disconnect's checkpoint";
  // Another daemon ran the robot on and wrote its file.
  const std::string path = CheckpointPath(dir_, "mover");
  const std::string other_daemons = "written by the daemon the robot moved to";
  std::ofstream(path, std::ios::trunc) << other_daemons;
  // The kept brain expires after 1 s (the reaper checks every 250 ms) and its slot is released.
  for (int i = 0; i < 500 && (*server)->directory().kept() > 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ((*server)->directory().kept(), 0);
  for (int i = 0; i < 500 && (*server)->scheduler().releases() < 1; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ((*server)->scheduler().releases(), 1);
  ASSERT_TRUE(checkpointer.Flush(absl::Seconds(10)));
  EXPECT_EQ(checkpointer.written(), 1);
  EXPECT_EQ(*ReadWholeFile(path), other_daemons);
}

// Two daemons behind one proxy, one checkpoint directory: the robot leaves A (which keeps its
// brain), runs on B, and comes back to A. A must give it B's newer brain, not its own older copy,
// and must not write that older copy over B's file when it lets it go.
TEST_F(CheckpointRestartTest, ARobotBackFromAnotherDaemonGetsItsNewerBrainNotTheKeptCopy) {
  std::unique_ptr<BrainServer> a = Start(dir_, /*every=*/1000);
  std::unique_ptr<BrainServer> b = Start(dir_, /*every=*/1000);
  auto stub_a = StubOf(*a);
  auto stub_b = StubOf(*b);
  std::string token;
  {
    RawStream s(stub_a.get());
    std::optional<Welcome> w = s.Open(HelloOf("traveller"));
    ASSERT_TRUE(w.has_value());
    token = w->resume_token();
    for (int t = 1; t <= 5; ++t) ASSERT_TRUE(s.Step(Frame(t)).has_value());
    EXPECT_TRUE(s.Close().ok());
  }
  for (int i = 0; i < 500 && a->checkpointer()->written() < 1; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_TRUE(a->checkpointer()->Flush(absl::Seconds(10)));
  ASSERT_EQ(a->directory().kept(), 1);
  {
    RawStream s(stub_b.get());
    std::optional<Welcome> w = s.Open(HelloOf("traveller", token));
    ASSERT_TRUE(w.has_value());
    EXPECT_EQ(w->cycle(), 5u) << "B restores A's checkpoint";
    for (int t = 6; t <= 12; ++t) ASSERT_TRUE(s.Step(Frame(t)).has_value());
    EXPECT_TRUE(s.Close().ok());
  }
  for (int i = 0; i < 500 && b->checkpointer()->written() < 1; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_TRUE(b->checkpointer()->Flush(absl::Seconds(10)));
  RawStream back(stub_a.get());
  std::optional<Welcome> w = back.Open(HelloOf("traveller", token));
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(w->resumed());
  EXPECT_EQ(w->cycle(), 12u) << "A gave back its own older copy";
  std::optional<MotorFrame> m = back.Step(Frame(13));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->cycle(), 13u);
  // A released its older copy without writing it: the file still holds B's cycle 12.
  ASSERT_TRUE(a->checkpointer()->Flush(absl::Seconds(10)));
  absl::StatusOr<std::string> bytes = ReadWholeFile(CheckpointPath(dir_, "traveller"));
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(DecodeCheckpoint(*bytes, FieldShape::Small())->header.cycle, 12u);
  EXPECT_EQ(a->scheduler().double_releases(), 0);
}

// The robot left A (which keeps its brain) and started afresh on B: back on A with B's token it
// gets B's brain, although A's copy has run more cycles.
TEST_F(CheckpointRestartTest, ARobotThatStartedAfreshElsewhereGetsThatBrainNotTheKeptCopy) {
  std::unique_ptr<BrainServer> a = Start(dir_, /*every=*/1000);
  std::unique_ptr<BrainServer> b = Start(dir_, /*every=*/1000);
  auto stub_a = StubOf(*a);
  auto stub_b = StubOf(*b);
  {
    RawStream s(stub_a.get());
    ASSERT_TRUE(s.Open(HelloOf("renewed")).has_value());
    for (int t = 1; t <= 9; ++t) ASSERT_TRUE(s.Step(Frame(t)).has_value());
    EXPECT_TRUE(s.Close().ok());
  }
  ASSERT_TRUE(Eventually([&] { return a->directory().kept() == 1 && a->checkpointer()->written() == 1; }));
  ASSERT_TRUE(a->checkpointer()->Flush(absl::Seconds(10)));
  std::string token;
  {
    RawStream s(stub_b.get());
    brain::v1::Hello fresh = HelloOf("renewed");
    fresh.set_fresh(true);
    std::optional<Welcome> w = s.Open(fresh);
    ASSERT_TRUE(w.has_value());
    EXPECT_EQ(w->cycle(), 0u);
    token = w->resume_token();
    for (int t = 1; t <= 3; ++t) ASSERT_TRUE(s.Step(Frame(t)).has_value());
    EXPECT_TRUE(s.Close().ok());
  }
  for (int i = 0; i < 500 && b->checkpointer()->written() < 1; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_TRUE(b->checkpointer()->Flush(absl::Seconds(10)));
  RawStream back(stub_a.get());
  std::optional<Welcome> w = back.Open(HelloOf("renewed", token));
  ASSERT_TRUE(w.has_value()) << "A refused B's token for its own older session";
  EXPECT_TRUE(w->resumed());
  EXPECT_EQ(w->cycle(), 3u);
}

TEST_F(CheckpointRestartTest, EveryBrainReachesDiskAtShutdownWithMoreRobotsThanCopyBuffers) {
  constexpr int kRobots = Checkpointer::kBuffers + 3;
  std::unique_ptr<BrainServer> server = Start(dir_, /*every=*/1000, kRobots);
  auto stub = StubOf(*server);
  std::vector<std::unique_ptr<RawStream>> streams;
  for (int r = 0; r < kRobots; ++r) {
    streams.push_back(std::make_unique<RawStream>(stub.get()));
    ASSERT_TRUE(streams.back()->Open(HelloOf("fleet-" + std::to_string(r))).has_value());
    for (int t = 1; t <= 5 + r; ++t) ASSERT_TRUE(streams.back()->Step(Frame(t)).has_value());
  }
  server->Shutdown();
  for (int r = 0; r < kRobots; ++r) {
    absl::StatusOr<std::string> bytes = ReadWholeFile(CheckpointPath(dir_, "fleet-" + std::to_string(r)));
    ASSERT_TRUE(bytes.ok()) << "robot " << r << ": " << bytes.status();
    EXPECT_EQ(DecodeCheckpoint(*bytes, FieldShape::Small())->header.cycle, uint64_t(5 + r));
  }
}

// Motor frames of one brain (Hello seed 99, the frames above) that never stopped: frame t's
// answer is reference[t - 1].
std::vector<MotorFrame> ReferenceAnswers(int frames) {
  ServerConfig c = TestServerConfig();
  absl::StatusOr<std::unique_ptr<BrainServer>> server = BrainServer::Start(c, "test");
  EXPECT_TRUE(server.ok()) << server.status();
  std::vector<MotorFrame> answers;
  if (!server.ok()) return answers;
  auto stub = brain::v1::Brain::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string((*server)->port()),
                                                           grpc::InsecureChannelCredentials()));
  RawStream s(stub.get());
  brain::v1::Hello h = MakeHello("reference");
  h.set_seed(99);
  EXPECT_TRUE(s.Open(h).has_value());
  for (int t = 1; t <= frames; ++t) answers.push_back(s.Step(Frame(t)).value_or(MotorFrame{}));
  return answers;
}

// More robots than snapshot buffers end their streams at once while the writer is held: every
// released brain's final state still reaches disk (its slot waits for a buffer), and each robot
// resumes it bit for bit.
TEST_F(CheckpointRestartTest, EveryReleasedBrainReachesDiskWithMoreReleasesThanCopyBuffers) {
  constexpr int kRobots = Checkpointer::kBuffers + 3;
  const std::vector<MotorFrame> reference = ReferenceAnswers(5 + kRobots);
  ServerConfig c = Config(dir_, 1000, kRobots);
  c.idle_keep_s = 0;  // a stream's end releases its brain at once
  std::unique_ptr<BrainServer> server = StartWith(c);
  ASSERT_NE(server, nullptr);
  auto stub = StubOf(*server);
  std::vector<std::string> tokens;
  {
    std::vector<std::unique_ptr<RawStream>> streams;
    for (int r = 0; r < kRobots; ++r) {
      streams.push_back(std::make_unique<RawStream>(stub.get()));
      std::optional<Welcome> w = streams.back()->Open(HelloOf("wave-" + std::to_string(r)));
      ASSERT_TRUE(w.has_value());
      tokens.push_back(w->resume_token());
      for (int t = 1; t <= 4 + r; ++t) ASSERT_TRUE(streams.back()->Step(Frame(t)).has_value());
    }
    server->checkpointer()->PauseWriterForTesting(true);
    for (auto& s : streams) EXPECT_TRUE(s->Close().ok());
  }
  // The first kBuffers copies wait at the held writer; the other brains wait in their slots.
  EXPECT_TRUE(Eventually([&] { return server->scheduler().releases() == Checkpointer::kBuffers; }));
  server->checkpointer()->PauseWriterForTesting(false);
  ASSERT_TRUE(Eventually([&] { return server->scheduler().releases() == kRobots; }));
  ASSERT_TRUE(server->checkpointer()->Flush(absl::Seconds(30)));
  EXPECT_THAT(server->metrics().Scrape(), HasSubstr("brain_final_states_lost_total{reason=\"no_buffer\"} 0"));
  for (int r = 0; r < kRobots; ++r) {
    RawStream back(stub.get());
    std::optional<Welcome> w = back.Open(HelloOf("wave-" + std::to_string(r), tokens[size_t(r)]));
    ASSERT_TRUE(w.has_value()) << "robot " << r;
    EXPECT_TRUE(w->resumed()) << "robot " << r;
    EXPECT_EQ(w->cycle(), uint64_t(4 + r));
    std::optional<MotorFrame> next = back.Step(Frame(5 + r));
    ASSERT_TRUE(next.has_value());
    ASSERT_EQ(next->values_size(), reference[size_t(4 + r)].values_size());
    for (int m = 0; m < next->values_size(); ++m) {
      EXPECT_EQ(next->values(m), reference[size_t(4 + r)].values(m)) << "robot " << r << " motor " << m;
    }
  }
}

// A robot that reconnects while its released brain is still on its way to disk is not handed a
// new brain (nor the older file): it is told to retry, and then resumes the brain it left.
TEST_F(CheckpointRestartTest, AHelloWaitsForItsReleasedBrainToReachDisk) {
  ServerConfig c = Config(dir_, 1000, 4);
  c.idle_keep_s = 0;
  std::unique_ptr<BrainServer> server = StartWith(c);
  ASSERT_NE(server, nullptr);
  auto stub = StubOf(*server);
  std::string token;
  {
    RawStream s(stub.get());
    std::optional<Welcome> w = s.Open(HelloOf("hasty"));
    ASSERT_TRUE(w.has_value());
    token = w->resume_token();
    for (int t = 1; t <= 6; ++t) ASSERT_TRUE(s.Step(Frame(t)).has_value());
    server->checkpointer()->PauseWriterForTesting(true);
    EXPECT_TRUE(s.Close().ok());
  }
  ASSERT_TRUE(Eventually([&] { return server->scheduler().releases() == 1; }));
  {
    RawStream early(stub.get());
    EXPECT_FALSE(early.Open(HelloOf("hasty", token)).has_value());
    const grpc::Status refused = early.Finish();
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(refused.error_message(), HasSubstr("still being saved"));
  }
  server->checkpointer()->PauseWriterForTesting(false);
  RawStream back(stub.get());
  std::optional<Welcome> w = back.Open(HelloOf("hasty", token));
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(w->resumed());
  EXPECT_EQ(w->cycle(), 6u);
}

// A failed engine's brains may be half a cycle on: nothing is written from it, at a stream's end
// or at shutdown, and each brain not saved is counted; the files keep the last whole states.
TEST_F(CheckpointRestartTest, NoCheckpointIsWrittenFromAFailedEngine) {
  ServerConfig c = Config(dir_, 3);
  c.test_fail_engine_after_batches = 7;  // cycles 1..7 run (one robot, a batch each), then it fails
  std::unique_ptr<BrainServer> server = StartWith(c);
  ASSERT_NE(server, nullptr);
  auto stub = StubOf(*server);
  RawStream s(stub.get());
  ASSERT_TRUE(s.Open(HelloOf("crashed")).has_value());
  for (int t = 1; t <= 7; ++t) ASSERT_EQ(s.Step(Frame(t))->status(), brain::v1::OK);
  ASSERT_TRUE(server->checkpointer()->Flush(absl::Seconds(10)));
  const int64_t written_before = server->checkpointer()->written();
  EXPECT_GE(written_before, 1);  // cycles 3 and 6 (coalesced into one when the writer is behind)
  s.Step(Frame(8));  // answered INTERNAL_ERROR; the stream is then ended UNAVAILABLE
  ASSERT_TRUE(Eventually([&] { return !server->scheduler().engine_healthy(); }));
  server->Shutdown();
  EXPECT_EQ(server->checkpointer()->written(), written_before);
  EXPECT_THAT(server->metrics().Scrape(),
              HasSubstr("brain_final_states_lost_total{reason=\"engine_failed\"} 1"));
  absl::StatusOr<std::string> bytes = ReadWholeFile(CheckpointPath(dir_, "crashed"));
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(DecodeCheckpoint(*bytes, FieldShape::Small())->header.cycle, 6u);
}

// Shutdown keeps --shutdown_deadline_s when the writer is behind: brains whose copy found no
// buffer by then are counted, not waited for one by one.
TEST_F(CheckpointRestartTest, ShutdownKeepsItsDeadlineWhenTheWriterIsBehind) {
  constexpr int kRobots = Checkpointer::kBuffers + 3;
  ServerConfig c = Config(dir_, 1000, kRobots);
  c.shutdown_deadline_s = 1;
  std::unique_ptr<BrainServer> server = StartWith(c);
  ASSERT_NE(server, nullptr);
  auto stub = StubOf(*server);
  std::vector<std::unique_ptr<RawStream>> streams;
  for (int r = 0; r < kRobots; ++r) {
    streams.push_back(std::make_unique<RawStream>(stub.get()));
    ASSERT_TRUE(streams.back()->Open(HelloOf("late-" + std::to_string(r))).has_value());
    ASSERT_TRUE(streams.back()->Step(Frame(1)).has_value());
  }
  server->checkpointer()->PauseWriterForTesting(true);
  const absl::Time start = absl::Now();
  server->Shutdown();
  const absl::Duration took = absl::Now() - start;
  // The deadline plus ending gRPC; waiting for each brain in turn took 10 s per brain.
  EXPECT_LT(took, absl::Seconds(6)) << took;
  EXPECT_THAT(server->metrics().Scrape(),
              HasSubstr("brain_final_states_lost_total{reason=\"shutdown_deadline\"} 3"));
}

// A checkpoint of another field shape holds a whole brain that a daemon configured for that shape
// can run: the Hello is refused with both shapes named, the file stays where it is (the robot
// resumes it on a daemon with that shape), and only `fresh` replaces it.
TEST_F(CheckpointRestartTest, ACheckpointOfAnotherShapeRefusesTheHelloAndStays) {
  EngineConfig tiny;
  tiny.shape = FieldShape::Tiny();
  tiny.max_robots = tiny.max_batch = 1;
  absl::StatusOr<std::unique_ptr<Engine>> engine = MakeEngine("cpu", tiny);
  ASSERT_TRUE(engine.ok());
  absl::StatusOr<int> slot = (*engine)->CreateBrain(BrainSpec{99, 4, 2});
  ASSERT_TRUE(slot.ok());
  absl::StatusOr<BrainSnapshot> brain = (*engine)->Snapshot(*slot);
  ASSERT_TRUE(brain.ok());
  const std::string token = "0123456789abcdef0123456789abcdef";
  CheckpointHeader header;
  header.shape = tiny.shape;
  header.sensor_count = 4;
  header.motor_count = 2;
  header.seed = 99;
  header.cycle = 0;
  header.robot_id = "elsewhere";
  header.resume_token_sha256 = CheckpointReader::TokenHash(token);
  const std::string path = CheckpointPath(dir_, "elsewhere");
  ASSERT_TRUE(WriteFileAtomically(path, EncodeCheckpoint(header, *brain)).ok());

  std::unique_ptr<BrainServer> server = Start(dir_);
  auto stub = StubOf(*server);
  {
    RawStream s(stub.get());
    EXPECT_FALSE(s.Open(HelloOf("elsewhere", token)).has_value());
    const grpc::Status refused = s.Finish();
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(refused.error_message(), HasSubstr("field shape 16x8x8x8; this daemon runs 32x16x16x16"));
    EXPECT_THAT(refused.error_message(), HasSubstr("fresh=true"));
  }
  EXPECT_THAT(server->metrics().Scrape(), HasSubstr("brain_checkpoint_failures_total{reason=\"foreign\"} 1"));
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << "the file stays where it is";
  EXPECT_NE(::stat((path + ".refused").c_str(), &info), 0);
  brain::v1::Hello fresh = HelloOf("elsewhere");
  fresh.set_fresh(true);
  RawStream s(stub.get());
  std::optional<Welcome> w = s.Open(fresh);
  ASSERT_TRUE(w.has_value());
  EXPECT_FALSE(w->resumed());
  EXPECT_EQ(::stat(path.c_str(), &info), -1) << "fresh discards it";
}

// Hellos whose checkpoint reads are held (a slow shared volume in a failover wave) wait on the
// admission threads, never on gRPC's: a live robot keeps getting answers meanwhile, and the held
// robots resume their brains once the reads go on.
TEST_F(CheckpointRestartTest, HellosWaitingOnTheDiskDoNotHoldUpLiveRobots) {
  constexpr int kWave = 8;
  std::vector<std::string> tokens;
  {
    std::unique_ptr<BrainServer> first = Start(dir_, /*every=*/1000, kWave);
    auto stub = StubOf(*first);
    for (int r = 0; r < kWave; ++r) {
      RawStream s(stub.get());
      std::optional<Welcome> w = s.Open(HelloOf("wave-" + std::to_string(r)));
      ASSERT_TRUE(w.has_value());
      tokens.push_back(w->resume_token());
      ASSERT_TRUE(s.Step(Frame(1)).has_value());
    }
    first->Shutdown();
  }
  std::unique_ptr<BrainServer> server = Start(dir_, /*every=*/1000, kWave + 1);
  auto stub = StubOf(*server);
  RawStream steady(stub.get());
  ASSERT_TRUE(steady.Open(HelloOf("steady")).has_value());
  server->checkpointer()->reader().HoldReadsForTesting(true);
  std::vector<std::thread> wave;
  std::atomic<int> resumed{0};
  for (int r = 0; r < kWave; ++r) {
    wave.emplace_back([&, r] {
      RawStream s(stub.get());
      std::optional<Welcome> w = s.Open(HelloOf("wave-" + std::to_string(r), tokens[size_t(r)]));
      if (w.has_value() && w->resumed() && w->cycle() == 1) resumed.fetch_add(1);
    });
  }
  ASSERT_TRUE(Eventually([&] { return server->checkpointer()->reader().ReadsHeldForTesting() >= 1; }));
  for (int t = 1; t <= 20; ++t) {
    std::optional<MotorFrame> m = steady.Step(Frame(t));
    ASSERT_TRUE(m.has_value()) << "frame " << t;
    EXPECT_EQ(m->status(), brain::v1::OK);
  }
  EXPECT_EQ(resumed.load(), 0) << "a held read answered";
  server->checkpointer()->reader().HoldReadsForTesting(false);
  for (std::thread& t : wave) t.join();
  EXPECT_EQ(resumed.load(), kWave);
}

TEST_F(CheckpointRestartTest, ADamagedCheckpointGivesANewBrainALogLineAndAMetric) {
  std::ofstream(CheckpointPath(dir_, "dented")) << "what a full disk and a crash left behind";
  std::unique_ptr<BrainServer> server = Start(dir_);
  auto stub = StubOf(*server);
  RawStream s(stub.get());
  std::optional<Welcome> w = s.Open(HelloOf("dented", "00112233445566778899aabbccddeeff"));
  ASSERT_TRUE(w.has_value());
  EXPECT_FALSE(w->resumed());
  EXPECT_EQ(w->cycle(), 0u);
  EXPECT_THAT(server->metrics().Scrape(), HasSubstr("brain_checkpoint_failures_total{reason=\"corrupt\"} 1"));
  struct stat info {};
  EXPECT_EQ(::stat((CheckpointPath(dir_, "dented") + ".refused").c_str(), &info), 0) << "set aside, not retried";
  EXPECT_THAT(server->metrics().Scrape(), HasSubstr("brain_checkpoint_refused_files 1"));
  server.reset();
  server = Start(dir_);
  EXPECT_THAT(server->metrics().Scrape(), HasSubstr("brain_checkpoint_refused_files 1")) << "counted at start";
}

// Temporary files a killed daemon left (its pid is gone) and any older than an hour are removed
// when a daemon starts on the directory; a live process's are not.
TEST_F(CheckpointRestartTest, TemporaryFilesOfDaemonsThatAreGoneAreRemovedAtStart) {
  char host[256] = "host";
  ::gethostname(host, sizeof(host) - 1);
  const std::string base = CheckpointPath(dir_, "orphan");
  // A pid that is not running: the highest pid the kernel hands out, plus one.
  const std::string dead = base + ".tmp." + host + ".4194305";
  const std::string alive = base + ".tmp." + host + "." + std::to_string(::getppid());
  const std::string old_elsewhere = base + ".tmp.another-host.12";
  const std::string recent_elsewhere = CheckpointPath(dir_, "orphan-2") + ".tmp.another-host.12";
  for (const std::string& f : {dead, alive, old_elsewhere, recent_elsewhere}) std::ofstream(f) << "half a brain";
  const std::time_t two_hours_ago = std::time(nullptr) - 7200;
  struct utimbuf times {two_hours_ago, two_hours_ago};
  ASSERT_EQ(::utime(old_elsewhere.c_str(), &times), 0);
  std::unique_ptr<BrainServer> server = Start(dir_);
  struct stat info {};
  EXPECT_NE(::stat(dead.c_str(), &info), 0) << "a killed daemon's temporary file stays";
  EXPECT_NE(::stat(old_elsewhere.c_str(), &info), 0) << "an hour-old temporary file stays";
  EXPECT_EQ(::stat(alive.c_str(), &info), 0) << "a live process's temporary file was removed";
  EXPECT_EQ(::stat(recent_elsewhere.c_str(), &info), 0) << "another host's recent temporary file was removed";
}

TEST_F(CheckpointRestartTest, ADiskThatFailsIsCountedAndNeverStopsCycles) {
  std::unique_ptr<BrainServer> server = Start(dir_, /*every=*/5);
  auto stub = StubOf(*server);
  RawStream s(stub.get());
  ASSERT_TRUE(s.Open(HelloOf("roamer")).has_value());
  ASSERT_EQ(::rmdir(dir_.c_str()), 0);  // the disk goes away under the daemon
  for (int t = 1; t <= 40; ++t) {
    std::optional<MotorFrame> m = s.Step(Frame(t));
    ASSERT_TRUE(m.has_value());
    ASSERT_EQ(m->status(), brain::v1::OK);
  }
  server->checkpointer()->Flush(absl::Seconds(5));
  EXPECT_GE(server->checkpointer()->failures(), 1);
  EXPECT_THAT(server->metrics().Scrape(), ::testing::ContainsRegex("brain_checkpoint_failures_total\\{reason=\"write\"\\} [1-9]"));
}

}  // namespace
}  // namespace fieldbrain::server

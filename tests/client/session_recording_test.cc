// Recording files (client/session_recording.h) and replay planning (client/tools/session_replay.h)
// with real files and hand-built recordings; the replay against a server is tests/client/replay_test.sh.
#include "client/session_recording.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <google/protobuf/util/delimited_message_util.h>

#include "client/tools/session_replay.h"
#include "gtest/gtest.h"

namespace fieldbrain::client {
namespace {

using brain::v1::FrameStatus;
using brain::v1::RecordEntry;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "." + std::to_string(::getpid());
}

brain::v1::SensorFrame Sensors(uint64_t seq, float value) {
  brain::v1::SensorFrame f;
  f.set_seq(seq);
  f.add_values(value);
  f.set_deadline_us(20000);
  return f;
}

brain::v1::MotorFrame Motors(uint64_t seq, uint64_t cycle, FrameStatus status = brain::v1::OK) {
  brain::v1::MotorFrame m;
  m.set_seq(seq);
  m.set_cycle(cycle);
  m.set_status(status);
  m.add_values(status == brain::v1::OK ? 0.25f : 0.0f);
  return m;
}

brain::v1::Hello Hello(const std::string& token = "") {
  brain::v1::Hello h;
  h.mutable_profile()->set_robot_id("car-7");
  h.mutable_profile()->set_sensor_count(1);
  h.mutable_profile()->set_motor_count(1);
  h.set_seed(42);
  h.set_resume_token(token);
  return h;
}

brain::v1::Welcome Welcome(bool resumed, uint64_t cycle) {
  brain::v1::Welcome w;
  w.set_resumed(resumed);
  w.set_cycle(cycle);
  w.set_seed(42);
  w.set_engine("cpu");
  w.set_resume_token("secret-token");
  return w;
}

TEST(SessionRecorder, WritesEveryMessageInOrderWithoutResumeTokens) {
  const std::string path = TempPath("recorder");
  {
    auto recorder = SessionRecorder::Open(path);
    ASSERT_TRUE(recorder.ok()) << recorder.status();
    (*recorder)->RecordHello(Hello("old-token"));
    (*recorder)->RecordWelcome(Welcome(false, 0));
    (*recorder)->RecordSensors(Sensors(1, 0.5f));
    (*recorder)->RecordMotors(Motors(1, 1));
    EXPECT_TRUE((*recorder)->status().ok());
  }
  auto entries = ReadRecording(path);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_TRUE((*entries)[0].has_hello());
  EXPECT_EQ((*entries)[0].hello().resume_token(), "");
  EXPECT_EQ((*entries)[0].hello().seed(), 42u);
  EXPECT_TRUE((*entries)[1].has_welcome());
  EXPECT_EQ((*entries)[1].welcome().resume_token(), "");
  EXPECT_EQ((*entries)[1].welcome().engine(), "cpu");
  EXPECT_EQ((*entries)[2].sensors().values(0), 0.5f);
  EXPECT_EQ((*entries)[3].motors().values(0), 0.25f);
  for (size_t i = 1; i < entries->size(); ++i) {
    EXPECT_GE((*entries)[i].time_unix_us(), (*entries)[i - 1].time_unix_us());
  }
  EXPECT_GT((*entries)[0].time_unix_us(), 1'700'000'000'000'000);  // a real wall-clock time
  std::remove(path.c_str());
}

TEST(SessionRecorder, RefusesAPathItCannotWriteOrAnExistingRecording) {
  auto bad = SessionRecorder::Open("/nonexistent-directory/session.rec");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("No such file or directory"), std::string::npos);

  const std::string path = TempPath("kept");
  std::ofstream(path) << "an earlier recording";
  auto again = SessionRecorder::Open(path);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("never overwritten"), std::string::npos) << again.status();
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "an earlier recording");
  std::remove(path.c_str());
}

TEST(SessionRecorder, AFullDiskStopsTheRecordingNotTheCaller) {
  // /dev/full accepts the open and fails every write with ENOSPC: a full disk.
  auto full = SessionRecorder::Open("/dev/full");
  ASSERT_TRUE(full.ok()) << full.status();
  for (int i = 0; i < 2000; ++i) (*full)->RecordSensors(Sensors(uint64_t(i) + 1, 0.1f));
  (*full)->Close();
  EXPECT_EQ((*full)->status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE((*full)->status().message().find("No space left on device"), std::string::npos)
      << (*full)->status();
  (*full)->RecordSensors(Sensors(1, 0.1f));  // after Close: dropped, no crash
}

class BadRecordingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempPath("bad");
    auto recorder = SessionRecorder::Open(path_);
    ASSERT_TRUE(recorder.ok());
    (*recorder)->RecordHello(Hello());
    (*recorder)->RecordWelcome(Welcome(false, 0));
    for (uint64_t s = 1; s <= 10; ++s) (*recorder)->RecordSensors(Sensors(s, 0.1f));
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string Bytes() {
    std::ifstream in(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void Write(const std::string& bytes) { std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes; }
  std::string path_;
};

TEST_F(BadRecordingTest, ATruncatedFileIsRefusedNamingTheEntry) {
  const std::string whole = Bytes();
  ASSERT_GT(whole.size(), 20u);
  Write(whole.substr(0, whole.size() - 3));
  auto entries = ReadRecording(path_);
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(entries.status().message().find("entry 11: truncated"), std::string::npos) << entries.status();
}

TEST_F(BadRecordingTest, BytesThatAreNotARecordingAreRefused) {
  Write(std::string("\x05hello world, not protobuf at all", 33));
  auto entries = ReadRecording(path_);
  ASSERT_FALSE(entries.ok());
  EXPECT_NE(entries.status().message().find("entry 0: not a brain.v1.RecordEntry"), std::string::npos)
      << entries.status();
}

TEST_F(BadRecordingTest, AnEmptyEntryAndADirectoryAreRefused) {
  std::string bytes = Bytes();
  bytes.push_back('\0');  // a zero-length RecordEntry: valid protobuf, but it holds nothing
  Write(bytes);
  auto entries = ReadRecording(path_);
  ASSERT_FALSE(entries.ok());
  EXPECT_NE(entries.status().message().find("entry 12: holds no Hello"), std::string::npos) << entries.status();
  EXPECT_FALSE(ReadRecording(::testing::TempDir()).ok());
  EXPECT_EQ(ReadRecording(path_ + ".missing").status().code(), absl::StatusCode::kNotFound);
}

TEST(SessionRecording, AnEmptyFileHasNoEntries) {
  const std::string path = TempPath("empty");
  std::ofstream(path).close();
  auto entries = ReadRecording(path);
  ASSERT_TRUE(entries.ok()) << entries.status();
  EXPECT_TRUE(entries->empty());
  std::remove(path.c_str());
}

// --- replay planning ---------------------------------------------------------------------------

std::vector<RecordEntry> Session(std::initializer_list<RecordEntry> entries) { return entries; }
RecordEntry E(const brain::v1::Hello& h) { RecordEntry e; *e.mutable_hello() = h; return e; }
RecordEntry E(const brain::v1::Welcome& w) { RecordEntry e; *e.mutable_welcome() = w; return e; }
RecordEntry E(const brain::v1::SensorFrame& f) { RecordEntry e; *e.mutable_sensors() = f; return e; }
RecordEntry E(const brain::v1::MotorFrame& m) { RecordEntry e; *e.mutable_motors() = m; return e; }

TEST(PlanReplay, SendsWhatTheBrainRanAndSkipsWhatNeverReachedIt) {
  auto plan = sim::PlanReplay(Session({
      E(Hello()), E(Welcome(false, 0)),
      E(Sensors(1, 0.1f)), E(Motors(1, 1)),
      E(Sensors(2, 0.2f)), E(Motors(2, 1, brain::v1::SUPERSEDED)),
      E(Sensors(3, 5.0f)), E(Motors(3, 1, brain::v1::OUT_OF_RANGE)),
      E(Sensors(4, 0.4f)), E(Motors(4, 2)),
  }));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->brains.size(), 1u);
  EXPECT_EQ(plan->frames_recorded, 4);
  EXPECT_EQ(plan->frames_skipped, 1);  // seq 2, superseded
  const auto& frames = plan->brains[0].frames;
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].sensors.seq(), 1u);
  EXPECT_EQ(frames[1].sensors.seq(), 3u);  // rejected frames are sent again: the status must match
  EXPECT_EQ(frames[1].recorded->status(), brain::v1::OUT_OF_RANGE);
  EXPECT_EQ(frames[2].sensors.seq(), 4u);
  EXPECT_EQ(plan->brains[0].welcome.seed(), 42u);
}

TEST(PlanReplay, DecidesUnansweredFramesByTheCycleCounts) {
  // Seqs 2 and 3 lost their answers; cycle 4 at seq 4 says both ran.
  auto ran = sim::PlanReplay(Session({E(Hello()), E(Welcome(false, 0)), E(Sensors(1, 0)), E(Motors(1, 1)),
                                      E(Sensors(2, 0)), E(Sensors(3, 0)), E(Sensors(4, 0)), E(Motors(4, 4))}));
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_EQ(ran->brains[0].frames.size(), 4u);
  EXPECT_FALSE(ran->brains[0].frames[1].recorded.has_value());
  EXPECT_EQ(ran->frames_skipped, 0);
  // Cycle 2 at seq 4: neither ran.
  auto none = sim::PlanReplay(Session({E(Hello()), E(Welcome(false, 0)), E(Sensors(1, 0)), E(Motors(1, 1)),
                                       E(Sensors(2, 0)), E(Sensors(3, 0)), E(Sensors(4, 0)), E(Motors(4, 2))}));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->brains[0].frames.size(), 2u);
  EXPECT_EQ(none->frames_skipped, 2);
  // Cycle 3: one of the two ran, and nothing says which.
  auto ambiguous = sim::PlanReplay(Session({E(Hello()), E(Welcome(false, 0)), E(Sensors(1, 0)), E(Motors(1, 1)),
                                            E(Sensors(2, 0)), E(Sensors(3, 0)), E(Sensors(4, 0)), E(Motors(4, 3))}));
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(ambiguous.status().message().find("ran 1 of 2 frames"), std::string::npos) << ambiguous.status();
}

TEST(PlanReplay, AResumedReconnectContinuesTheBrainAndANewBrainStartsAnother) {
  auto plan = sim::PlanReplay(Session({
      E(Hello()), E(Welcome(false, 0)), E(Sensors(1, 0)), E(Motors(1, 1)),
      E(Sensors(2, 0)),                              // sent as the link dropped: did it run?
      E(Hello()), E(Welcome(true, 2)),               // the resumed brain is at cycle 2: it did
      E(Sensors(3, 0)), E(Motors(3, 3)),
      E(Hello()), E(Welcome(false, 0)),              // the kept brain was gone: a new one
      E(Sensors(4, 0)), E(Motors(4, 1)),
  }));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->brains.size(), 2u);
  EXPECT_EQ(plan->brains[0].frames.size(), 3u);
  EXPECT_EQ(plan->brains[1].frames.size(), 1u);
}

TEST(PlanReplay, RefusesARecordingThatDoesNotStartWithANewBrain) {
  auto resumed = sim::PlanReplay(Session({E(Hello()), E(Welcome(true, 500)), E(Sensors(1, 0)), E(Motors(1, 501))}));
  ASSERT_FALSE(resumed.ok());
  EXPECT_NE(resumed.status().message().find("resumed at cycle 500"), std::string::npos) << resumed.status();
  auto rolled_back = sim::PlanReplay(Session({E(Hello()), E(Welcome(false, 0)), E(Sensors(1, 0)), E(Motors(1, 1)),
                                              E(Sensors(2, 0)), E(Motors(2, 2)), E(Hello()), E(Welcome(true, 1))}));
  ASSERT_FALSE(rolled_back.ok());
  EXPECT_NE(rolled_back.status().message().find("went back from cycle 2 to 1"), std::string::npos)
      << rolled_back.status();
  EXPECT_FALSE(sim::PlanReplay(Session({E(Sensors(1, 0))})).ok());
  EXPECT_FALSE(sim::PlanReplay(Session({})).ok());
}

}  // namespace
}  // namespace fieldbrain::client

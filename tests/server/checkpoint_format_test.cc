// The checkpoint file format (server/checkpoint/checkpoint_format.h): a brain written and read
// back runs on exactly as the original, and damaged or foreign files are refused with a reason.
#include "server/checkpoint/checkpoint_format.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gpu/engine.h"
#include "gtest/gtest.h"
#include "common/sha256.h"
#include "server/checkpoint/checkpoint_files.h"
#include "server/brain_directory.h"
#include "server/checkpoint/checkpointer.h"

namespace fieldbrain::server {
namespace {

using ::testing::HasSubstr;

class CheckpointFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineConfig config;
    config.shape = FieldShape::Small();
    config.max_robots = 2;
    config.max_batch = 2;
    config.threads = 1;
    auto made = MakeEngine("cpu", config);
    ASSERT_TRUE(made.ok()) << made.status();
    engine_ = *std::move(made);
    BrainSpec spec;
    spec.seed = 4242;
    spec.sensor_count = 12;
    spec.motor_count = 4;
    original_ = *engine_->CreateBrain(spec);
    for (int t = 0; t < 40; ++t) Cycle(original_);
  }

  // One cycle of `slot` on frame number t_ (the same inputs for any slot at the same t_).
  BatchOutputRow Cycle(int slot) {
    std::mt19937 rng(uint32_t(1000 + t_));
    std::uniform_real_distribution<float> u(-1, 1);
    BatchInputRow& in = engine_->inputs()[0];
    in.slot = slot;
    in.reward = u(rng);
    for (int i = 0; i < 12; ++i) in.sensors[i] = u(rng);
    EXPECT_TRUE(engine_->RunBatch(1).ok());
    ++t_;
    return engine_->outputs()[0];
  }

  CheckpointHeader Header(const BrainSnapshot& s) {
    CheckpointHeader h;
    h.shape = s.shape;
    h.sensor_count = s.params.sensor_count;
    h.motor_count = s.params.motor_count;
    h.seed = s.params.seed;
    h.cycle = s.state.cycle;
    h.robot_id = "car-7";
    h.resume_token_sha256 = CheckpointReader::TokenHash(kToken);
    return h;
  }

  static brain::v1::Hello HelloOfCar7(bool fresh = false) {
    brain::v1::Hello hello;
    hello.mutable_profile()->set_robot_id("car-7");
    hello.mutable_profile()->set_sensor_count(4);
    hello.mutable_profile()->set_motor_count(2);
    hello.set_resume_token(fresh ? "" : kToken);
    hello.set_fresh(fresh);
    return hello;
  }
  // What a resumed Hello and its brain's creation tell the directory: original_ holds car-7's
  // brain of `generation`, resumable with kToken.
  void RestoreIntoOriginal(BrainDirectory& directory, uint64_t generation) {
    ASSERT_TRUE(directory.AttachRestored(HelloOfCar7(), 1, 99, generation).ok());
    directory.CompleteCreate("car-7", 1, original_);
  }

  static constexpr char kToken[] = "00112233445566778899aabbccddeeff";

  std::unique_ptr<Engine> engine_;
  int original_ = -1;
  int t_ = 0;
};

TEST_F(CheckpointFormatTest, ARestoredBrainRunsOnBitForBitAsTheOriginal) {
  const BrainSnapshot snapshot = *engine_->Snapshot(original_);
  const std::string bytes = EncodeCheckpoint(Header(snapshot), snapshot);
  EXPECT_EQ(bytes, EncodeCheckpoint(Header(snapshot), snapshot)) << "the encoding is deterministic";
  EXPECT_EQ(bytes.substr(0, 8), std::string("FBCHKPT\n", 8));
  EXPECT_EQ(bytes.substr(8, 4), std::string("\x05\x00\x00\x00", 4)) << "version 5, little-endian";

  absl::StatusOr<DecodedCheckpoint> decoded = DecodeCheckpoint(bytes, FieldShape::Small());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->header.robot_id, "car-7");
  EXPECT_EQ(decoded->header.cycle, 40u);
  EXPECT_EQ(decoded->header.seed, 4242u);
  EXPECT_EQ(decoded->header.resume_token_sha256, Header(snapshot).resume_token_sha256);

  BrainSpec spec;
  spec.seed = 1;  // a different brain, overwritten by the restore
  spec.sensor_count = 12;
  spec.motor_count = 4;
  const int copy = *engine_->CreateBrain(spec);
  ASSERT_TRUE(engine_->Restore(copy, decoded->snapshot).ok());
  const int t0 = t_;
  std::vector<BatchOutputRow> a, b;
  for (int i = 0; i < 25; ++i) a.push_back(Cycle(original_));
  t_ = t0;
  for (int i = 0; i < 25; ++i) b.push_back(Cycle(copy));
  for (int i = 0; i < 25; ++i) {
    ASSERT_EQ(a[i].cycle, b[i].cycle);
    for (int k = 0; k < 4; ++k) ASSERT_EQ(a[i].motors[k], b[i].motors[k]) << "cycle " << a[i].cycle << " motor " << k;
    ASSERT_EQ(a[i].confidence, b[i].confidence);
    for (int s = 0; s < 12; ++s) ASSERT_EQ(a[i].prediction[s], b[i].prediction[s]);
  }
  EXPECT_EQ(a.back().cycle, 65u);
}

// What a daemon compares with a brain in memory, read from the start of the file alone.
TEST_F(CheckpointFormatTest, TheHeadIsReadFromTheStartOfTheFile) {
  BrainSnapshot snapshot = *engine_->Snapshot(original_);
  CheckpointHeader header = Header(snapshot);
  header.cycle = 0x0102030405060708ull;
  header.generation = 0x1112131415161718ull;
  const std::string bytes = EncodeCheckpoint(header, snapshot);
  const std::string head = bytes.substr(0, kCheckpointHeadMax);
  for (const std::string& prefix : {head, bytes, bytes.substr(0, kCheckpointCycleEnd + 4 + 5 + 32 + 8)}) {
    const std::optional<CheckpointHead> h = PeekCheckpointHead(prefix);
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(h->cycle, 0x0102030405060708ull);
    EXPECT_EQ(h->robot_id, "car-7");
    EXPECT_EQ(h->resume_token_sha256, header.resume_token_sha256);
    EXPECT_EQ(h->generation, 0x1112131415161718ull);
  }
  EXPECT_EQ(PeekCheckpointHead(bytes.substr(0, kCheckpointCycleEnd + 4 + 5 + 32 + 7)), std::nullopt) << "cut short";
  std::string other_magic = head;
  other_magic[0] = 'X';
  EXPECT_EQ(PeekCheckpointHead(other_magic), std::nullopt);
  std::string other_version = head;
  other_version[8] = 6;
  EXPECT_EQ(PeekCheckpointHead(other_version), std::nullopt);
  other_version[8] = 3;
  EXPECT_EQ(PeekCheckpointHead(other_version), std::nullopt);
  std::string long_id = head;
  long_id[kCheckpointCycleEnd] = char(200);  // an id longer than the format allows
  EXPECT_EQ(PeekCheckpointHead(long_id), std::nullopt);
}

// Files of versions 1 and 2 hold no driver (gpu/model/driver.h), and version 3 files hold the
// field readout's actor and critic that version 4 dropped: each is refused with its reason, not
// resumed with an untrained driver or read with a layout it does not have.
TEST_F(CheckpointFormatTest, AFileOfAnOlderLayoutIsRefusedWithTheReason) {
  const BrainSnapshot snapshot = *engine_->Snapshot(original_);
  const std::string current = EncodeCheckpoint(Header(snapshot), snapshot);
  for (char old_version : {char(1), char(2), char(3)}) {
    std::string old = current;
    old[8] = old_version;
    const absl::Status status = DecodeCheckpoint(old, FieldShape::Small()).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(status.message(), HasSubstr(old_version < 3 ? "predates the brain's driver"
                                                            : "holds the field readout's retired actor and critic"));
    EXPECT_THAT(status.message(), HasSubstr("format version " + std::to_string(int(old_version))));
    EXPECT_THAT(status.message(), HasSubstr("the robot starts a new brain"));
    EXPECT_EQ(PeekCheckpointHead(old), std::nullopt);
  }
}

// Version 5 appended the driver's undo after the memory's patterns: a version 4 file (the same
// bytes without those three counts) still resumes its brain, with the undo idle.
TEST_F(CheckpointFormatTest, AVersion4FileResumesItsBrainWithTheUndoIdle) {
  const BrainSnapshot snapshot = *engine_->Snapshot(original_);
  ASSERT_EQ(snapshot.state.undo_left, 0);
  ASSERT_EQ(snapshot.state.undo_held, 0);
  ASSERT_EQ(snapshot.state.undo_since, model::kUndoSinceCap);
  const std::string current = EncodeCheckpoint(Header(snapshot), snapshot);
  constexpr size_t kUndoBytes = 3 * sizeof(int32_t);
  const size_t length_at = kCheckpointCycleEnd + 4 + std::string("car-7").size() + 32 + 8;
  const size_t payload_at = length_at + 8 + 32;
  std::string v4 = current.substr(0, current.size() - kUndoBytes);
  v4[8] = 4;
  const uint64_t payload_bytes = v4.size() - payload_at;
  for (int i = 0; i < 8; ++i) v4[length_at + size_t(i)] = char(uint8_t(payload_bytes >> (8 * i)));
  const Sha256Digest digest = Sha256(absl::string_view(v4).substr(0, length_at + 8), absl::string_view(v4).substr(payload_at));
  v4.replace(length_at + 8, 32, reinterpret_cast<const char*>(digest.data()), 32);

  absl::StatusOr<DecodedCheckpoint> decoded = DecodeCheckpoint(v4, FieldShape::Small());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->snapshot.state.undo_left, 0);
  EXPECT_EQ(decoded->snapshot.state.undo_held, 0);
  EXPECT_EQ(decoded->snapshot.state.undo_since, model::kUndoSinceCap);
  EXPECT_EQ(decoded->snapshot.state.cycle, snapshot.state.cycle);
  EXPECT_EQ(EncodeCheckpoint(Header(decoded->snapshot), decoded->snapshot), current)
      << "written again, it is the version 5 file of the original, whose undo was idle too";
}

// Daemons behind one proxy share the directory: a checkpoint is never written over the same
// session's file of a later cycle (the robot ran on elsewhere); an older cycle, or another
// session's file, is replaced.
TEST_F(CheckpointFormatTest, TheWriterLeavesALaterFileOfTheSameSessionAlone) {
  const std::string dir = ::testing::TempDir() + "/checkpoint_writer." + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const BrainSnapshot snapshot = *engine_->Snapshot(original_);
  CheckpointHeader mine = Header(snapshot);
  BrainDirectory directory(2, absl::Seconds(60), /*saves_brains=*/true, [](int) {});
  Checkpointer checkpointer(dir, &directory, nullptr);
  checkpointer.set_shape(FieldShape::Small());
  RestoreIntoOriginal(directory, 0);
  auto hand_over = [&](uint64_t cycle) {  // what the engine thread does for a checkpoint
    BrainSnapshot* buffer = checkpointer.Claim(original_);
    ASSERT_NE(buffer, nullptr);
    *buffer = snapshot;
    buffer->state.cycle = cycle;
    checkpointer.Take(original_, buffer, true);
    ASSERT_TRUE(checkpointer.Flush(absl::Seconds(10)));
  };
  const std::string path = CheckpointPath(dir, "car-7");
  auto cycle_on_disk = [&] { return PeekCheckpointHead(*ReadWholeFile(path))->cycle; };

  CheckpointHeader later = mine;
  later.cycle = 55;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << EncodeCheckpoint(later, snapshot);
  hand_over(41);
  EXPECT_EQ(cycle_on_disk(), 55u) << "a later cycle of the same session was overwritten";

  CheckpointHeader other_session = mine;
  other_session.cycle = 3;
  other_session.resume_token_sha256[0] ^= 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << EncodeCheckpoint(other_session, snapshot);
  hand_over(42);
  EXPECT_EQ(cycle_on_disk(), 42u) << "another session's file must be replaced";

  CheckpointHeader earlier = mine;
  earlier.cycle = 20;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << EncodeCheckpoint(earlier, snapshot);
  hand_over(43);
  EXPECT_EQ(cycle_on_disk(), 43u) << "this session's own older file must be replaced";
  EXPECT_EQ(checkpointer.written(), 2);

  CheckpointHeader newer_brain = mine;  // the robot started a new brain on another daemon
  newer_brain.generation = 5;
  newer_brain.cycle = 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << EncodeCheckpoint(newer_brain, snapshot);
  hand_over(44);
  EXPECT_EQ(cycle_on_disk(), 1u) << "a newer generation's file was overwritten by an older brain";
  const std::optional<CheckpointHead> head = checkpointer.reader().HeadOnDisk("car-7");
  ASSERT_TRUE(head.has_value());
  directory.Detach("car-7", 1, absl::Now());
  absl::StatusOr<SessionGrant> fresh = directory.Attach(HelloOfCar7(/*fresh=*/true), 2, absl::Now(), head->generation);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->generation, 6u) << "a new brain goes above the file's generation";
}

// `fresh` while the writer already holds a copy of the old brain (written to its temporary file,
// not yet renamed): the copy is dropped at its last check, so the deleted file does not come back.
TEST_F(CheckpointFormatTest, AFreshBrainsDiscardBeatsAWriteAlreadyUnderWay) {
  const std::string dir = ::testing::TempDir() + "/checkpoint_fresh." + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const BrainSnapshot snapshot = *engine_->Snapshot(original_);
  BrainDirectory directory(2, absl::Seconds(60), /*saves_brains=*/true, [](int) {});
  Checkpointer checkpointer(dir, &directory, nullptr);
  checkpointer.set_shape(FieldShape::Small());
  ASSERT_TRUE(directory.Attach(HelloOfCar7(), 1, absl::Now()).ok());
  directory.CompleteCreate("car-7", 1, original_);
  checkpointer.HoldWritesBeforeRenameForTesting(true);
  BrainSnapshot* buffer = checkpointer.Claim(original_);
  ASSERT_NE(buffer, nullptr);
  *buffer = snapshot;
  checkpointer.Take(original_, buffer, true);
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (checkpointer.WritesHeldForTesting() == 0 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_EQ(checkpointer.WritesHeldForTesting(), 1);
  // The fresh Hello's admission: a new brain of the next generation, then the file goes.
  directory.Detach("car-7", 1, absl::Now());
  ASSERT_TRUE(directory.Attach(HelloOfCar7(/*fresh=*/true), 2, absl::Now()).ok());
  checkpointer.Discard("car-7");
  checkpointer.HoldWritesBeforeRenameForTesting(false);
  ASSERT_TRUE(checkpointer.Flush(absl::Seconds(10)));
  EXPECT_FALSE(std::filesystem::exists(CheckpointPath(dir, "car-7"))) << "the old brain's copy came back";
  EXPECT_EQ(checkpointer.written(), 0);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << "left behind: " << entry.path();
  }
}

TEST_F(CheckpointFormatTest, DamagedOrForeignFilesAreRefusedWithTheReason) {
  const BrainSnapshot snapshot = *engine_->Snapshot(original_);
  const std::string bytes = EncodeCheckpoint(Header(snapshot), snapshot);
  // Every cut, at a spread of lengths, is refused and never read past.
  for (size_t n = 0; n < bytes.size(); n += 997) {
    EXPECT_FALSE(DecodeCheckpoint(bytes.substr(0, n), FieldShape::Small()).ok()) << n;
  }
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x10;
  EXPECT_THAT(DecodeCheckpoint(flipped, FieldShape::Small()).status().message(), HasSubstr("SHA-256 mismatch"));
  std::string header_flipped = bytes;
  header_flipped[60] ^= 0x01;  // in the motor count: the hash covers the header too
  EXPECT_FALSE(DecodeCheckpoint(header_flipped, FieldShape::Small()).ok());
  EXPECT_THAT(DecodeCheckpoint("a text file", FieldShape::Small()).status().message(), HasSubstr("not a fieldbrain"));
  std::string future = bytes;
  future[8] = 6;
  const absl::Status v6 = DecodeCheckpoint(future, FieldShape::Small()).status();
  EXPECT_EQ(v6.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(v6.message(), HasSubstr("format version 6; this daemon reads versions 4 to 5"));
  // The driver's undo state is checked like any other count: an undo held for 1000 cycles is no
  // state this daemon writes.
  BrainSnapshot long_undo = snapshot;
  long_undo.state.undo_left = 1000;
  long_undo.state.undo_held = 1;
  const absl::Status undo = DecodeCheckpoint(EncodeCheckpoint(Header(long_undo), long_undo), FieldShape::Small()).status();
  EXPECT_EQ(undo.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(undo.message(), HasSubstr("undo state is out of range"));
  const absl::Status shape = DecodeCheckpoint(bytes, FieldShape::Default()).status();
  EXPECT_EQ(shape.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(shape.message(), HasSubstr("field shape 32x16x16x16; this daemon runs 64x32x32x32"));
  EXPECT_FALSE(DecodeCheckpoint(bytes + "x", FieldShape::Small()).ok()) << "padded";
}

}  // namespace
}  // namespace fieldbrain::server

// BrainDirectory, its place half: where a robot's brain is (being created, live, kept, releasing,
// being saved, on disk), which generation is the real one, and which slot's copies are wanted.
#include "server/brain_directory.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/checkpoint/checkpoint_reader.h"

namespace fieldbrain::server {
namespace {

using ::testing::ElementsAre;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

brain::v1::Hello MakeHello(const std::string& id, const std::string& token = "", bool fresh = false) {
  brain::v1::Hello h;
  h.mutable_profile()->set_robot_id(id);
  h.mutable_profile()->set_sensor_count(4);
  h.mutable_profile()->set_motor_count(2);
  h.set_resume_token(token);
  h.set_fresh(fresh);
  return h;
}

class BrainDirectoryTest : public ::testing::Test {
 protected:
  explicit BrainDirectoryTest(bool saves_brains = true)
      : d_(4, absl::Seconds(60), saves_brains, [this](int slot) { released_.push_back(slot); }) {}

  SessionGrant Connect(const brain::v1::Hello& hello, StreamId stream, int slot, uint64_t on_disk_generation = 0) {
    absl::StatusOr<SessionGrant> g = d_.Attach(hello, stream, now_, on_disk_generation);
    EXPECT_TRUE(g.ok()) << g.status();
    if (!g.ok()) return {};
    if (g->needs_brain()) {
      d_.CompleteCreate(hello.profile().robot_id(), stream, slot);
      g->slot = slot;
    }
    return *g;
  }

  absl::Time now_ = kT0;
  std::vector<int> released_;
  BrainDirectory d_;
};

TEST_F(BrainDirectoryTest, ABrainGoesLiveKeptReleasingSavingAndOnDisk) {
  EXPECT_EQ(d_.PlaceOf("car"), std::nullopt);
  EXPECT_TRUE(d_.AwaitSettled("car", absl::ZeroDuration())) << "a robot never seen has nothing on its way";
  absl::StatusOr<SessionGrant> g = d_.Attach(MakeHello("car"), 1, now_);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(d_.PlaceOf("car"), BrainPlace::kCreating);
  EXPECT_EQ(g->generation, 1u);
  EXPECT_FALSE(d_.CopiesWanted(2)) << "no brain in the slot yet";
  d_.CompleteCreate("car", 1, 2);
  EXPECT_EQ(d_.PlaceOf("car"), BrainPlace::kLive);
  ASSERT_TRUE(d_.BrainIn(2).has_value());
  EXPECT_EQ(d_.BrainIn(2)->robot_id, "car");
  EXPECT_EQ(d_.BrainIn(2)->generation, 1u);
  EXPECT_EQ(d_.BrainIn(2)->token_sha256, CheckpointReader::TokenHash(g->resume_token));

  d_.Written("car", 1, 40);  // a periodic copy: the brain stays in its slot
  d_.Settled("car");
  EXPECT_EQ(d_.PlaceOf("car"), BrainPlace::kLive);
  EXPECT_EQ(d_.BrainIn(2)->written_cycle, 40u);

  d_.Detach("car", 1, now_);
  EXPECT_EQ(d_.PlaceOf("car"), BrainPlace::kKept);
  EXPECT_EQ(d_.ExpireIdle(now_ + absl::Seconds(60)), 1);
  EXPECT_THAT(released_, ElementsAre(2));
  EXPECT_EQ(d_.PlaceOf("car"), BrainPlace::kReleasing);
  EXPECT_TRUE(d_.CopiesWanted(2)) << "its final copy is still wanted";
  EXPECT_FALSE(d_.Knows("car"));
  EXPECT_FALSE(d_.AwaitSettled("car", absl::ZeroDuration())) << "a Hello waits for the final copy";

  d_.SlotFreed(2, /*copy_on_its_way=*/true);
  EXPECT_EQ(d_.PlaceOf("car"), BrainPlace::kSaving);
  EXPECT_FALSE(d_.CopiesWanted(2));
  EXPECT_FALSE(d_.AwaitSettled("car", absl::ZeroDuration()));
  d_.Settled("car");
  EXPECT_EQ(d_.PlaceOf("car"), BrainPlace::kOnDisk);
  EXPECT_TRUE(d_.AwaitSettled("car", absl::ZeroDuration()));
}

TEST_F(BrainDirectoryTest, ANewBrainsGenerationGoesAboveItsFileAndLeavesTheOldCopiesUnwritten) {
  const SessionGrant first = Connect(MakeHello("arm"), 1, 0, /*on_disk_generation=*/7);
  EXPECT_EQ(first.generation, 8u) << "above the file's";
  d_.Detach("arm", 1, now_);
  // fresh: the kept brain's slot goes, and nothing of it may be written any more.
  const SessionGrant fresh = Connect(MakeHello("arm", "", /*fresh=*/true), 2, 1, /*on_disk_generation=*/8);
  EXPECT_EQ(fresh.generation, 9u);
  EXPECT_THAT(released_, ElementsAre(0));
  EXPECT_FALSE(d_.CopiesWanted(0)) << "the old brain's final copy is not taken";
  EXPECT_FALSE(d_.BrainIn(0).has_value());
  d_.SlotFreed(0, false);  // its late release changes nothing of the new brain
  EXPECT_EQ(d_.PlaceOf("arm"), BrainPlace::kLive);
  d_.Written("arm", 8, 100);  // a copy of the old generation that slipped through: not recorded
  ASSERT_TRUE(d_.BrainIn(1).has_value());
  EXPECT_EQ(d_.BrainIn(1)->written_cycle, std::nullopt);
  EXPECT_EQ(d_.BrainIn(1)->generation, 9u);
  EXPECT_EQ(d_.Generation("arm"), 9u);
}

TEST_F(BrainDirectoryTest, AnExpiredBrainReplacedByANewOneIsNotWritten) {
  const SessionGrant old = Connect(MakeHello("rover"), 1, 3);
  d_.Detach("rover", 1, now_);
  now_ += absl::Seconds(60);  // expired, not reaped yet
  const SessionGrant late = Connect(MakeHello("rover", old.resume_token), 2, 0);
  EXPECT_FALSE(late.resumed);
  EXPECT_EQ(late.generation, old.generation + 1);
  EXPECT_THAT(released_, ElementsAre(3));
  EXPECT_FALSE(d_.CopiesWanted(3));
  EXPECT_TRUE(d_.CopiesWanted(0));
}

TEST_F(BrainDirectoryTest, AKeptCopyGivesWayToANewerFileWithoutAFinalCopy) {
  Connect(MakeHello("rover"), 1, 2);
  d_.Detach("rover", 1, now_);
  EXPECT_TRUE(d_.DropKept("rover"));
  EXPECT_THAT(released_, ElementsAre(2));
  EXPECT_EQ(d_.PlaceOf("rover"), BrainPlace::kOnDisk);
  EXPECT_FALSE(d_.CopiesWanted(2));
  EXPECT_TRUE(d_.AwaitSettled("rover", absl::ZeroDuration())) << "its file is the newest copy";
  d_.SlotFreed(2, true);  // the slot's release, after: nothing changes
  EXPECT_EQ(d_.PlaceOf("rover"), BrainPlace::kOnDisk);
  EXPECT_FALSE(d_.DropKept("rover")) << "only a kept brain gives way";
}

TEST_F(BrainDirectoryTest, ALiveBrainNeverGivesWay) {
  Connect(MakeHello("rover"), 1, 2);
  EXPECT_FALSE(d_.DropKept("rover"));
  EXPECT_THAT(released_, ::testing::IsEmpty());
  EXPECT_EQ(d_.PlaceOf("rover"), BrainPlace::kLive);
}

TEST_F(BrainDirectoryTest, ARestoredBrainKeepsItsGenerationAndToken) {
  const std::string token = "00112233445566778899aabbccddeeff";
  absl::StatusOr<SessionGrant> g = d_.AttachRestored(MakeHello("arm", token), 1, /*seed=*/77, /*generation=*/5);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->resumed);
  EXPECT_EQ(g->generation, 5u);
  EXPECT_EQ(g->seed, 77u);
  EXPECT_EQ(g->resume_token, token);
  d_.CompleteCreate("arm", 1, 3);
  ASSERT_TRUE(d_.BrainIn(3).has_value());
  EXPECT_EQ(d_.BrainIn(3)->generation, 5u);
  EXPECT_EQ(d_.BrainIn(3)->token_sha256, CheckpointReader::TokenHash(token));
  EXPECT_EQ(d_.AttachRestored(MakeHello("arm", token), 2, 77, 5).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(BrainDirectoryTest, AwaitSettledWakesWhenTheFinalCopyLands) {
  Connect(MakeHello("car"), 1, 0);
  d_.Detach("car", 1, now_);
  d_.ExpireIdle(now_ + absl::Hours(1));
  d_.SlotFreed(0, true);
  std::thread writer([this] {
    absl::SleepFor(absl::Milliseconds(20));
    d_.Settled("car");
  });
  EXPECT_TRUE(d_.AwaitSettled("car", absl::Seconds(30)));
  writer.join();
}

class NoCheckpointsBrainDirectoryTest : public BrainDirectoryTest {
 protected:
  NoCheckpointsBrainDirectoryTest() : BrainDirectoryTest(/*saves_brains=*/false) {}
};

TEST_F(NoCheckpointsBrainDirectoryTest, AReleasedBrainIsGoneAtOnce) {
  Connect(MakeHello("car"), 1, 1);
  d_.Detach("car", 1, now_);
  d_.ExpireIdle(now_ + absl::Hours(1));
  EXPECT_EQ(d_.PlaceOf("car"), BrainPlace::kOnDisk);
  EXPECT_FALSE(d_.CopiesWanted(1));
  EXPECT_TRUE(d_.AwaitSettled("car", absl::ZeroDuration()));
}

// Every place under every event, as the directory's one transition function has it.
TEST(BrainPlaceTest, EveryPlaceUnderEveryEvent) {
  using P = BrainPlace;
  using E = BrainEvent;
  const P places[] = {P::kCreating, P::kLive, P::kKept, P::kReleasing, P::kSaving, P::kOnDisk};
  for (P p : places) {
    SCOPED_TRACE(BrainPlaceName(p));
    EXPECT_EQ(NextPlace(p, E::kReserved, false), P::kCreating);
    for (bool copy : {false, true}) {
      EXPECT_EQ(NextPlace(p, E::kCreated, copy), p == P::kCreating ? P::kLive : p);
      EXPECT_EQ(NextPlace(p, E::kCreatedAlone, copy), p == P::kCreating ? P::kKept : p);
      EXPECT_EQ(NextPlace(p, E::kCreateFailed, copy), p == P::kCreating ? P::kOnDisk : p);
      EXPECT_EQ(NextPlace(p, E::kResumed, copy), p == P::kKept ? P::kLive : p);
      EXPECT_EQ(NextPlace(p, E::kDetached, copy), p == P::kLive ? P::kKept : p);
      EXPECT_EQ(NextPlace(p, E::kSettled, copy), p == P::kSaving ? P::kOnDisk : p);
      EXPECT_EQ(NextPlace(p, E::kGaveWay, copy), p == P::kKept ? P::kOnDisk : p);
    }
  }
  EXPECT_EQ(NextPlace(P::kLive, E::kReleased, true), P::kReleasing);
  EXPECT_EQ(NextPlace(P::kKept, E::kReleased, true), P::kReleasing);
  EXPECT_EQ(NextPlace(P::kKept, E::kReleased, false), P::kOnDisk);
  EXPECT_EQ(NextPlace(P::kCreating, E::kReleased, true), P::kOnDisk) << "no brain yet, nothing to save";
  EXPECT_EQ(NextPlace(P::kSaving, E::kReleased, true), P::kSaving);
  EXPECT_EQ(NextPlace(P::kReleasing, E::kFreed, true), P::kSaving);
  EXPECT_EQ(NextPlace(P::kReleasing, E::kFreed, false), P::kOnDisk);
  EXPECT_EQ(NextPlace(P::kLive, E::kFreed, true), P::kLive);
  EXPECT_EQ(NextPlace(P::kOnDisk, E::kFreed, true), P::kOnDisk);
}

}  // namespace
}  // namespace fieldbrain::server

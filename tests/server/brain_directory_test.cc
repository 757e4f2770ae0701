// BrainDirectory: where a robot's brain is (in a slot, being saved, on disk, discarded) and which
// generation is the real one, event by event.
#include "server/checkpoint/brain_directory.h"

#include "gtest/gtest.h"

namespace fieldbrain::server {
namespace {

constexpr std::array<uint8_t, 32> kToken{1, 2, 3};

TEST(BrainDirectoryTest, ABrainGoesFromItsSlotThroughSavingToDisk) {
  BrainDirectory d(4);
  EXPECT_EQ(d.Find("car"), nullptr);
  EXPECT_FALSE(d.Unsettled("car")) << "a robot never seen has nothing on its way";
  d.Bind(2, "car", kToken, d.NewGeneration("car", 0));
  ASSERT_NE(d.RobotIn(2), nullptr);
  EXPECT_EQ(*d.RobotIn(2), "car");
  EXPECT_EQ(d.Find("car")->place, BrainPlace::kInSlot);
  EXPECT_EQ(d.Find("car")->generation, 1u);
  EXPECT_TRUE(d.Unsettled("car"));
  d.Written("car", 40);  // a periodic copy: still in its slot
  d.Settled("car");
  EXPECT_EQ(d.Find("car")->place, BrainPlace::kInSlot);
  EXPECT_EQ(d.Find("car")->written_cycle, 40u);
  d.Released(2, /*copy_on_its_way=*/true);
  EXPECT_EQ(d.RobotIn(2), nullptr);
  EXPECT_EQ(d.Find("car")->place, BrainPlace::kSaving);
  EXPECT_TRUE(d.Unsettled("car")) << "a Hello waits while the final copy is on its way";
  d.Settled("car");
  EXPECT_EQ(d.Find("car")->place, BrainPlace::kOnDisk);
  EXPECT_FALSE(d.Unsettled("car"));
}

TEST(BrainDirectoryTest, GenerationsOnlyRiseAndADiscardMovesThemOn) {
  BrainDirectory d(2);
  EXPECT_EQ(d.NewGeneration("arm", 7), 8u) << "above the file's";
  d.Bind(0, "arm", kToken, 8);
  d.Bind(1, "arm", kToken, 3);  // an older generation bound later does not lower it
  EXPECT_EQ(d.Find("arm")->generation, 8u);
  d.Released(1, false);
  EXPECT_EQ(d.Find("arm")->place, BrainPlace::kInSlot) << "slot 0 still holds the robot";
  d.Discard("arm", 2);
  EXPECT_EQ(d.RobotIn(0), nullptr);
  EXPECT_EQ(d.Find("arm")->place, BrainPlace::kDiscarded);
  EXPECT_EQ(d.Find("arm")->generation, 9u);
  EXPECT_FALSE(d.Unsettled("arm"));
  d.Settled("arm");  // the old brain's write, dropped at its last check
  EXPECT_EQ(d.Find("arm")->place, BrainPlace::kDiscarded);
  EXPECT_EQ(d.NewGeneration("arm", 0), 10u);
}

TEST(BrainDirectoryTest, AKeptCopyGivesWayToANewerFile) {
  BrainDirectory d(1);
  d.Bind(0, "rover", kToken, 1);
  d.GaveWay("rover");
  EXPECT_EQ(d.RobotIn(0), nullptr);
  EXPECT_EQ(d.Find("rover")->place, BrainPlace::kOnDisk);
  d.Released(0, true);  // the slot's release, after: nothing changes
  EXPECT_EQ(d.Find("rover")->place, BrainPlace::kOnDisk);
}

// Every place under every event, as the directory's one transition function has it.
TEST(BrainDirectoryTest, EveryPlaceUnderEveryEvent) {
  using P = BrainPlace;
  using E = BrainEvent;
  const P places[] = {P::kInSlot, P::kSaving, P::kOnDisk, P::kDiscarded};
  for (P p : places) {
    EXPECT_EQ(NextPlace(p, E::kBound, false), P::kInSlot) << BrainPlaceName(p);
    EXPECT_EQ(NextPlace(p, E::kDiscarded, false), P::kDiscarded) << BrainPlaceName(p);
  }
  EXPECT_EQ(NextPlace(P::kInSlot, E::kReleased, true), P::kSaving);
  EXPECT_EQ(NextPlace(P::kInSlot, E::kReleased, false), P::kOnDisk);
  EXPECT_EQ(NextPlace(P::kDiscarded, E::kReleased, true), P::kDiscarded);
  EXPECT_EQ(NextPlace(P::kSaving, E::kSettled, false), P::kOnDisk);
  EXPECT_EQ(NextPlace(P::kInSlot, E::kSettled, false), P::kInSlot);
  EXPECT_EQ(NextPlace(P::kDiscarded, E::kSettled, false), P::kDiscarded);
  EXPECT_EQ(NextPlace(P::kInSlot, E::kGaveWay, false), P::kOnDisk);
  EXPECT_EQ(NextPlace(P::kSaving, E::kGaveWay, false), P::kOnDisk);
  EXPECT_EQ(NextPlace(P::kDiscarded, E::kGaveWay, false), P::kDiscarded);
}

}  // namespace
}  // namespace fieldbrain::server

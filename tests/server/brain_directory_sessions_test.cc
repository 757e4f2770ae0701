// BrainDirectory, its session half: who gets which brain at a Hello, keeping, expiry, eviction.
#include "server/brain_directory.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fieldbrain::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

brain::v1::Hello MakeHello(const std::string& id, const std::string& token = "",
                           bool fresh = false, uint64_t seed = 0, uint32_t sensors = 4) {
  brain::v1::Hello h;
  h.mutable_profile()->set_robot_id(id);
  h.mutable_profile()->set_sensor_count(sensors);
  h.mutable_profile()->set_motor_count(2);
  h.set_resume_token(token);
  h.set_fresh(fresh);
  h.set_seed(seed);
  return h;
}

class BrainDirectorySessionsTest : public ::testing::Test {
 protected:
  explicit BrainDirectorySessionsTest(int capacity = 4, absl::Duration keep = absl::Seconds(60))
      : table_(capacity, keep, /*saves_brains=*/true, [this](int slot) { released_.push_back(slot); }) {}

  // Attach + create, as the service does: a new brain gets the next free slot.
  SessionGrant Connect(const brain::v1::Hello& hello, StreamId stream) {
    absl::StatusOr<SessionGrant> g = table_.Attach(hello, stream, now_);
    EXPECT_TRUE(g.ok()) << g.status();
    if (!g.ok()) return {};
    if (g->needs_brain()) {
      g->slot = next_slot_++;
      table_.CompleteCreate(hello.profile().robot_id(), stream, g->slot);
    }
    return *g;
  }

  absl::Time now_ = kT0;
  int next_slot_ = 0;
  std::vector<int> released_;
  BrainDirectory table_;
};

TEST_F(BrainDirectorySessionsTest, NewRobotGetsReservationSeedAndToken) {
  absl::StatusOr<SessionGrant> g = table_.Attach(MakeHello("r1"), 1, now_);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->needs_brain());
  EXPECT_FALSE(g->resumed);
  EXPECT_NE(g->seed, 0u) << "seed 0 means: the server picks one";
  EXPECT_EQ(g->resume_token.size(), 32u);
  EXPECT_FALSE(g->session_id.empty());
  EXPECT_EQ(table_.live(), 1);
  EXPECT_EQ(table_.slots_held(), 1);
  table_.CompleteCreate("r1", 1, 0);
  EXPECT_EQ(table_.slots_held(), 1);

  absl::StatusOr<SessionGrant> seeded = table_.Attach(MakeHello("r2", "", false, 42), 2, now_);
  ASSERT_TRUE(seeded.ok());
  EXPECT_EQ(seeded->seed, 42u);
  EXPECT_NE(seeded->resume_token, g->resume_token);
}

TEST_F(BrainDirectorySessionsTest, SecondLiveStreamForOneIdIsAlreadyExists) {
  Connect(MakeHello("r1"), 1);
  absl::StatusOr<SessionGrant> dup = table_.Attach(MakeHello("r1"), 2, now_);
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(dup.status().message(), HasSubstr("already has a live stream"));
  // Also while the first one's brain is still being created.
  ASSERT_TRUE(table_.Attach(MakeHello("r2"), 3, now_).ok());
  EXPECT_EQ(table_.Attach(MakeHello("r2"), 4, now_).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(released_, IsEmpty());
  EXPECT_EQ(table_.live(), 2);
}

TEST_F(BrainDirectorySessionsTest, ResumeWithTokenGetsTheSameBrain) {
  const SessionGrant first = Connect(MakeHello("r1"), 1);
  table_.Detach("r1", 1, now_);
  EXPECT_EQ(table_.live(), 0);
  EXPECT_EQ(table_.kept(), 1);
  now_ += absl::Seconds(59);
  const SessionGrant again = Connect(MakeHello("r1", first.resume_token), 2);
  EXPECT_TRUE(again.resumed);
  EXPECT_EQ(again.slot, first.slot);
  EXPECT_EQ(again.seed, first.seed);
  EXPECT_EQ(again.session_id, first.session_id);
  EXPECT_EQ(again.resume_token, first.resume_token);
  EXPECT_THAT(released_, IsEmpty());
  EXPECT_EQ(table_.live(), 1);
}

TEST_F(BrainDirectorySessionsTest, AKeptBrainIsRefusedWithoutItsTokenAndDiscardedOnlyByFresh) {
  SessionGrant g = Connect(MakeHello("r1"), 1);
  table_.Detach("r1", 1, now_);
  now_ += absl::Seconds(12);
  for (const std::string& token : {std::string(), std::string("00112233445566778899aabbccddeeff"),
                                   g.resume_token.substr(0, 31)}) {
    absl::StatusOr<SessionGrant> refused = table_.Attach(MakeHello("r1", token), 2, now_);
    ASSERT_FALSE(refused.ok()) << "token '" << token << "'";
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(refused.status().message().find("has a kept brain (detached 12s ago); send the resume_token"),
              std::string::npos)
        << refused.status();
    EXPECT_NE(refused.status().message().find("fresh=true"), std::string::npos);
  }
  EXPECT_THAT(released_, IsEmpty()) << "a refused Hello must not cost the kept brain";
  EXPECT_EQ(table_.kept(), 1);

  SessionGrant fresh = Connect(MakeHello("r1", "", /*fresh=*/true), 3);
  EXPECT_FALSE(fresh.resumed);
  EXPECT_NE(fresh.resume_token, g.resume_token);
  EXPECT_THAT(released_, ElementsAre(g.slot));
  EXPECT_EQ(table_.slots_held(), 1);
}

TEST_F(BrainDirectorySessionsTest, AChangedProfileIsRefusedEvenWithTheToken) {
  SessionGrant g = Connect(MakeHello("r1"), 1);
  table_.Detach("r1", 1, now_);
  absl::StatusOr<SessionGrant> other = table_.Attach(MakeHello("r1", g.resume_token, false, 0, /*sensors=*/5), 2, now_);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(other.status().message().find("has 4 sensors and 2 motors, this Hello's profile 5 and 2"),
            std::string::npos)
      << other.status();
  EXPECT_THAT(released_, IsEmpty());
  EXPECT_TRUE(Connect(MakeHello("r1", g.resume_token), 3).resumed);
}

TEST_F(BrainDirectorySessionsTest, ResumeTokensAreLongRandomAndDistinct) {
  std::set<std::string> tokens;
  for (int i = 0; i < 64; ++i) {
    SessionGrant g = Connect(MakeHello("robot-" + std::to_string(i % 4), "", /*fresh=*/true), StreamId(100 + i));
    table_.Detach("robot-" + std::to_string(i % 4), StreamId(100 + i), now_);
    EXPECT_EQ(g.resume_token.size(), 32u);
    EXPECT_EQ(g.resume_token.find_first_not_of("0123456789abcdef"), std::string::npos);
    tokens.insert(g.resume_token);
  }
  EXPECT_EQ(tokens.size(), 64u);
}

TEST_F(BrainDirectorySessionsTest, IdleBrainExpiresOnceAndIsNotResumedAfter) {
  SessionGrant g = Connect(MakeHello("r1"), 1);
  table_.Detach("r1", 1, now_);
  EXPECT_EQ(table_.ExpireIdle(now_ + absl::Seconds(59)), 0);
  EXPECT_THAT(released_, IsEmpty());
  EXPECT_EQ(table_.ExpireIdle(now_ + absl::Seconds(60)), 1);
  EXPECT_EQ(table_.ExpireIdle(now_ + absl::Seconds(61)), 0);
  EXPECT_THAT(released_, ElementsAre(g.slot));
  EXPECT_EQ(table_.kept(), 0);
  EXPECT_EQ(table_.slots_held(), 0);

  now_ += absl::Seconds(61);
  SessionGrant late = Connect(MakeHello("r1", g.resume_token), 2);
  EXPECT_FALSE(late.resumed);
  EXPECT_THAT(released_, ElementsAre(g.slot)) << "nothing more to free";
}

TEST_F(BrainDirectorySessionsTest, ExpiredButNotYetReapedIsNotResumed) {
  SessionGrant g = Connect(MakeHello("r1"), 1);
  table_.Detach("r1", 1, now_);
  now_ += absl::Seconds(60);
  SessionGrant late = Connect(MakeHello("r1", g.resume_token), 2);
  EXPECT_FALSE(late.resumed);
  EXPECT_THAT(released_, ElementsAre(g.slot));
}

TEST_F(BrainDirectorySessionsTest, ReleaseIsIdempotentAcrossDetachExpiryAndStaleStreams) {
  SessionGrant g = Connect(MakeHello("r1"), 1);
  table_.Detach("r1", 1, now_);
  table_.Detach("r1", 1, now_);  // a cancelled stream reporting twice
  table_.Detach("r1", 99, now_);  // a stream that never owned it
  SessionGrant resumed = Connect(MakeHello("r1", g.resume_token), 2);
  ASSERT_TRUE(resumed.resumed);
  table_.Detach("r1", 1, now_);  // the old stream's late report must not detach the new one
  EXPECT_EQ(table_.live(), 1);
  EXPECT_EQ(table_.ExpireIdle(now_ + absl::Hours(1)), 0);
  table_.Detach("r1", 2, now_);
  EXPECT_EQ(table_.ExpireIdle(now_ + absl::Hours(1)), 1);
  EXPECT_EQ(table_.ExpireIdle(now_ + absl::Hours(2)), 0);
  table_.Detach("r1", 2, now_);
  EXPECT_THAT(released_, ElementsAre(g.slot));
  EXPECT_EQ(table_.slots_released(), 1);
  EXPECT_EQ(table_.slots_held(), 0);
  EXPECT_EQ(table_.live(), 0);
}

TEST_F(BrainDirectorySessionsTest, AbortedCreateFreesTheIdAndTheReservation) {
  ASSERT_TRUE(table_.Attach(MakeHello("r1"), 1, now_).ok());
  EXPECT_EQ(table_.slots_held(), 1);
  table_.AbortCreate("r1", 1);
  EXPECT_EQ(table_.slots_held(), 0);
  EXPECT_EQ(table_.live(), 0);
  EXPECT_TRUE(table_.Attach(MakeHello("r1"), 2, now_).ok());
  EXPECT_THAT(released_, IsEmpty());
}

TEST_F(BrainDirectorySessionsTest, StreamEndingDuringCreateKeepsTheBrainUntilExpiry) {
  ASSERT_TRUE(table_.Attach(MakeHello("r1"), 1, now_).ok());
  table_.Detach("r1", 1, now_);  // cancelled while the engine was creating the brain
  EXPECT_EQ(table_.live(), 0);
  table_.CompleteCreate("r1", 1, 5);
  EXPECT_EQ(table_.slots_held(), 1);
  EXPECT_EQ(table_.ExpireIdle(now_ + absl::Seconds(60)), 1);
  EXPECT_THAT(released_, ElementsAre(5));
  EXPECT_EQ(table_.slots_held(), 0);
}

TEST_F(BrainDirectorySessionsTest, BrainForAVanishedReservationIsReleased) {
  ASSERT_TRUE(table_.Attach(MakeHello("r1"), 1, now_).ok());
  table_.Detach("r1", 1, now_);
  ASSERT_TRUE(table_.Attach(MakeHello("r1"), 2, now_).ok());  // replaces the pending one
  table_.CompleteCreate("r1", 1, 7);  // the first brain arrives for nobody
  EXPECT_THAT(released_, ElementsAre(7));
  table_.CompleteCreate("r1", 2, 8);
  EXPECT_EQ(table_.slots_held(), 1);
}

class SmallBrainDirectoryTest : public BrainDirectorySessionsTest {
 protected:
  SmallBrainDirectoryTest() : BrainDirectorySessionsTest(/*capacity=*/2) {}
};

TEST_F(SmallBrainDirectoryTest, FullPoolEvictsTheLongestDetachedElseExhausted) {
  SessionGrant a = Connect(MakeHello("a"), 1);
  SessionGrant b = Connect(MakeHello("b"), 2);
  absl::StatusOr<SessionGrant> c = table_.Attach(MakeHello("c"), 3, now_);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(c.status().message(), HasSubstr("2 brain slots"));

  table_.Detach("b", 2, now_);
  table_.Detach("a", 1, now_ + absl::Seconds(1));
  Connect(MakeHello("c"), 3);
  EXPECT_THAT(released_, ElementsAre(b.slot)) << "b was detached longest";
  EXPECT_EQ(table_.slots_held(), 2);
  SessionGrant a_again = Connect(MakeHello("a", a.resume_token), 4);
  EXPECT_TRUE(a_again.resumed);
}

class NoKeepBrainDirectoryTest : public BrainDirectorySessionsTest {
 protected:
  NoKeepBrainDirectoryTest() : BrainDirectorySessionsTest(4, absl::ZeroDuration()) {}
};

TEST_F(NoKeepBrainDirectoryTest, DetachReleasesAtOnce) {
  SessionGrant g = Connect(MakeHello("r1"), 1);
  table_.Detach("r1", 1, now_);
  EXPECT_THAT(released_, ElementsAre(g.slot));
  EXPECT_EQ(table_.kept(), 0);
  EXPECT_EQ(table_.live(), 0);
  EXPECT_EQ(table_.slots_held(), 0);
}

// The capacity gauges an autoscaler reads: a kept brain still holds its slot, an expired one not.
TEST(BrainDirectoryMetricsTest, SlotGaugesFollowLiveKeptAndExpiredBrains) {
  telemetry::Metrics metrics;
  int next_slot = 0;
  BrainDirectory table(3, absl::Seconds(60), /*saves_brains=*/false, [](int) {}, &metrics);
  EXPECT_THAT(metrics.Scrape(), HasSubstr("brain_slots_capacity 3"));
  EXPECT_THAT(metrics.Scrape(), HasSubstr("brain_slots_used 0"));
  for (StreamId stream : {1, 2}) {
    const std::string id = absl::StrCat("r", stream);
    absl::StatusOr<SessionGrant> g = table.Attach(MakeHello(id), stream, kT0);
    ASSERT_TRUE(g.ok()) << g.status();
    table.CompleteCreate(id, stream, next_slot++);
  }
  EXPECT_THAT(metrics.Scrape(), HasSubstr("brain_slots_used 2"));
  table.Detach("r1", 1, kT0);
  EXPECT_THAT(metrics.Scrape(), HasSubstr("brain_slots_used 2"));
  EXPECT_THAT(metrics.Scrape(), HasSubstr("brain_sessions_active 1"));
  table.ExpireIdle(kT0 + absl::Seconds(61));
  EXPECT_THAT(metrics.Scrape(), HasSubstr("brain_slots_used 1"));
  table.AbortCreate("r3", 3);  // not a session: nothing changes
  absl::StatusOr<SessionGrant> reserved = table.Attach(MakeHello("r3"), 3, kT0);
  ASSERT_TRUE(reserved.ok());
  EXPECT_THAT(metrics.Scrape(), HasSubstr("brain_slots_used 2")) << "a reservation holds its slot";
  table.AbortCreate("r3", 3);
  EXPECT_THAT(metrics.Scrape(), HasSubstr("brain_slots_used 1"));
  EXPECT_THAT(metrics.Scrape(), HasSubstr("brain_slots_capacity 3"));
}

}  // namespace
}  // namespace fieldbrain::server

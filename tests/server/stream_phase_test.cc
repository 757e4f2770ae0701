// StreamPhase: every phase of a Cycle stream under every event, as the one transition function
// has it (server/stream_phase.h).
#include "server/stream_phase.h"

#include "gtest/gtest.h"

namespace fieldbrain::server {
namespace {

using P = StreamPhase;
using E = StreamEvent;
constexpr P kPhases[] = {P::kAwaitingHello, P::kAdmitting, P::kCreating, P::kRunning, P::kEnding, P::kFinished};

TEST(StreamPhaseTest, AStreamGoesFromHelloToRunningEitherWay) {
  EXPECT_EQ(NextPhase(P::kAwaitingHello, E::kHelloRead), P::kAdmitting);
  EXPECT_EQ(NextPhase(P::kAdmitting, E::kGrantedKeptBrain), P::kRunning);
  EXPECT_EQ(NextPhase(P::kAdmitting, E::kGrantedBrainToMake), P::kCreating);
  EXPECT_EQ(NextPhase(P::kCreating, E::kBrainMade), P::kRunning);
  EXPECT_EQ(NextPhase(P::kRunning, E::kEndRequested), P::kEnding);
  EXPECT_EQ(NextPhase(P::kEnding, E::kFinishCalled), P::kFinished);
}

TEST(StreamPhaseTest, EveryPhaseCanEndOnceAndNothingComesBackFromEnding) {
  for (P p : kPhases) {
    SCOPED_TRACE(StreamPhaseName(p));
    const P ended = NextPhase(p, E::kEndRequested);
    EXPECT_TRUE(EndingOrOver(ended));
    EXPECT_EQ(ended, p == P::kFinished ? P::kFinished : P::kEnding);
    // A late admission or creation does not revive an ending stream, nor does a second Hello.
    for (E late : {E::kHelloRead, E::kGrantedKeptBrain, E::kGrantedBrainToMake, E::kBrainMade}) {
      EXPECT_EQ(NextPhase(ended, late), ended);
    }
    EXPECT_FALSE(ReadsIn(ended));
  }
}

TEST(StreamPhaseTest, EventsOutOfOrderLeaveThePhase) {
  for (P p : kPhases) {
    SCOPED_TRACE(StreamPhaseName(p));
    EXPECT_EQ(NextPhase(p, E::kHelloRead), p == P::kAwaitingHello ? P::kAdmitting : p);
    EXPECT_EQ(NextPhase(p, E::kBrainMade), p == P::kCreating ? P::kRunning : p);
    EXPECT_EQ(NextPhase(p, E::kFinishCalled), p == P::kEnding ? P::kFinished : p)
        << "Finish only after the end was asked for";
  }
}

TEST(StreamPhaseTest, ReadsOnlyForTheHelloAndWhileRunning) {
  for (P p : kPhases) {
    EXPECT_EQ(ReadsIn(p), p == P::kAwaitingHello || p == P::kRunning) << StreamPhaseName(p);
  }
}

}  // namespace
}  // namespace fieldbrain::server

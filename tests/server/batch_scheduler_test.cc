// BatchScheduler with the real CPU engine on the small field.
#include "server/batch_scheduler.h"

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "recording_sink.h"

namespace fieldbrain::server {
namespace {

using testing::RecordedAnswer;
using testing::RecordingSink;

constexpr int kSensors = 6;
constexpr int kMotors = 3;

SchedulerOptions Options(int max_robots, int max_batch, std::chrono::microseconds window) {
  SchedulerOptions o;
  o.engine_kind = "cpu";
  o.engine.shape = FieldShape::Small();
  o.engine.max_robots = max_robots;
  o.engine.max_batch = max_batch;
  o.engine.threads = 1;
  o.batch_window = window;
  return o;
}

std::unique_ptr<BatchScheduler> StartScheduler(SchedulerOptions o) {
  absl::StatusOr<std::unique_ptr<BatchScheduler>> s = BatchScheduler::Start(std::move(o), nullptr);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

int CreateBrain(BatchScheduler& s, uint64_t seed) {
  absl::Notification done;
  absl::StatusOr<int> slot = absl::UnknownError("not called");
  BrainSpec spec;
  spec.seed = seed;
  spec.sensor_count = kSensors;
  spec.motor_count = kMotors;
  s.CreateBrain(spec, [&](absl::StatusOr<int> r) {
    slot = std::move(r);
    done.Notify();
  });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(slot.ok()) << slot.status();
  return slot.value_or(-1);
}

QueuedFrame Frame(uint64_t seq, const std::vector<float>& values, uint32_t deadline_us = 0,
                  Clock::time_point arrival = Clock::now()) {
  QueuedFrame f;
  f.seq = seq;
  f.values = values;
  f.arrival = arrival;
  f.deadline_us = deadline_us;
  return f;
}

const std::vector<float> kValues = {0.1f, -0.2f, 0.3f, 0.0f, 0.5f, -0.9f};

TEST(BatchSchedulerTest, RunsAFrameAndAnswersWithMotors) {
  auto s = StartScheduler(Options(4, 4, std::chrono::microseconds(200)));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->facts().kind, "cpu");
  EXPECT_EQ(s->facts().shape, FieldShape::Small());
  EXPECT_GT(s->facts().pool_bytes, 0);
  const int slot = CreateBrain(*s, 11);
  RecordingSink sink;
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    s->Submit(slot, &sink, Frame(seq, kValues));
    ASSERT_TRUE(sink.WaitFor(seq));
  }
  const std::vector<RecordedAnswer> a = sink.answers();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].status, brain::v1::OK) << a[i].detail;
    EXPECT_EQ(a[i].seq, i + 1);
    EXPECT_EQ(a[i].cycle, i + 1);
    ASSERT_EQ(a[i].motors.size(), static_cast<size_t>(kMaxMotors));
    for (int k = 0; k < kMotors; ++k) {
      EXPECT_GE(a[i].motors[k], -1.0f);
      EXPECT_LE(a[i].motors[k], 1.0f);
    }
  }
  EXPECT_EQ(s->brain_cycle(slot), 3u);
  EXPECT_EQ(s->cycles_total(), 3u);
}

TEST(BatchSchedulerTest, LatestFrameWinsOlderIsSupersededAtOnce) {
  // A long window with room for more, and a second robot that sends nothing (a batch closes early
  // once every robot has a frame in): the first frame waits, so the second always finds it.
  auto s = StartScheduler(Options(2, 2, std::chrono::milliseconds(1500)));
  ASSERT_NE(s, nullptr);
  const int slot = CreateBrain(*s, 5);
  CreateBrain(*s, 6);
  RecordingSink sink;
  s->Submit(slot, &sink, Frame(1, kValues));
  s->Submit(slot, &sink, Frame(2, kValues));
  // Answered inside the second Submit, before any batch ran.
  ASSERT_EQ(sink.size(), 1u);
  EXPECT_EQ(sink.answers()[0].seq, 1u);
  EXPECT_EQ(sink.answers()[0].status, brain::v1::SUPERSEDED);
  EXPECT_TRUE(sink.answers()[0].motors.empty());
  s->Submit(slot, &sink, Frame(3, kValues));
  ASSERT_TRUE(sink.WaitFor(3));
  const std::vector<RecordedAnswer> a = sink.answers();
  EXPECT_EQ(a[1].seq, 2u);
  EXPECT_EQ(a[1].status, brain::v1::SUPERSEDED);
  EXPECT_EQ(a[2].seq, 3u);
  EXPECT_EQ(a[2].status, brain::v1::OK);
  EXPECT_EQ(a[2].cycle, 1u) << "only the newest frame ran";
}

// A window waits only for robots that could still send: once every robot with a brain has a
// frame in, the batch runs. With a 10 s window, a frame that waited it out would miss the 5 s
// waits below.
TEST(BatchSchedulerTest, EveryRobotInClosesTheWindow) {
  auto s = StartScheduler(Options(3, 3, std::chrono::seconds(10)));
  ASSERT_NE(s, nullptr);
  const int first = CreateBrain(*s, 1);
  RecordingSink sink;
  for (uint64_t seq = 1; seq <= 3; ++seq) {  // a lone robot: every frame is all there is
    s->Submit(first, &sink, Frame(seq, kValues));
    ASSERT_TRUE(sink.WaitFor(seq, absl::Seconds(5))) << "frame " << seq << " waited out the window";
  }
  const int second = CreateBrain(*s, 2);
  s->Submit(first, &sink, Frame(4, kValues));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(sink.size(), 3u) << "ran without the second robot's frame";
  RecordingSink second_sink;
  s->Submit(second, &second_sink, Frame(1, kValues));
  ASSERT_TRUE(sink.WaitFor(4, absl::Seconds(5)));
  ASSERT_TRUE(second_sink.WaitFor(1, absl::Seconds(5)));
  for (const RecordedAnswer& a : sink.answers()) EXPECT_EQ(a.status, brain::v1::OK);
  EXPECT_EQ(second_sink.answers()[0].status, brain::v1::OK);
  EXPECT_EQ(s->brain_cycle(first), 4u);
  EXPECT_EQ(s->brain_cycle(second), 1u);
  s->ReleaseBrain(second);  // a released robot is no longer waited for
  s->Submit(first, &sink, Frame(5, kValues));
  ASSERT_TRUE(sink.WaitFor(5, absl::Seconds(5)));
  EXPECT_EQ(s->brain_cycle(first), 5u);
}

TEST(BatchSchedulerTest, ExpiredDeadlineIsAnsweredWithoutRunning) {
  auto s = StartScheduler(Options(2, 2, std::chrono::microseconds(200)));
  ASSERT_NE(s, nullptr);
  const int slot = CreateBrain(*s, 5);
  RecordingSink sink;
  // Arrived 50 ms ago with a 1 ms budget: already late whenever the batch starts.
  s->Submit(slot, &sink, Frame(1, kValues, 1000, Clock::now() - std::chrono::milliseconds(50)));
  ASSERT_TRUE(sink.WaitFor(1));
  EXPECT_EQ(sink.answers()[0].status, brain::v1::DEADLINE_EXCEEDED);
  EXPECT_TRUE(sink.answers()[0].motors.empty());
  EXPECT_EQ(s->brain_cycle(slot), 0u);
  // A generous deadline runs.
  s->Submit(slot, &sink, Frame(2, kValues, 10'000'000));
  ASSERT_TRUE(sink.WaitFor(2));
  EXPECT_EQ(sink.answers()[1].status, brain::v1::OK);
  EXPECT_EQ(s->cycles_total(), 1u);
}

TEST(BatchSchedulerTest, BatchesHoldEachRobotAtMostOnce) {
  constexpr int kRobots = 4;
  constexpr int kFramesEach = 150;
  absl::Mutex mu;
  std::vector<std::vector<int32_t>> batches;
  SchedulerOptions o = Options(kRobots, 3, std::chrono::microseconds(300));
  o.batch_observer = [&](std::span<const int32_t> slots) {
    absl::MutexLock lock(&mu);
    batches.emplace_back(slots.begin(), slots.end());
  };
  auto s = StartScheduler(std::move(o));
  ASSERT_NE(s, nullptr);
  std::vector<int> slots;
  for (int r = 0; r < kRobots; ++r) slots.push_back(CreateBrain(*s, 100 + r));
  std::vector<RecordingSink> sinks(kRobots);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRobots; ++r) {
    threads.emplace_back([&, r] {
      for (int i = 1; i <= kFramesEach; ++i) s->Submit(slots[r], &sinks[r], Frame(i, kValues));
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRobots; ++r) {
    ASSERT_TRUE(sinks[r].WaitFor(kFramesEach)) << "robot " << r;
    int ok = 0;
    for (const RecordedAnswer& a : sinks[r].answers()) {
      ASSERT_TRUE(a.status == brain::v1::OK || a.status == brain::v1::SUPERSEDED)
          << brain::v1::FrameStatus_Name(a.status);
      ok += a.status == brain::v1::OK;
    }
    EXPECT_GE(ok, 1);
    for (const RecordedAnswer& a : sinks[r].answers()) {
      if (a.seq == kFramesEach) {
        EXPECT_EQ(a.status, brain::v1::OK) << "the last frame always runs";
      }
    }
    EXPECT_EQ(sinks[r].size(), static_cast<size_t>(kFramesEach)) << "one answer per frame";
  }
  absl::MutexLock lock(&mu);
  ASSERT_FALSE(batches.empty());
  for (const auto& b : batches) {
    EXPECT_LE(b.size(), 3u);
    EXPECT_EQ(std::set<int32_t>(b.begin(), b.end()).size(), b.size()) << "a slot twice in a batch";
  }
}

// A steady stream of Hellos and disconnects (create/release commands) must not keep other
// robots' frames from running: commands end a batch window early only while it is open. The churn
// is the worst case, made deterministic: each create's callback (it runs on the engine thread)
// queues the release of the slot it got and the next create, so a command is always waiting when
// the engine thread gathers a batch.
TEST(BatchSchedulerTest, SteadyCommandsDoNotStarveFrames) {
  auto s = StartScheduler(Options(4, 4, std::chrono::microseconds(500)));
  ASSERT_NE(s, nullptr);
  const int driver = CreateBrain(*s, 1);
  CreateBrain(*s, 3);  // sends nothing, so the driver's frames wait in open windows

  std::atomic<bool> churning{true};
  std::atomic<int64_t> churned{0};
  absl::Notification churn_ended;
  BrainSpec spec;
  spec.seed = 2;
  spec.sensor_count = kSensors;
  spec.motor_count = kMotors;
  std::function<void(absl::StatusOr<int>)> on_created = [&](absl::StatusOr<int> slot) {
    if (slot.ok()) s->ReleaseBrain(*slot);
    churned.fetch_add(1, std::memory_order_relaxed);
    if (churning.load()) {
      s->CreateBrain(spec, [&](absl::StatusOr<int> r) { on_created(std::move(r)); });
    } else {
      churn_ended.Notify();
    }
  };
  s->CreateBrain(spec, [&](absl::StatusOr<int> r) { on_created(std::move(r)); });
  while (churned.load() < 10) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int64_t churned_before = churned.load();

  constexpr int kFrames = 20;
  RecordingSink sink;
  for (uint64_t seq = 1; seq <= kFrames; ++seq) {
    s->Submit(driver, &sink, Frame(seq, kValues, 5'000'000));  // 5 s: generous
    if (!sink.WaitFor(seq, absl::Seconds(10))) break;           // starved: stop here
  }
  const int64_t churned_meanwhile = churned.load();
  churning.store(false);
  const bool ended = churn_ended.WaitForNotificationWithTimeout(absl::Seconds(30));
  const std::vector<RecordedAnswer> a = sink.answers();
  EXPECT_EQ(a.size(), static_cast<size_t>(kFrames)) << "frames starved while commands kept coming";
  for (const RecordedAnswer& answer : a) {
    EXPECT_EQ(answer.status, brain::v1::OK)
        << "seq " << answer.seq << ": " << brain::v1::FrameStatus_Name(answer.status);
  }
  EXPECT_EQ(s->brain_cycle(driver), a.size());
  // Every round runs the queued commands before it gathers, so each batch had churn before it.
  EXPECT_GE(churned_meanwhile - churned_before, kFrames / 2) << "the churn went on meanwhile";
  s->Stop();  // before on_created goes out of scope: a create still queued calls it
  EXPECT_TRUE(ended);
  EXPECT_EQ(s->double_releases(), 0);
}

// A create that finds the pool full while a release of a slot is already queued in the same
// round (the brain directory hands a brain back when its robot reconnected during the creation)
// runs that release first instead of failing the new robot with RESOURCE_EXHAUSTED. Made
// deterministic by queueing from callbacks, which run on the engine thread: the first create's
// callback queues the next two creates; the second's queues the release of the first's slot.
TEST(BatchSchedulerTest, CreateInAFullPoolRunsAReleaseQueuedThisRound) {
  auto s = StartScheduler(Options(2, 2, std::chrono::microseconds(200)));
  ASSERT_NE(s, nullptr);
  BrainSpec spec;
  spec.seed = 3;
  spec.sensor_count = kSensors;
  spec.motor_count = kMotors;
  absl::Notification done;
  std::atomic<int> first_slot{-1};
  absl::StatusOr<int> third = absl::UnknownError("not run");
  s->CreateBrain(spec, [&](absl::StatusOr<int> a) {
    ASSERT_TRUE(a.ok());
    first_slot = *a;
    s->CreateBrain(spec, [&](absl::StatusOr<int> b) {  // takes the last free slot...
      ASSERT_TRUE(b.ok());
      s->ReleaseBrain(first_slot);  // ...and hands the first brain back, queued behind...
    });
    s->CreateBrain(spec, [&](absl::StatusOr<int> c) {  // ...this create of the same round
      third = std::move(c);
      done.Notify();
    });
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(*third, first_slot.load()) << "the released slot is the only free one";
  s->Stop();
  EXPECT_EQ(s->double_releases(), 0);
}

TEST(BatchSchedulerTest, ReleaseDropsPendingFrameAndDoubleReleaseIsHarmless) {
  auto s = StartScheduler(Options(2, 2, std::chrono::milliseconds(1500)));
  ASSERT_NE(s, nullptr);
  const int slot = CreateBrain(*s, 9);
  CreateBrain(*s, 8);  // sends nothing: the frame waits in the window for it
  RecordingSink sink;
  s->Submit(slot, &sink, Frame(1, kValues));
  s->ReleaseBrain(slot);
  ASSERT_TRUE(sink.WaitFor(1));
  EXPECT_EQ(sink.answers()[0].status, brain::v1::SHUTTING_DOWN);
  s->ReleaseBrain(slot);
  // A create after both releases is served in order, so both releases ran before it.
  const int again = CreateBrain(*s, 10);
  EXPECT_GE(again, 0);
  EXPECT_EQ(s->releases(), 1);
  EXPECT_EQ(s->double_releases(), 1);
  EXPECT_EQ(s->brain_cycle(again), 0u);
}

TEST(BatchSchedulerTest, DrainAnswersPendingShuttingDownAndRefusesAfter) {
  auto s = StartScheduler(Options(2, 2, std::chrono::seconds(5)));
  ASSERT_NE(s, nullptr);
  const int slot = CreateBrain(*s, 3);
  CreateBrain(*s, 4);  // sends nothing: the frame waits in the window for it
  RecordingSink sink;
  s->Submit(slot, &sink, Frame(1, kValues));
  s->Drain();
  ASSERT_TRUE(sink.WaitFor(1));
  EXPECT_EQ(sink.answers()[0].status, brain::v1::SHUTTING_DOWN);
  s->Submit(slot, &sink, Frame(2, kValues));
  ASSERT_EQ(sink.size(), 2u) << "answered at once after the drain";
  EXPECT_EQ(sink.answers()[1].status, brain::v1::SHUTTING_DOWN);
  absl::Notification created;
  s->CreateBrain(BrainSpec{1, kSensors, kMotors, true}, [&](absl::StatusOr<int> r) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
    created.Notify();
  });
  EXPECT_TRUE(created.HasBeenNotified());
  s->Stop();
  s->Stop();
  s->Submit(slot, &sink, Frame(3, kValues));
  EXPECT_EQ(sink.size(), 3u);
}

// A snapshot sink whose Claim holds the engine thread until the test lets it go: a slow copy.
class HoldingSnapshotSink final : public SnapshotSink {
 public:
  bool Wants(int) const override { return true; }
  BrainSnapshot* Claim(int) override {
    claimed_.Notify();
    release_.WaitForNotification();
    return &buffer_;
  }
  BrainSnapshot* ClaimBefore(int slot, absl::Time) override { return Claim(slot); }
  bool Holds(int, uint64_t) const override { return false; }
  void Take(int, BrainSnapshot*, bool copied) override { copied_ = copied_ || copied; }
  void Released(int) override {}

  absl::Notification& claimed() { return claimed_; }
  void Release() {
    if (!release_.HasBeenNotified()) release_.Notify();
  }
  bool copied() const { return copied_; }

 private:
  absl::Notification claimed_, release_;
  BrainSnapshot buffer_;
  std::atomic<bool> copied_{false};
};

// A periodic checkpoint copy runs after the batch's answers are delivered: however slow it is,
// the robot has its motor frame.
TEST(BatchSchedulerTest, PeriodicSnapshotsRunAfterTheAnswersAreDelivered) {
  HoldingSnapshotSink holding;
  SchedulerOptions o = Options(2, 2, std::chrono::microseconds(0));
  o.snapshot_sink = &holding;
  o.snapshot_every_cycles = 1;
  std::unique_ptr<BatchScheduler> s = StartScheduler(std::move(o));
  ASSERT_NE(s, nullptr);
  const int slot = CreateBrain(*s, 7);
  RecordingSink sink;
  s->Submit(slot, &sink, Frame(1, kValues));
  ASSERT_TRUE(holding.claimed().WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(sink.WaitFor(1, absl::Seconds(5))) << "the answer waited for the checkpoint copy";
  holding.Release();
  s->Stop();
  EXPECT_TRUE(holding.copied());
  ASSERT_EQ(sink.size(), 1u);
  EXPECT_EQ(sink.answers()[0].status, brain::v1::OK);
}

// A wave of brain creations (robots failing over) does not hold a waiting frame back for all of
// them: a few are made, then the batch runs, then the rest.
TEST(BatchSchedulerTest, AWaveOfCreatesLetsWaitingFramesRunBetweenThem) {
  constexpr int kWave = 16;
  std::unique_ptr<BatchScheduler> s = StartScheduler(Options(kWave + 1, 4, std::chrono::microseconds(200)));
  ASSERT_NE(s, nullptr);
  const int slot = CreateBrain(*s, 3);
  std::atomic<int> created{0};
  std::atomic<int> created_at_answer{-1};
  class NotingSink final : public FrameSink {
   public:
    NotingSink(std::atomic<int>& created, std::atomic<int>& at) : created_(created), at_(at) {}
    void Deliver(const FrameAnswer&) override { at_.store(created_.load()); }

   private:
    std::atomic<int>& created_;
    std::atomic<int>& at_;
  } sink(created, created_at_answer);
  s->Submit(slot, &sink, Frame(1, kValues));
  BrainSpec spec;
  spec.sensor_count = kSensors;
  spec.motor_count = kMotors;
  for (int i = 0; i < kWave; ++i) {
    spec.seed = uint64_t(100 + i);
    s->CreateBrain(spec, [&](absl::StatusOr<int> r) {
      EXPECT_TRUE(r.ok()) << r.status();
      created.fetch_add(1);
    });
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while ((created.load() < kWave || created_at_answer.load() < 0) && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(created.load(), kWave);
  std::printf("the waiting frame was answered after %d of %d creates\n", created_at_answer.load(), kWave);
  EXPECT_GE(created_at_answer.load(), 0);
  EXPECT_LT(created_at_answer.load(), kWave) << "the frame waited for every create";
}

TEST(BatchSchedulerTest, UnknownEngineKindFailsToStart) {
  SchedulerOptions o = Options(2, 2, std::chrono::microseconds(200));
  o.engine_kind = "quantum";
  EXPECT_FALSE(BatchScheduler::Start(std::move(o), nullptr).ok());
}

}  // namespace
}  // namespace fieldbrain::server

// BatchScheduler::RunOnEngineThread: jobs run once each, in order, on the engine thread between
// batches; with kShuttingDown once drained; at once on the caller's thread after Stop.
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "recording_sink.h"
#include "server/batch_scheduler.h"

namespace fieldbrain::server {
namespace {

using testing::RecordingSink;

std::unique_ptr<BatchScheduler> StartScheduler() {
  SchedulerOptions o;
  o.engine_kind = "cpu";
  o.engine.shape = FieldShape::Small();
  o.engine.max_robots = 2;
  o.engine.max_batch = 2;
  o.engine.threads = 1;
  o.batch_window = std::chrono::microseconds(200);
  absl::StatusOr<std::unique_ptr<BatchScheduler>> s = BatchScheduler::Start(std::move(o), nullptr);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

struct JobLog {
  absl::Mutex mu;
  std::vector<int> order ABSL_GUARDED_BY(mu);
  std::vector<EngineJobState> states ABSL_GUARDED_BY(mu);
  std::vector<std::thread::id> threads ABSL_GUARDED_BY(mu);

  EngineJob Job(int n) {
    return [this, n](EngineJobState state) {
      absl::MutexLock lock(&mu);
      order.push_back(n);
      states.push_back(state);
      threads.push_back(std::this_thread::get_id());
    };
  }
  size_t size() {
    absl::MutexLock lock(&mu);
    return order.size();
  }
};

bool WaitForJobs(JobLog& log, size_t n) {
  for (int i = 0; i < 20000 && log.size() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return log.size() >= n;
}

TEST(EngineJobsTest, RunInOrderOnTheEngineThreadBesideFrames) {
  auto s = StartScheduler();
  ASSERT_NE(s, nullptr);
  absl::Notification created;
  int slot = -1;
  BrainSpec spec;
  spec.seed = 3;
  spec.sensor_count = 2;
  spec.motor_count = 1;
  s->CreateBrain(spec, [&](absl::StatusOr<int> r) {
    slot = r.value_or(-1);
    created.Notify();
  });
  ASSERT_TRUE(created.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_GE(slot, 0);

  JobLog log;
  RecordingSink sink;
  const std::vector<float> values = {0.1f, 0.2f};
  constexpr int kJobs = 50;
  for (int i = 0; i < kJobs; ++i) {
    s->RunOnEngineThread(log.Job(i));
    QueuedFrame f;
    f.seq = uint64_t(i + 1);
    f.values = values;
    f.arrival = Clock::now();
    s->Submit(slot, &sink, f);
  }
  ASSERT_TRUE(WaitForJobs(log, kJobs));
  ASSERT_TRUE(sink.WaitFor(kJobs));  // every frame answered (run or superseded)
  absl::MutexLock lock(&log.mu);
  for (int i = 0; i < kJobs; ++i) {
    EXPECT_EQ(log.order[size_t(i)], i);
    EXPECT_EQ(log.states[size_t(i)], EngineJobState::kServing);
    EXPECT_EQ(log.threads[size_t(i)], log.threads[0]);
  }
  EXPECT_NE(log.threads[0], std::this_thread::get_id());
}

TEST(EngineJobsTest, DrainedJobsRunShuttingDownAndNoneIsLostAtStop) {
  auto s = StartScheduler();
  ASSERT_NE(s, nullptr);
  JobLog log;
  s->Drain();
  s->RunOnEngineThread(log.Job(0));
  ASSERT_TRUE(WaitForJobs(log, 1));
  constexpr int kJobs = 200;
  for (int i = 1; i <= kJobs; ++i) s->RunOnEngineThread(log.Job(i));
  s->Stop();
  EXPECT_EQ(log.size(), size_t(kJobs + 1));  // every job queued before Stop ran
  s->RunOnEngineThread(log.Job(kJobs + 1));  // after Stop: at once, here
  absl::MutexLock lock(&log.mu);
  ASSERT_EQ(log.order.size(), size_t(kJobs + 2));
  for (size_t i = 0; i < log.order.size(); ++i) {
    EXPECT_EQ(log.order[i], int(i));
    EXPECT_EQ(log.states[i], EngineJobState::kShuttingDown);
  }
  EXPECT_NE(log.threads[0], std::this_thread::get_id());
  EXPECT_EQ(log.threads.back(), std::this_thread::get_id());
}

}  // namespace
}  // namespace fieldbrain::server

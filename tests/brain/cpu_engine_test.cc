// The CPU engine as an Engine: determinism, isolation between robots, snapshots, errors.
#include <unistd.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "gpu/memory_budget.h"
#include "tests/brain/brain_rig.h"

namespace fieldbrain::testing {
namespace {

std::vector<std::vector<float>> RandomFrames(int cycles, int sensors, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1, 1);
  std::vector<std::vector<float>> frames(cycles, std::vector<float>(sensors));
  for (auto& f : frames)
    for (float& v : f) v = uni(rng);
  return frames;
}

bool SameBits(const CycleOut& a, const CycleOut& b) {
  return a.motors.size() == b.motors.size() &&
         std::memcmp(a.motors.data(), b.motors.data(), a.motors.size() * sizeof(float)) == 0 &&
         std::memcmp(a.prediction.data(), b.prediction.data(), a.prediction.size() * sizeof(float)) == 0 &&
         std::memcmp(&a.confidence, &b.confidence, sizeof(float)) == 0;
}

// Same seed and same inputs give bit-identical outputs, whatever the thread count.
TEST(CpuEngine, SameSeedSameInputsGiveIdenticalOutputs) {
  const auto frames = RandomFrames(60, 12, 1);
  BrainRig one(FieldShape::Small(), 1, 1), two(FieldShape::Small(), 1, 2), other(FieldShape::Small(), 1, 2);
  one.Add(BrainSpec{42, 12, 4});
  two.Add(BrainSpec{42, 12, 4});
  other.Add(BrainSpec{43, 12, 4});
  int differing = 0;
  for (int t = 0; t < 60; ++t) {
    const float reward = t % 3 ? 0.5f : -0.5f;
    const CycleOut a = one.Step1(0, frames[t], reward), b = two.Step1(0, frames[t], reward);
    ASSERT_TRUE(SameBits(a, b)) << "cycle " << t;
    if (!SameBits(a, other.Step1(0, frames[t], reward))) ++differing;
  }
  EXPECT_EQ(differing, 60) << "another seed must give another brain";
}

// A robot's outputs are the same alone or in a batch, wherever it sits in the batch.
TEST(CpuEngine, RobotOutputsDoNotDependOnTheBatch) {
  const auto frames = RandomFrames(40, 12, 2);
  BrainRig alone(FieldShape::Small(), 1), crowd(FieldShape::Small(), 4);
  alone.Add(BrainSpec{9, 12, 4});
  for (uint64_t seed : {100u, 101u, 9u, 102u}) crowd.Add(BrainSpec{seed, 12, 4});
  const auto noise = RandomFrames(40, 12, 3);
  for (int t = 0; t < 40; ++t) {
    const CycleOut a = alone.Step1(0, frames[t], 0.1f);
    // The crowd runs in a changing order, so robot 2 moves between batch rows.
    const std::vector<int> order = t % 2 ? std::vector<int>{2, 0, 1, 3} : std::vector<int>{3, 1, 0, 2};
    std::vector<std::vector<float>> in;
    for (int w : order) in.push_back(w == 2 ? frames[t] : noise[(t + w) % 40]);
    const auto outs = crowd.Step(order, in, {0.1f, 0.1f, 0.1f, 0.1f});
    const size_t row = size_t(std::find(order.begin(), order.end(), 2) - order.begin());
    ASSERT_TRUE(SameBits(a, outs[row])) << "cycle " << t;
  }
}

// A batch runs in one of two schedules (cpu_engine.cc): robots that divide evenly among the
// threads run whole, each on one thread, in one parallel region; other batches run step by step,
// the field pass's slabs spread over the threads. Batches of 1 to 5 robots on 2 and 3 threads
// take both (and a batch of one robot on more threads than robots), and each robot computes what
// it computes alone on one thread, to the bit, field included.
TEST(CpuEngine, EitherScheduleComputesWhatEachRobotComputesAlone) {
  constexpr int kCycles = 12;
  for (const int threads : {2, 3}) {
    for (int robots = 1; robots <= 5; ++robots) {
      BrainRig crowd(FieldShape::Small(), robots, threads);
      std::vector<std::unique_ptr<BrainRig>> alone;
      std::vector<std::vector<std::vector<float>>> frames;
      for (int i = 0; i < robots; ++i) {
        const BrainSpec spec{uint64_t(60 + i), 12, 4};
        crowd.Add(spec);
        alone.push_back(std::make_unique<BrainRig>(FieldShape::Small(), 1, 1));
        alone.back()->Add(spec);
        frames.push_back(RandomFrames(kCycles, 12, unsigned(30 + i)));
      }
      std::vector<int> order(static_cast<size_t>(robots));
      for (int i = 0; i < robots; ++i) order[size_t(i)] = i;
      for (int t = 0; t < kCycles; ++t) {
        std::vector<std::vector<float>> in;
        for (int i = 0; i < robots; ++i) in.push_back(frames[size_t(i)][size_t(t)]);
        const auto outs = crowd.Step(order, in, std::vector<float>(size_t(robots), t % 3 ? 0.3f : -0.7f));
        for (int i = 0; i < robots; ++i)
          ASSERT_TRUE(SameBits(alone[size_t(i)]->Step1(0, frames[size_t(i)][size_t(t)], t % 3 ? 0.3f : -0.7f),
                               outs[size_t(i)]))
              << robots << " robots on " << threads << " threads, robot " << i << ", cycle " << t;
      }
      for (int i = 0; i < robots; ++i) {
        const BrainSnapshot a = *alone[size_t(i)]->engine().Snapshot(alone[size_t(i)]->slot(0));
        const BrainSnapshot b = *crowd.engine().Snapshot(crowd.slot(i));
        EXPECT_EQ(std::memcmp(a.field.data(), b.field.data(), a.field.size() * sizeof(float)), 0)
            << robots << " robots on " << threads << " threads, robot " << i;
      }
    }
  }
}

// Robots with different sensor counts (so different imprint sites) in one batch on one thread,
// which walks them with the same scratch: each computes what it computes alone. On the tiny
// field a robot's whole field is one slab, whose imprint runs a robot with the same sites reuses;
// on the default field five robots' fields, old and new (80 MiB), outgrow three quarters of a
// last-level cache of up to 106 MiB, so the batch writes its new fields past the cache, and one
// robot alone (16 MiB) does not where the cache holds 22 MiB or more.
TEST(CpuEngine, RobotsWithDifferentSensorsShareABatchAsIfAlone) {
  const std::vector<int> sensors = {12, 5, 12, 30, 5};
  for (const FieldShape& shape : {FieldShape::Tiny(), FieldShape::Small(), FieldShape::Default()}) {
    BrainRig crowd(shape, int(sensors.size()), 1);
    std::vector<std::unique_ptr<BrainRig>> alone;
    std::vector<std::vector<std::vector<float>>> frames;
    for (size_t i = 0; i < sensors.size(); ++i) {
      const BrainSpec spec{uint64_t(20 + i), sensors[i], 4};
      crowd.Add(spec);
      alone.push_back(std::make_unique<BrainRig>(shape, 1, 1));
      alone.back()->Add(spec);
      frames.push_back(RandomFrames(30, sensors[i], unsigned(7 + i)));
    }
    const std::vector<int> order = {0, 1, 2, 3, 4};
    for (int t = 0; t < 30; ++t) {
      std::vector<std::vector<float>> in;
      std::vector<float> rewards;
      for (size_t i = 0; i < sensors.size(); ++i) {
        in.push_back(frames[i][size_t(t)]);
        rewards.push_back(t % 4 ? 0.4f : -0.6f);
      }
      const auto outs = crowd.Step(order, in, rewards);
      for (size_t i = 0; i < sensors.size(); ++i)
        ASSERT_TRUE(SameBits(alone[i]->Step1(0, frames[i][size_t(t)], rewards[i]), outs[i]))
            << "field " << shape.nx << ", robot " << i << " (" << sensors[i] << " sensors), cycle " << t;
    }
    for (size_t i = 0; i < sensors.size(); ++i) {
      const BrainSnapshot a = *alone[i]->engine().Snapshot(alone[i]->slot(0));
      const BrainSnapshot b = *crowd.engine().Snapshot(crowd.slot(int(i)));
      EXPECT_EQ(std::memcmp(a.field.data(), b.field.data(), a.field.size() * sizeof(float)), 0)
          << "field " << shape.nx << ", robot " << i;
    }
  }
}

TEST(CpuEngine, SnapshotAndRestoreResumeExactly) {
  const auto frames = RandomFrames(20, 6, 4);
  BrainRig rig(FieldShape::Small(), 2);
  const int b = rig.Add(BrainSpec{5, 6, 3});
  for (int t = 0; t < 10; ++t) rig.Step1(b, frames[t]);
  const BrainSnapshot snap = *rig.engine().Snapshot(rig.slot(b));
  EXPECT_EQ(snap.state.cycle, 10u);
  std::vector<CycleOut> first;
  for (int t = 10; t < 20; ++t) first.push_back(rig.Step1(b, frames[t], 0.3f));
  ASSERT_TRUE(rig.engine().Restore(rig.slot(b), snap).ok());
  for (int t = 10; t < 20; ++t) ASSERT_TRUE(SameBits(first[t - 10], rig.Step1(b, frames[t], 0.3f))) << t;

  BrainSnapshot wrong = snap;
  wrong.shape = FieldShape::Default();
  EXPECT_EQ(rig.engine().Restore(rig.slot(b), wrong).code(), absl::StatusCode::kInvalidArgument);
  wrong = snap;
  wrong.field.pop_back();
  EXPECT_EQ(rig.engine().Restore(rig.slot(b), wrong).code(), absl::StatusCode::kInvalidArgument);
  wrong = snap;
  wrong.params.site[0][2] = 99;
  EXPECT_EQ(rig.engine().Restore(rig.slot(b), wrong).code(), absl::StatusCode::kInvalidArgument);
}

// A restored field is held to the bounds every pass keeps (the evolve core's tanh relies on them):
// a value beyond its channel's bound, or not a number, is refused with where it is; values on the
// bounds are taken, and the brain runs on from them.
TEST(CpuEngine, RestoreRefusesAFieldOutsideItsBounds) {
  BrainRig rig(FieldShape::Small(), 1);
  const int b = rig.Add(BrainSpec{5, 6, 3});
  rig.Step1(b, std::vector<float>(6, 0.5f));
  const BrainSnapshot snap = *rig.engine().Snapshot(rig.slot(b));
  const FieldShape& sh = snap.shape;
  const size_t content_voxel = size_t(sh.index(3, 2, 1, 4));
  const size_t dynamics_voxel = size_t(sh.index(sh.dynamics_begin() + 1, 0, 5, 7));

  struct Case {
    size_t at;
    float value;
    bool taken;
  };
  const Case cases[] = {{content_voxel, 1.5f, true},    {content_voxel, -1.5f, true},
                        {content_voxel, 1.5001f, false}, {content_voxel, -40.0f, false},
                        {content_voxel, INFINITY, false}, {content_voxel, NAN, false},
                        {dynamics_voxel, 5.0f, true},    {dynamics_voxel, -4.9f, true},
                        {dynamics_voxel, 5.01f, false},  {dynamics_voxel, NAN, false}};
  for (const Case& c : cases) {
    BrainSnapshot edited = snap;
    edited.field[c.at] = c.value;
    const absl::Status s = rig.engine().Restore(rig.slot(b), edited);
    if (c.taken) {
      EXPECT_TRUE(s.ok()) << c.value << ": " << s;
      const CycleOut out = rig.Step1(b, std::vector<float>(6, 0.5f));
      for (float m : out.motors) EXPECT_TRUE(std::isfinite(m)) << c.value;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.value;
      EXPECT_NE(s.message().find(absl::StrCat("voxel ", c.at % size_t(sh.voxels()))), std::string::npos) << s;
    }
  }
  // A refused restore leaves the brain as it was: it runs on from the last one taken.
  EXPECT_TRUE(rig.engine().Restore(rig.slot(b), snap).ok());
}

TEST(CpuEngine, OutputsStayInRangeAndUnusedEntriesZero) {
  BrainRig rig(FieldShape::Small(), 1);
  const int b = rig.Add(BrainSpec{8, 5, 2});
  const auto frames = RandomFrames(50, 5, 5);
  for (int t = 0; t < 50; ++t) {
    rig.Step1(b, frames[t], 1.0f);
    const BatchOutputRow& o = rig.engine().outputs()[0];
    for (int k = 0; k < kMaxMotors; ++k) {
      if (k < 2) {
        ASSERT_LE(std::fabs(o.motors[k]), 1.0f);
      } else {
        ASSERT_EQ(o.motors[k], 0.0f);
      }
    }
    for (int i = 0; i < kMaxSensors; ++i) {
      if (i < 5) {
        ASSERT_LE(std::fabs(o.prediction[i]), 1.0f);
      } else {
        ASSERT_EQ(o.prediction[i], 0.0f);
      }
    }
    ASSERT_EQ(o.cycle, uint64_t(t + 1));
    ASSERT_GE(o.confidence, 0.0f);
    ASSERT_LE(o.confidence, 1.0f);
  }
}

// Shapes other than the two profiles: fewer channels (C = 16, one dynamics channel per quarter)
// and sides of different lengths, so no axis is confused with another. A field rising along y
// shows in the pooled features phi (psi's first kFeatures entries) along the pool's y cells only.
TEST(CpuEngine, NonCubicFieldsRunBoundedAndPoolAlongTheRightAxis) {
  for (const FieldShape shape : {FieldShape{32, 8, 16, 32}, FieldShape{16, 8, 32, 256}}) {
    ASSERT_TRUE(shape.valid());
    BrainRig rig(shape, 1);
    const int b = rig.Add(BrainSpec{3, 12, 3});
    BrainSnapshot snap = *rig.engine().Snapshot(rig.slot(b));
    for (int c = 0; c < shape.content(); ++c)
      for (int x = 0; x < shape.nx; ++x)
        for (int y = 0; y < shape.ny; ++y)
          for (int z = 0; z < shape.nz; ++z) snap.field[shape.index(c, x, y, z)] = float(y) / float(shape.ny);
    ASSERT_TRUE(rig.engine().Restore(rig.slot(b), snap).ok());
    const auto frames = RandomFrames(20, 12, 6);
    rig.Step1(b, std::vector<float>(12, 0.0f));
    const BrainSnapshot after = *rig.engine().Snapshot(rig.slot(b));
    // phi of group g, pool cell (px, py, pz): averaged over px and pz it rises with py, and it
    // varies along x and z far less than along y.
    for (int g = 0; g < kContentGroups; ++g) {
      float by_y[kPoolCells] = {};
      float hi_xz = 0.0f;
      for (int py = 0; py < kPoolCells; ++py) {
        float cell_lo = 1e9f, cell_hi = -1e9f;
        for (int px = 0; px < kPoolCells; ++px)
          for (int pz = 0; pz < kPoolCells; ++pz) {
            const float phi = after.state.psi_prev[g * kPoolBlocks + (px * kPoolCells + py) * kPoolCells + pz];
            by_y[py] += phi / float(kPoolCells * kPoolCells);
            cell_lo = std::min(cell_lo, phi);
            cell_hi = std::max(cell_hi, phi);
          }
        hi_xz = std::max(hi_xz, cell_hi - cell_lo);
      }
      for (int py = 1; py < kPoolCells; ++py)
        EXPECT_GT(by_y[py], by_y[py - 1]) << shape.nx << "x" << shape.ny << "x" << shape.nz << " group " << g;
      EXPECT_LT(hi_xz, 0.25f * (by_y[kPoolCells - 1] - by_y[0]))
          << shape.nx << "x" << shape.ny << "x" << shape.nz << " group " << g << ": phi varies along x or z";
    }
    for (int t = 0; t < 20; ++t) {
      const CycleOut out = rig.Step1(b, frames[t], 0.5f);
      for (float m : out.motors) ASSERT_TRUE(std::isfinite(m) && std::fabs(m) <= 1.0f);
    }
    const BrainSnapshot s = *rig.engine().Snapshot(rig.slot(b));
    for (int64_t i = 0; i < shape.floats(); ++i) ASSERT_TRUE(std::isfinite(s.field[i]));
    EXPECT_EQ(after.state.cycle, 1u);
  }
}

TEST(CpuEngine, RejectsBadBrainsAndBadBatches) {
  EngineConfig config;
  config.shape = FieldShape::Small();
  config.max_robots = 2;
  config.max_batch = 2;
  auto engine = MakeEngine("cpu", config);
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  EXPECT_EQ(e.CreateBrain(BrainSpec{1, 0, 4}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(e.CreateBrain(BrainSpec{1, kMaxSensors + 1, 4}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(e.CreateBrain(BrainSpec{1, 4, kMaxMotors + 1}).status().code(), absl::StatusCode::kInvalidArgument);
  const int a = *e.CreateBrain(BrainSpec{1, 4, 2});
  const int b = *e.CreateBrain(BrainSpec{2, 4, 2});
  EXPECT_EQ(e.CreateBrain(BrainSpec{3, 4, 2}).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(e.brains_active(), 2);
  EXPECT_FALSE(e.RunBatch(0).ok());
  EXPECT_FALSE(e.RunBatch(3).ok());
  e.inputs()[0].slot = a;
  e.inputs()[1].slot = a;
  EXPECT_FALSE(e.RunBatch(2).ok()) << "one slot twice in a batch";
  e.inputs()[1].slot = b;
  EXPECT_TRUE(e.RunBatch(2).ok());
  EXPECT_TRUE(e.ReleaseBrain(b));
  EXPECT_FALSE(e.ReleaseBrain(b));
  EXPECT_FALSE(e.RunBatch(2).ok()) << "a released slot";
  EXPECT_EQ(e.Snapshot(b).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(MakeEngine("tpu", config).status().code(), absl::StatusCode::kInvalidArgument);
  config.max_batch = 3;
  EXPECT_EQ(MakeEngine("cpu", config).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CpuEngine, AutoPicksAnAvailableEngine) {
  EngineConfig config;
  config.shape = FieldShape::Small();
  config.max_robots = 1;
  config.max_batch = 1;
  auto engine = MakeEngine("auto", config);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_EQ((*engine)->kind(), CudaEngineAvailable() ? "cuda" : "cpu");
  if (!CudaEngineAvailable()) {
    EXPECT_EQ(MakeEngine("cuda", config).status().code(), absl::StatusCode::kUnavailable);
  }
}

// Resident memory of this process, from /proc/self/statm.
int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * int64_t(sysconf(_SC_PAGESIZE));
}

// An oversized pool must fail at start, not get the daemon killed later: the engine touches
// every page of its pool while it is made.
TEST(CpuEngine, ThePoolIsResidentOnceTheEngineIsMade) {
  EngineConfig config;
  config.shape = FieldShape::Default();  // 8 MiB fields
  config.max_robots = 24;
  config.max_batch = 8;
  const int64_t before = ResidentBytes();
  auto engine = MakeEngine("cpu", config);
  ASSERT_TRUE(engine.ok()) << engine.status();
  const int64_t grown = ResidentBytes() - before;
  EXPECT_GE(grown, (*engine)->pool_bytes() * 9 / 10)
      << "pool " << (*engine)->pool_bytes() << " bytes, resident grew by " << grown;
}

TEST(CpuEngine, APoolLargerThanTheMachineIsRefusedWithTheFigures) {
  const std::optional<int64_t> available = HostMemoryAvailable();
  ASSERT_TRUE(available.has_value()) << "/proc/meminfo has no MemAvailable";
  EngineConfig config;
  config.shape = FieldShape::Default();
  // Fields of 8 MiB: enough slots for twice what the machine has free, within the slot limit.
  config.max_robots = int(std::min<int64_t>(2 * *available / (8 << 20) + 1, 1 << 20));
  config.max_batch = 64;
  const auto engine = MakeEngine("cpu", config);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(engine.status().message().find("brain pool"), absl::string_view::npos) << engine.status();
  EXPECT_NE(engine.status().message().find("has only"), absl::string_view::npos) << engine.status();
}

TEST(CpuEngine, InjectedFailureIsLatched) {
  const std::vector<float> frame(6, 0.25f);
  EngineConfig config;
  config.shape = FieldShape::Small();
  config.max_robots = 1;
  config.max_batch = 1;
  auto made = MakeEngine("cpu", config);
  ASSERT_TRUE(made.ok());
  Engine& engine = **made;
  engine.FailAfterBatchesForTesting(3);
  const absl::StatusOr<int> slot = engine.CreateBrain(BrainSpec{5, 6, 2});
  ASSERT_TRUE(slot.ok());
  auto run = [&] {
    engine.inputs()[0].slot = *slot;
    std::copy(frame.begin(), frame.end(), engine.inputs()[0].sensors);
    return engine.RunBatch(1);
  };
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(run().ok()) << "batch " << i;
  EXPECT_TRUE(engine.health().ok());
  EXPECT_EQ(run().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(engine.health().code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(run().ok());  // latched: it stays down
  EXPECT_FALSE(engine.device_memory().has_value());  // the CPU engine has no device
}

// A failed engine's brains may be half a cycle on (on a GPU: state advanced, field not), so no
// copy of one leaves it (no checkpoint from a failed engine) and none goes in; the front refuses
// for both engines alike. Releasing still works (it is only bookkeeping).
TEST(CpuEngine, AFailedEngineCopiesNoBrainInOrOut) {
  EngineConfig config;
  config.shape = FieldShape::Tiny();
  config.max_robots = 2;
  config.max_batch = 2;
  auto made = MakeEngine("cpu", config);
  ASSERT_TRUE(made.ok());
  Engine& engine = **made;
  const absl::StatusOr<int> slot = engine.CreateBrain(BrainSpec{5, 6, 2});
  ASSERT_TRUE(slot.ok());
  const absl::StatusOr<BrainSnapshot> before = engine.Snapshot(*slot);
  ASSERT_TRUE(before.ok());
  engine.FailAfterBatchesForTesting(1);
  engine.inputs()[0] = BatchInputRow{};
  engine.inputs()[0].slot = *slot;
  ASSERT_TRUE(engine.RunBatch(1).ok());
  ASSERT_FALSE(engine.RunBatch(1).ok());
  ASSERT_FALSE(engine.health().ok());
  BrainSnapshot out = *before;
  EXPECT_EQ(engine.SnapshotInto(*slot, out).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(engine.Snapshot(*slot).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(engine.Restore(*slot, *before).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(engine.CreateBrain(BrainSpec{6, 6, 2}).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(engine.ReleaseBrain(*slot));
  EXPECT_EQ(engine.brains_active(), 0);
}

}  // namespace
}  // namespace fieldbrain::testing

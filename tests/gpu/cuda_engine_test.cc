// The CUDA engine against the CPU engine and against its own promises (ctest label "gpu").
// Every test skips, with the reason, where no usable CUDA device exists (or the build has no
// CUDA engine); the executable builds and runs everywhere.
//
// Tolerances, and why. Both engines evaluate the same model:: functions per voxel and per robot,
// with their own sin, cos, log and exp (gpu/model/portable_math.h) and no FMA contraction on
// either side (docs/decisions.md, "Parity by construction"), so an element-wise step gives the
// same bits; what differs is only the order of some sums (the memory channels' group means, the
// pool blocks' partials, the readouts' warp trees against the CPU's running sums). The kernels fix
// that order, so a card computes what the emulated device computes, bit for bit.
// - Start fields, the pattern memory's keys, strengths and every write and recall: bitwise. The
//   key sums follow one order on both (model::key_dot), so no threshold can flip.
// - One cycle, field values: 1e-7. Measured 7.5e-9 at most (emulation, 2026-11-25): a group
//   mean's rounding (ulp ~6e-8 on values < 1) times its 0.05 weight; 1e-7 still catches any wrong
//   index, neighbour or term, which moves values by >= 1e-3 on a field of spread 0.05.
// - One cycle, motors and predictions: 1e-6. The readouts' 280-term dot products in another
//   order (~sqrt(280) x ulp(|terms|) ~ 1e-7), through tanh (slope <= 1); measured 9e-8.
// - One cycle, the robot's state (features, weights, traces; values up to ~2-10): 2e-6. The
//   features are pool sums over the whole field in another order, a few ulp of values near 2
//   (ulp 2.4e-7); measured 7.2e-7.
// - 1000 cycles, motors and predictions: 1e-5. The sum-order differences grow slowly through the
//   learning: at a card's counts (FIELDBRAIN_EMU_FULL_COUNTS=1, 2026-11-25) 2.2e-6 on the tiny
//   field, 4.3e-6 on the small, 7.2e-7 on the default, over 1000 cycles each, which a card
//   should reproduce bit for bit. A sparsity count (|F| < 0.1) flipped by one voxel's rounding
//   would move that voxel's dynamics by up to ~1e-2 and the outputs by 1e-4 or more; none flips
//   on these inputs, and if one did on a card it would be a difference worth seeing.
// - Alone vs in a batch of 64, graph vs direct launches: bitwise. A row's kernels read only that
//   row's data and every sum has a fixed order (no float atomics), so nothing can differ.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "tests/gpu/parity_harness.h"
#if FIELDBRAIN_HAVE_CUDA
#include "gpu/cuda/cuda_engine.h"
#endif
#if defined(FIELDBRAIN_CUDA_EMU)
#include <tuple>

#include "cuda_emu/control.h"
#include "gpu/cuda/launch.h"
#endif

namespace fieldbrain::testing {
namespace {

#if FIELDBRAIN_HAVE_CUDA

#define SKIP_WITHOUT_CUDA_DEVICE()                                   \
  do {                                                               \
    if (const absl::Status probe = cuda::ProbeCudaDevice(); !probe.ok()) \
      GTEST_SKIP() << "no CUDA device: " << probe.message();        \
  } while (0)

// On the emulated device (the cuda-emu build, gpu/emu/) every CUDA thread is a fiber on one core,
// a few hundred times a card's time: the long runs take the emulation's counts and fields, which
// the issue that made the emulation set (tiny field 1000 cycles, small 200, default 10); a card
// runs the full ones.
#if defined(FIELDBRAIN_CUDA_EMU)
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif

constexpr double kOneCycleFieldTol = 1e-7;
constexpr double kOneCycleOutputTol = 1e-6;
constexpr double kOneCycleStateTol = 2e-6;
constexpr double kLongRunTol = 1e-5;

EngineConfig Config(const FieldShape& shape, int robots, int batch) {
  EngineConfig c;
  c.shape = shape;
  c.max_robots = robots;
  c.max_batch = batch;
  return c;
}

std::unique_ptr<Engine> MustMake(std::string_view kind, const EngineConfig& c) {
  absl::StatusOr<std::unique_ptr<Engine>> e = MakeEngine(kind, c);
  EXPECT_TRUE(e.ok()) << kind << ": " << e.status();
  return e.ok() ? *std::move(e) : nullptr;
}

std::unique_ptr<Engine> MustMakeCuda(const EngineConfig& c, bool graphs) {
  absl::StatusOr<std::unique_ptr<Engine>> e = cuda::MakeCudaEngine(c, cuda::CudaEngineOptions{graphs});
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? *std::move(e) : nullptr;
}

const std::vector<BrainSpec> kMixedSpecs = {BrainSpec{101, 12, 4, true}, BrainSpec{202, 64, 16, true},
                                            BrainSpec{303, 7, 3, false}};

cuda::CudaCounters Counters(const Engine& e) {
  const std::optional<cuda::CudaCounters> c = cuda::CountersOf(e);
  EXPECT_TRUE(c.has_value());
  return c.value_or(cuda::CudaCounters{});
}

TEST(CudaEngine, MakeEngineCudaAndAutoGiveAWorkingCudaEngine) {
  SKIP_WITHOUT_CUDA_DEVICE();
  EXPECT_TRUE(CudaEngineAvailable());
  for (std::string_view kind : {"cuda", "auto"}) {
    auto engine = MustMake(kind, Config(FieldShape::Default(), 2, 2));
    ASSERT_NE(engine, nullptr);
    EXPECT_EQ(engine->kind(), "cuda");
    EXPECT_FALSE(engine->device_name().empty());
    EXPECT_GT(engine->pool_bytes(), 4 * FieldShape::Default().floats() * 4);
    ParityRun run(std::move(engine));
    ASSERT_TRUE(run.Add(kMixedSpecs[0]).ok());
    ASSERT_TRUE(run.Run(3).ok());
    const RobotOutput& o = run.outputs(0).back();
    EXPECT_EQ(o.cycle, 3u);
    for (float m : o.motors) {
      EXPECT_TRUE(std::isfinite(m));
      EXPECT_LE(std::fabs(m), 1.0f);
    }
  }
  EXPECT_TRUE(cuda::CountersOf(*MustMake("cpu", Config(FieldShape::Small(), 1, 1))) == std::nullopt);
}

// After one cycle from the same seeds and inputs, the CUDA field equals the CPU field.
TEST(CudaEngine, FieldAfterOneCycleMatchesCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  // Beside the two profiles, two non-cubic shapes: an x/y/z mix-up cannot hide, and the second
  // (C = 16, quarter 1) tiles a pool cell in y with several blocks. The tiny field and 12x8x12
  // have planes short enough that the CPU pass takes several x planes a slab (cpu::SlabPlanes:
  // one slab of 8, three of 4), so the borders between its slabs are held to the GPU's too.
  for (const FieldShape shape : {FieldShape::Default(), FieldShape::Small(), FieldShape{32, 8, 16, 32},
                                 FieldShape{16, 8, 32, 256}, FieldShape::Tiny(), FieldShape{16, 12, 8, 12}}) {
    ParityRun cpu(MustMake("cpu", Config(shape, 3, 3)));
    ParityRun gpu(MustMake("cuda", Config(shape, 3, 3)));
    for (const BrainSpec& s : kMixedSpecs) {
      ASSERT_TRUE(cpu.Add(s).ok());
      ASSERT_TRUE(gpu.Add(s).ok());
    }
    for (int r = 0; r < 3; ++r) {  // the start fields
      auto a = cpu.engine().Snapshot(cpu.slot(r));
      auto b = gpu.engine().Snapshot(gpu.slot(r));
      ASSERT_TRUE(a.ok() && b.ok());
      const SnapshotDiff d = CompareSnapshots(*a, *b, 0.0);
      EXPECT_EQ(d.field.over, 0) << "start field: " << DescribeField(d.field, shape);
      EXPECT_EQ(d.field.max_abs, 0.0) << "start field: bitwise";
      EXPECT_EQ(a->params.seed, b->params.seed);
      EXPECT_EQ(a->params.sensor_count, b->params.sensor_count);
      EXPECT_EQ(std::memcmp(a->params.site, b->params.site, sizeof(a->params.site)), 0);
      EXPECT_EQ(std::memcmp(a->params.mix, b->params.mix, sizeof(a->params.mix)), 0);
    }
    ASSERT_TRUE(cpu.Run(1).ok());
    ASSERT_TRUE(gpu.Run(1).ok());
    for (int r = 0; r < 3; ++r) {
      auto a = cpu.engine().Snapshot(cpu.slot(r));
      auto b = gpu.engine().Snapshot(gpu.slot(r));
      ASSERT_TRUE(a.ok() && b.ok());
      const SnapshotDiff d = CompareSnapshots(*a, *b, kOneCycleFieldTol);
      EXPECT_EQ(d.field.over, 0) << "shape C=" << shape.channels << " robot " << r << ": "
                                 << DescribeField(d.field, shape);
      const SnapshotDiff ds = CompareSnapshots(*a, *b, kOneCycleStateTol);
      EXPECT_EQ(ds.state.over, 0) << Describe(ds.state);
      const OutputDiff o = CompareOutputs(cpu.outputs(r), gpu.outputs(r), kOneCycleOutputTol);
      std::printf("one cycle, C=%d %dx%dx%d, robot %d: field %s; motors %s; predictions %s\n", shape.channels,
                  shape.nx, shape.ny, shape.nz, r, DescribeField(d.field, shape).c_str(), Describe(o.motors).c_str(),
                  Describe(o.prediction).c_str());
      EXPECT_EQ(o.motors.over, 0) << Describe(o.motors);
      EXPECT_EQ(o.prediction.over, 0) << Describe(o.prediction);
      EXPECT_TRUE(o.cycles_match);
    }
  }
}

// A snapshot taken from the CPU engine runs on from the same state on the GPU. (The memory step
// recomputes the recalled pattern every cycle, so the planted pattern tests Restore and Snapshot;
// PatternMemoryMatchesCpu covers the recall path of the evolve kernel.)
TEST(CudaEngine, CpuSnapshotWithPatternRestoredOnGpuCyclesLikeCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const FieldShape shape = FieldShape::Default();
  ParityRun cpu(MustMake("cpu", Config(shape, 1, 1)));
  ParityRun gpu(MustMake("cuda", Config(shape, 1, 1)));
  ASSERT_TRUE(cpu.Add(kMixedSpecs[1]).ok());
  ASSERT_TRUE(gpu.Add(kMixedSpecs[1]).ok());
  ASSERT_TRUE(cpu.Run(10).ok());
  absl::StatusOr<BrainSnapshot> snap = cpu.engine().Snapshot(cpu.slot(0));
  ASSERT_TRUE(snap.ok());
  for (size_t i = 0; i < snap->pattern.size(); ++i) snap->pattern[i] = 0.5f * std::sin(0.01f * float(i));
  snap->state.pattern_active = 1;
  ASSERT_TRUE(cpu.engine().Restore(cpu.slot(0), *snap).ok());
  ASSERT_TRUE(gpu.engine().Restore(gpu.slot(0), *snap).ok());
  auto back = gpu.engine().Snapshot(gpu.slot(0));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(BitwiseEqual(*snap, *back));  // Restore and Snapshot move bytes, nothing else
  // A brain made straight from the snapshot (a checkpoint's resume: no fresh brain first) too.
  for (const char* kind : {"cpu", "cuda"}) {
    std::unique_ptr<Engine> fresh = MustMake(kind, Config(shape, 1, 1));
    absl::StatusOr<int> made = fresh->CreateBrainFrom(*snap);
    ASSERT_TRUE(made.ok()) << kind << ": " << made.status();
    absl::StatusOr<BrainSnapshot> out = fresh->Snapshot(*made);
    ASSERT_TRUE(out.ok());
    EXPECT_TRUE(BitwiseEqual(*snap, *out)) << kind;
  }

  // Both continue from cycle 10 of the CPU run with the same inputs.
  ParityRun cpu2(MustMake("cpu", Config(shape, 1, 1)));
  ParityRun gpu2(MustMake("cuda", Config(shape, 1, 1)));
  ASSERT_TRUE(cpu2.Add(kMixedSpecs[1]).ok());
  ASSERT_TRUE(gpu2.Add(kMixedSpecs[1]).ok());
  ASSERT_TRUE(cpu2.engine().Restore(cpu2.slot(0), *snap).ok());
  ASSERT_TRUE(gpu2.engine().Restore(gpu2.slot(0), *snap).ok());
  ASSERT_TRUE(cpu2.Run(1).ok());
  ASSERT_TRUE(gpu2.Run(1).ok());
  auto a = cpu2.engine().Snapshot(cpu2.slot(0));
  auto b = gpu2.engine().Snapshot(gpu2.slot(0));
  ASSERT_TRUE(a.ok() && b.ok());
  const SnapshotDiff d = CompareSnapshots(*a, *b, kOneCycleFieldTol);
  EXPECT_EQ(d.field.over, 0) << DescribeField(d.field, shape);
  std::printf("restored with pattern, one cycle: field %s\n", DescribeField(d.field, shape).c_str());
  const OutputDiff o = CompareOutputs(cpu2.outputs(0), gpu2.outputs(0), kOneCycleOutputTol);
  EXPECT_EQ(o.motors.over, 0) << Describe(o.motors);
  EXPECT_EQ(o.prediction.over, 0) << Describe(o.prediction);
}

// Long runs with learning on: motors and predictions stay within kLongRunTol of the CPU's, with
// rows joining and leaving the batch (each cycle one robot sits out, and the row order turns).
TEST(CudaEngine, LongRunsAgreeWithCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  struct Case {
    FieldShape shape;
    std::vector<BrainSpec> specs;
    int cycles;
  };
  // FIELDBRAIN_EMU_FULL_COUNTS=1 runs a card's counts on the emulated device too (slow: the
  // default field's 1000 cycles take most of an hour), to know what a card will compute.
  const bool scaled = kEmulated && std::getenv("FIELDBRAIN_EMU_FULL_COUNTS") == nullptr;
  const std::vector<Case> cases =
      scaled ? std::vector<Case>{{FieldShape::Tiny(), kMixedSpecs, 1000},
                                    {FieldShape::Small(), kMixedSpecs, 200},
                                    {FieldShape::Default(), {kMixedSpecs[0]}, 10}}
                : std::vector<Case>{{FieldShape::Tiny(), kMixedSpecs, 1000},
                                    {FieldShape::Small(), kMixedSpecs, 1000},
                                    {FieldShape::Default(), {kMixedSpecs[0]}, 1000}};
  for (const Case& c : cases) {
    const int n = int(c.specs.size());
    ParityRun cpu(MustMake("cpu", Config(c.shape, n, n)));
    ParityRun gpu(MustMake("cuda", Config(c.shape, n, n)));
    for (const BrainSpec& s : c.specs) {
      ASSERT_TRUE(cpu.Add(s).ok());
      ASSERT_TRUE(gpu.Add(s).ok());
    }
    for (int cycle = 0; cycle < c.cycles; ++cycle) {
      std::vector<int> order;
      for (int k = 0; k < n; ++k) {
        const int r = (k + cycle) % n;
        if (n == 1 || r != cycle % (n + 1)) order.push_back(r);  // robot cycle % (n + 1) sits out
      }
      ASSERT_TRUE(cpu.Step(order).ok());
      ASSERT_TRUE(gpu.Step(order).ok());
    }
    for (int r = 0; r < n; ++r) {
      const OutputDiff o = CompareOutputs(cpu.outputs(r), gpu.outputs(r), kLongRunTol);
      std::printf("%d cycles, C=%d %dx%dx%d, robot %d: motors %s; predictions %s; first cycle over %lld\n",
                  c.cycles, c.shape.channels, c.shape.nx, c.shape.ny, c.shape.nz, r, Describe(o.motors).c_str(),
                  Describe(o.prediction).c_str(), static_cast<long long>(o.first_cycle_over));
      EXPECT_EQ(o.motors.over, 0);
      EXPECT_EQ(o.prediction.over, 0);
      EXPECT_LE(o.confidence.max_abs, kLongRunTol);
      EXPECT_TRUE(o.cycles_match);
      auto a = cpu.engine().Snapshot(cpu.slot(r));
      auto b = gpu.engine().Snapshot(gpu.slot(r));
      ASSERT_TRUE(a.ok() && b.ok());
      std::printf("  field at the end: %s\n", DescribeField(CompareSnapshots(*a, *b, 1e-3).field, c.shape).c_str());
    }
  }
}

// A robot's outputs and brain are bitwise the same alone and as one row of a batch of 64 whose
// order changes every cycle.
TEST(CudaEngine, RobotAloneEqualsRobotInBatchOf64) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const FieldShape shape = kEmulated ? FieldShape::Small() : FieldShape::Default();
  const BrainSpec target{4242, 24, 6, true};
  ParityRun alone(MustMake("cuda", Config(shape, 1, 1)));
  ASSERT_TRUE(alone.Add(target).ok());
  ParityRun batch(MustMake("cuda", Config(shape, 64, 64)));
  std::vector<int> order;
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(batch.Add(i == 0 ? target : BrainSpec{uint64_t(9000 + i), 1 + (i * 7) % 64, 1 + i % 16, i % 5 != 0})
                    .ok());
    order.push_back(i);
  }
  for (int c = 0; c < (kEmulated ? 8 : 20); ++c) {
    ASSERT_TRUE(alone.Step(std::vector<int>{0}).ok());
    std::rotate(order.begin(), order.begin() + 37, order.end());  // robot 0 moves to another row
    ASSERT_TRUE(batch.Step(order).ok());
  }
  EXPECT_TRUE(BitwiseEqual(alone.outputs(0), batch.outputs(0)));
  auto a = alone.engine().Snapshot(alone.slot(0));
  auto b = batch.engine().Snapshot(batch.slot(0));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(BitwiseEqual(*a, *b)) << DescribeField(CompareSnapshots(*a, *b, 0.0).field, shape);
}

// One graph launch per batch gives the same bits as launching the copies and kernels one by one,
// for batch sizes that fill a bucket and for ones that leave masked rows.
TEST(CudaEngine, GraphPathEqualsDirectPath) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const FieldShape shape = FieldShape::Small();
  ParityRun graph(MustMakeCuda(Config(shape, 5, 5), true));
  ParityRun direct(MustMakeCuda(Config(shape, 5, 5), false));
  for (int i = 0; i < 5; ++i) {
    const BrainSpec s{uint64_t(70 + i), 3 + 9 * i, 1 + 3 * i, true};
    ASSERT_TRUE(graph.Add(s).ok());
    ASSERT_TRUE(direct.Add(s).ok());
  }
  const std::vector<std::vector<int>> batches = {{0}, {1, 0}, {2, 4, 3}, {4, 3, 2, 1, 0}, {3, 1, 0, 2}};
  for (int c = 0; c < 60; ++c) {
    const std::vector<int>& b = batches[size_t(c) % batches.size()];
    ASSERT_TRUE(graph.Step(b).ok());
    ASSERT_TRUE(direct.Step(b).ok());
  }
  for (int r = 0; r < 5; ++r) {
    EXPECT_TRUE(BitwiseEqual(graph.outputs(r), direct.outputs(r))) << "robot " << r;
    auto a = graph.engine().Snapshot(graph.slot(r));
    auto b = direct.engine().Snapshot(direct.slot(r));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(BitwiseEqual(*a, *b)) << "robot " << r;
  }
  EXPECT_GT(Counters(graph.engine()).graph_launches, 0);
  EXPECT_EQ(Counters(direct.engine()).graph_launches, 0);
}

class CollectingSink : public StageTimingSink {
 public:
  void RecordStage(Stage s, double seconds, int batch_size) override { records.push_back({s, seconds, batch_size}); }
  struct Record {
    Stage stage;
    double seconds;
    int batch;
  };
  std::vector<Record> records;
};

// In steady state a batch allocates nothing and makes exactly one copy each way: measured by the
// engine's own counters (graph launches count their memcpy nodes), with and without a timing sink.
TEST(CudaEngine, SteadyStateAllocatesNothingAndCopiesOnceEachWay) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (bool graphs : {true, false}) {
    for (bool timed : {false, true}) {
      ParityRun run(MustMakeCuda(Config(kEmulated ? FieldShape::Tiny() : FieldShape::Default(), 4, 4), graphs));
      for (int i = 0; i < 4; ++i) ASSERT_TRUE(run.Add(kMixedSpecs[size_t(i) % kMixedSpecs.size()]).ok());
      CollectingSink sink;
      if (timed) run.engine().set_timing_sink(&sink);
      const std::vector<std::vector<int>> batches = {{0}, {0, 1}, {2, 1, 0}, {3, 2, 1, 0}};
      for (const auto& b : batches) ASSERT_TRUE(run.Step(b).ok());  // warm-up: every bucket once
      const cuda::CudaCounters before = Counters(run.engine());
      for (int c = 0; c < 100; ++c) ASSERT_TRUE(run.Step(batches[size_t(c) % batches.size()]).ok());
      const cuda::CudaCounters after = Counters(run.engine());
      SCOPED_TRACE(::testing::Message() << "graphs " << graphs << ", timed " << timed);
      EXPECT_EQ(after.device_allocs - before.device_allocs, 0);
      EXPECT_EQ(after.host_allocs - before.host_allocs, 0);
      EXPECT_EQ(after.h2d_copies - before.h2d_copies, 100);
      EXPECT_EQ(after.d2h_copies - before.d2h_copies, 100);
      EXPECT_EQ(after.batches - before.batches, 100);
      EXPECT_EQ(after.graph_launches - before.graph_launches, graphs ? 100 : 0);
      EXPECT_GT(after.h2d_bytes - before.h2d_bytes, 100 * int64_t(sizeof(BatchInputRow)));
      // Only the start allocates: the pool, the workspace and the pinned staging.
      EXPECT_EQ(after.device_allocs, 2);
      EXPECT_EQ(after.host_allocs, 1);
      if (timed) {
        // Four stages a batch, the four the kernels are timed by (cuda_engine.cc kEventStages).
        ASSERT_EQ(sink.records.size(), 4u * 104u);
        for (const auto& r : sink.records) {
          EXPECT_GT(r.seconds, 0.0);
          EXPECT_LT(r.seconds, 1.0);
        }
        EXPECT_EQ(sink.records[0].stage, Stage::kPredict);
        EXPECT_EQ(sink.records[1].stage, Stage::kMemory);
        EXPECT_EQ(sink.records[2].stage, Stage::kEvolve);
        EXPECT_EQ(sink.records[3].stage, Stage::kMotor);
        EXPECT_EQ(sink.records.back().batch, 4);
      }
    }
  }
}

TEST(CudaEngine, RejectsBadBatchesAndKeepsWorking) {
  SKIP_WITHOUT_CUDA_DEVICE();
  auto engine = MustMake("cuda", Config(FieldShape::Small(), 3, 2));
  ASSERT_NE(engine, nullptr);
  const int a = *engine->CreateBrain(kMixedSpecs[0]);
  const int b = *engine->CreateBrain(kMixedSpecs[1]);
  const cuda::CudaCounters before = Counters(*engine);
  EXPECT_EQ(engine->RunBatch(0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->RunBatch(3).code(), absl::StatusCode::kInvalidArgument);
  engine->inputs()[0].slot = a;
  engine->inputs()[1].slot = a;
  EXPECT_EQ(engine->RunBatch(2).code(), absl::StatusCode::kInvalidArgument);
  engine->inputs()[1].slot = 2;  // never created
  EXPECT_EQ(engine->RunBatch(2).code(), absl::StatusCode::kInvalidArgument);
  const cuda::CudaCounters after = Counters(*engine);
  EXPECT_EQ(after.h2d_copies, before.h2d_copies);  // nothing reached the device
  EXPECT_EQ(after.batches, before.batches);
  engine->inputs()[1].slot = b;
  ASSERT_TRUE(engine->RunBatch(2).ok());
  EXPECT_EQ(engine->outputs()[0].cycle, 1u);
  EXPECT_EQ(engine->outputs()[1].cycle, 1u);
  EXPECT_TRUE(engine->ReleaseBrain(b));
  EXPECT_FALSE(engine->ReleaseBrain(b));
  EXPECT_EQ(engine->brains_active(), 1);
  EXPECT_EQ(engine->RunBatch(2).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->Snapshot(b).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(engine->CreateBrain(kMixedSpecs[2]).ok());
  ASSERT_TRUE(engine->CreateBrain(kMixedSpecs[2]).ok());
  EXPECT_EQ(engine->CreateBrain(kMixedSpecs[2]).status().code(), absl::StatusCode::kResourceExhausted);
}

// DESIGN.md section 4's hard property on the GPU: content and memory within +-1.5, dynamics within
// +-5, outputs finite, under constant, extreme and alternating input.
TEST(CudaEngine, FieldStaysBoundedUnderExtremeInput) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const FieldShape shape = kEmulated ? FieldShape::Tiny() : FieldShape::Default();
  auto engine = MustMake("cuda", Config(shape, 2, 2));
  ASSERT_NE(engine, nullptr);
  const int a = *engine->CreateBrain(BrainSpec{1, 64, 16, true});
  const int b = *engine->CreateBrain(BrainSpec{2, 9, 4, true});
  for (int c = 0; c < (kEmulated ? 500 : 2000); ++c) {
    BatchInputRow& ra = engine->inputs()[0];
    BatchInputRow& rb = engine->inputs()[1];
    ra.slot = a;
    rb.slot = b;
    for (int i = 0; i < kMaxSensors; ++i) {
      ra.sensors[i] = (c / 50) % 2 == 0 ? 1.0f : -1.0f;
      rb.sensors[i] = (c + i) % 2 == 0 ? 1.0f : -1.0f;
    }
    ra.reward = 1.0f;
    rb.reward = c % 2 == 0 ? 1.0f : -1.0f;
    ASSERT_TRUE(engine->RunBatch(2).ok());
    for (int r = 0; r < 2; ++r)
      for (float m : engine->outputs()[r].motors) ASSERT_TRUE(std::isfinite(m) && std::fabs(m) <= 1.0f);
  }
  for (int slot : {a, b}) {
    auto s = engine->Snapshot(slot);
    ASSERT_TRUE(s.ok());
    const int64_t v = shape.voxels();
    for (int64_t i = 0; i < shape.floats(); ++i) {
      const float f = s->field[size_t(i)];
      ASSERT_TRUE(std::isfinite(f));
      ASSERT_LE(std::fabs(f), i / v < shape.dynamics_begin() ? 1.5f : 5.0f) << i;
    }
  }
}

// The evolve kernel's shared-memory attribute is process-wide: an engine made later with a
// smaller tile must not shrink what an earlier, larger one launches with (and the other way).
TEST(CudaEngine, EnginesOfDifferentShapesCoexistInOneProcess) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const std::vector<FieldShape> shapes = {FieldShape::Default(), FieldShape::Small(), FieldShape{16, 8, 32, 256}};
  for (int first = 0; first < int(shapes.size()); ++first) {
    std::vector<std::unique_ptr<ParityRun>> runs;
    for (int k = 0; k < int(shapes.size()); ++k) {
      const FieldShape& shape = shapes[size_t((first + k) % shapes.size())];
      runs.push_back(std::make_unique<ParityRun>(MustMake("cuda", Config(shape, 1, 1))));
      ASSERT_TRUE(runs.back()->Add(kMixedSpecs[0]).ok());
    }
    for (auto& run : runs) {  // each engine cycles after every other one was made
      const absl::Status s = run->Run(2);
      EXPECT_TRUE(s.ok()) << "shape C=" << run->engine().config().shape.channels << " z="
                          << run->engine().config().shape.nz << " (made " << first << " first): " << s;
    }
  }
}

// brain_device_memory_*_bytes come from here, and a pool the device cannot hold is refused at
// start with the figures rather than failing in cudaMalloc.
TEST(CudaEngine, DeviceMemoryIsReportedAndAnOversizedPoolIsRefused) {
  SKIP_WITHOUT_CUDA_DEVICE();
  auto engine = MustMake("cuda", Config(FieldShape::Default(), 4, 2));
  ASSERT_NE(engine, nullptr);
  const std::optional<DeviceMemory> memory = engine->device_memory();
  ASSERT_TRUE(memory.has_value());
  EXPECT_GE(memory->used_bytes, engine->pool_bytes());
  EXPECT_GT(memory->total_bytes, memory->used_bytes);
  EXPECT_TRUE(engine->health().ok());
  std::printf("device: %s\n", engine->device_description().c_str());
  const int64_t field_bytes = FieldShape::Default().floats() * int64_t(sizeof(float));
  const int robots = int(std::min<int64_t>(memory->total_bytes / field_bytes + 1, 1 << 20));
  const auto oversized = cuda::MakeCudaEngine(Config(FieldShape::Default(), robots, 1));
  ASSERT_FALSE(oversized.ok());
  EXPECT_EQ(oversized.status().code(), absl::StatusCode::kResourceExhausted) << oversized.status();
  EXPECT_NE(oversized.status().message().find("has only"), absl::string_view::npos) << oversized.status();
}

// The pattern memory (gpu/model/memory_math.h) on the GPU against the CPU: the same writes into
// the same entries, the same recalls, the same keys, strengths and blend weights to the bit (one
// sum order, model::key_dot); the stored and recalled patterns within 1e-6: they are pooled from
// fields that differ by the one-cycle rounding (the field tolerance's 1e-7, before 64-cell means
// and the blend).
TEST(CudaEngine, PatternMemoryMatchesCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (const FieldShape shape : {FieldShape::Small(), FieldShape::Default()}) {
    auto cpu = MustMake("cpu", Config(shape, 1, 1));
    auto gpu = MustMake("cuda", Config(shape, 1, 1));
    ASSERT_NE(gpu, nullptr);
    const int a = *cpu->CreateBrain(BrainSpec{77, 12, 4, true});
    const int b = *gpu->CreateBrain(BrainSpec{77, 12, 4, true});
    std::vector<std::vector<float>> contexts(10, std::vector<float>(12));
    for (size_t c = 0; c < contexts.size(); ++c)
      for (int i = 0; i < 12; ++i) contexts[c][size_t(i)] = std::sin(float(c * 12 + size_t(i)) * 1.7f);
    auto step = [&](Engine& e, int slot, const std::vector<float>& sensors, float reward) {
      e.inputs()[0].slot = slot;
      std::copy(sensors.begin(), sensors.end(), e.inputs()[0].sensors);
      e.inputs()[0].reward = reward;
      return e.RunBatch(1);
    };
    int recalled = 0;
    float worst_pattern = 0.0f;
    for (int round = 0; round < 3; ++round)
      for (const auto& c : contexts) {
        const float reward = round == 0 ? 1.0f : 0.0f;  // round 0 stores, rounds 1-2 recall
        for (float r : {0.0f, reward}) {
          ASSERT_TRUE(step(*cpu, a, c, r).ok());
          ASSERT_TRUE(step(*gpu, b, c, r).ok());
          const BrainSnapshot x = *cpu->Snapshot(a), y = *gpu->Snapshot(b);
          ASSERT_EQ(x.state.memory_written, y.state.memory_written);
          ASSERT_EQ(x.state.memory_recalled, y.state.memory_recalled);
          recalled += y.state.memory_recalled >= 0;
          float key_diff = 0.0f, pattern_diff = 0.0f;
          for (int j = 0; j < kMemoryEntries; ++j) {
            ASSERT_EQ(x.memory.used[j], y.memory.used[j]);
            ASSERT_EQ(x.memory.valence[j], y.memory.valence[j]);
            ASSERT_EQ(x.memory.strength[j], y.memory.strength[j]);
            for (int k = 0; k < kKeyBins; ++k)
              for (int q = 0; q < 2; ++q) key_diff = std::max(key_diff, std::fabs(x.memory.key[j][k][q] - y.memory.key[j][k][q]));
          }
          for (size_t i = 0; i < x.memory_patterns.size(); ++i)
            pattern_diff = std::max(pattern_diff, std::fabs(x.memory_patterns[i] - y.memory_patterns[i]));
          for (size_t i = 0; i < x.pattern.size(); ++i)
            pattern_diff = std::max(pattern_diff, std::fabs(x.pattern[i] - y.pattern[i]));
          for (int m = 0; m < kRecallTop; ++m) {
            ASSERT_EQ(x.state.recall_entry[m], y.state.recall_entry[m]);
            ASSERT_EQ(x.state.recall_weight[m], y.state.recall_weight[m]);
          }
          EXPECT_EQ(key_diff, 0.0f);
          EXPECT_LE(pattern_diff, 1e-6f);
          worst_pattern = std::max(worst_pattern, pattern_diff);
          // The field, with the recalled pattern in its memory channels, within the long-run tolerance.
          EXPECT_EQ(CompareSnapshots(x, y, kLongRunTol).field.over, 0);
        }
      }
    EXPECT_GE(recalled, 20);  // rounds 1-2 recall every stored context
    std::printf("pattern memory, C=%d: keys bitwise, patterns max |d| %.3g\n", shape.channels, worst_pattern);
  }
}

#if defined(FIELDBRAIN_CUDA_EMU)
// What only the emulated device can do: fail on purpose, and be another card.

// A device fault (an illegal address in the evolve kernel, sticky as on a card) latches the
// engine: that batch fails, and every later batch, new brain, snapshot and restore is refused, so
// no checkpoint is ever written from the half-run cycle.
TEST(CudaEngine, AStickyDeviceFaultLatchesTheEngineAndNoSnapshotIsTakenFromIt) {
  ParityRun run(MustMake("cuda", Config(FieldShape::Tiny(), 3, 2)));
  ASSERT_TRUE(run.Add(kMixedSpecs[0]).ok());
  ASSERT_TRUE(run.Add(kMixedSpecs[1]).ok());
  ASSERT_TRUE(run.Run(3).ok());
  absl::StatusOr<BrainSnapshot> before = run.engine().Snapshot(run.slot(0));
  ASSERT_TRUE(before.ok());
  emu::InjectKernelFault("EvolveKernel", cudaErrorIllegalAddress);
  const absl::Status failed = run.Run(1);
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("cudaErrorIllegalAddress"), absl::string_view::npos) << failed;
  Engine& e = run.engine();
  EXPECT_FALSE(e.health().ok());
  EXPECT_EQ(run.Run(1).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(e.Snapshot(run.slot(0)).status().code(), absl::StatusCode::kFailedPrecondition);
  BrainSnapshot into = *before;
  EXPECT_EQ(e.SnapshotInto(run.slot(1), into).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(BitwiseEqual(into, *before)) << "a refused snapshot leaves the buffer as it was";
  EXPECT_EQ(e.Restore(run.slot(0), *before).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(e.CreateBrain(kMixedSpecs[2]).status().code(), absl::StatusCode::kFailedPrecondition);
  emu::ResetDevice();
}

// The brains in the engine's one pool allocation are separated by poisoned red zones: a kernel
// writing one float past a brain's new field is stopped by AddressSanitizer (made here by an
// effect after the evolve kernel, which writes where an off-by-one in it would).
#if defined(__SANITIZE_ADDRESS__)
void WriteOnePastTheNewField(void*, const void* params) {
  const cuda::CycleArgs& a = std::get<0>(*static_cast<const std::tuple<cuda::CycleArgs>*>(params));
  float* field = reinterpret_cast<float*>(a.pool + a.field_out[0]);
  field[a.shape.floats()] = 1.0f;
}

TEST(CudaEngine, AWriteBetweenBrainsInThePoolIsCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // stream workers are running
  EXPECT_DEATH(
      {
        ParityRun run(MustMake("cuda", Config(FieldShape::Tiny(), 2, 2)));
        static_cast<void>(run.Add(kMixedSpecs[0]));
        static_cast<void>(run.Add(kMixedSpecs[1]));
        emu::InjectKernelEffect("EvolveKernel", &WriteOnePastTheNewField, nullptr);
        static_cast<void>(run.Run(1));
      },
      "use-after-poison");
}
#endif

// The evolve kernel's tile is planned from the card's shared memory (PlanEvolveTile): on every
// card the emulator plays, each field shape's plan launches within that card's limits and the
// first cycle matches the CPU engine.
TEST(CudaEngine, TheEvolveTilePlanRunsOnEveryEmulatedCard) {
  for (const std::string& card : emu::CardNames()) {
    ASSERT_TRUE(emu::SelectCard(card));
    for (const FieldShape shape : {FieldShape::Tiny(), FieldShape::Small(), FieldShape::Default()}) {
      ParityRun cpu(MustMake("cpu", Config(shape, 1, 1)));
      ParityRun gpu(MustMake("cuda", Config(shape, 1, 1)));
      ASSERT_TRUE(cpu.Add(kMixedSpecs[0]).ok());
      ASSERT_TRUE(gpu.Add(kMixedSpecs[0]).ok());
      ASSERT_TRUE(cpu.Run(1).ok());
      const absl::Status s = gpu.Run(1);
      ASSERT_TRUE(s.ok()) << card << ", C=" << shape.channels << ": " << s;
      auto a = cpu.engine().Snapshot(cpu.slot(0));
      auto b = gpu.engine().Snapshot(gpu.slot(0));
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(CompareSnapshots(*a, *b, kOneCycleFieldTol).field.over, 0) << card << ", C=" << shape.channels;
    }
  }
  EXPECT_TRUE(emu::Reports().empty());
  ASSERT_TRUE(emu::SelectCard("h100"));
}
#endif  // FIELDBRAIN_CUDA_EMU

#else  // !FIELDBRAIN_HAVE_CUDA

TEST(CudaEngine, NeedsACudaBuild) { GTEST_SKIP() << "no CUDA device: this build has no CUDA engine (no nvcc)"; }

#endif

}  // namespace
}  // namespace fieldbrain::testing

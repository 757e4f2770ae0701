// Host-side tests, no GPU needed (ctest label "unit"): the parity harness itself, run on two CPU
// engines so its comparisons are checked against a known answer, and the CUDA engine's host logic
// (batch-size buckets, staging layout, evolve tiling) in builds that have it.
#include "tests/gpu/parity_harness.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#if FIELDBRAIN_HAVE_CUDA
#include "gpu/cuda/evolve_plan.h"
#include "gpu/cuda/staging.h"
#endif

namespace fieldbrain::testing {
namespace {

EngineConfig SmallConfig(int robots, int threads) {
  EngineConfig c;
  c.shape = FieldShape::Small();
  c.max_robots = robots;
  c.max_batch = robots;
  c.threads = threads;
  return c;
}

std::vector<BrainSpec> Specs() {
  return {BrainSpec{11, 12, 4, true}, BrainSpec{12, 64, 16, true}, BrainSpec{13, 5, 3, false}};
}

std::unique_ptr<ParityRun> CpuRun(int threads) {
  auto engine = MakeEngine("cpu", SmallConfig(3, threads));
  EXPECT_TRUE(engine.ok()) << engine.status();
  auto run = std::make_unique<ParityRun>(*std::move(engine));
  for (const BrainSpec& s : Specs()) EXPECT_TRUE(run->Add(s).ok());
  return run;
}

TEST(ParityHarness, InputsAreDeterministicAndInRange) {
  const BrainSpec spec{5, 64, 4, true};
  BatchInputRow a, b;
  for (uint64_t cycle = 0; cycle < 240; ++cycle) {
    FillInputRow(spec, cycle, 3, a);
    FillInputRow(spec, cycle, 3, b);
    EXPECT_EQ(a.slot, 3);
    for (int i = 0; i < kMaxSensors; ++i) {
      EXPECT_EQ(a.sensors[i], b.sensors[i]);
      EXPECT_GE(a.sensors[i], -1.0f);
      EXPECT_LE(a.sensors[i], 1.0f);
    }
    EXPECT_EQ(a.reward, b.reward);
    if (cycle % 120 >= 40 && cycle % 120 < 80) {
      EXPECT_EQ(a.reward, -1.0f) << "cycle " << cycle << " is in a stretch of trouble";
    } else {
      EXPECT_TRUE(a.reward == 0.0f || a.reward == 0.5f || a.reward == -0.5f);
    }
  }
}

// Two CPU engines with different thread counts are bitwise equal (the CPU engine's promise):
// the harness must report zero difference everywhere.
TEST(ParityHarness, TwoCpuEnginesAgreeBitwise) {
  auto one = CpuRun(1), two = CpuRun(2);
  ASSERT_TRUE(one->Run(30).ok());
  ASSERT_TRUE(two->Run(30).ok());
  for (int r = 0; r < one->robots(); ++r) {
    ASSERT_EQ(one->outputs(r).size(), 30u);
    EXPECT_TRUE(BitwiseEqual(one->outputs(r), two->outputs(r)));
    const OutputDiff d = CompareOutputs(one->outputs(r), two->outputs(r), 0.0);
    EXPECT_EQ(d.motors.max_abs, 0.0);
    EXPECT_EQ(d.prediction.max_abs, 0.0);
    EXPECT_EQ(d.first_cycle_over, -1);
    EXPECT_TRUE(d.cycles_match);
    auto a = one->engine().Snapshot(one->slot(r));
    auto b = two->engine().Snapshot(two->slot(r));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(BitwiseEqual(*a, *b));
    const SnapshotDiff s = CompareSnapshots(*a, *b, 0.0);
    EXPECT_EQ(s.field.max_abs, 0.0) << DescribeField(s.field, a->shape);
    EXPECT_EQ(s.field.compared, a->shape.floats());
    EXPECT_EQ(s.state.max_abs, 0.0);
  }
}

TEST(ParityHarness, FindsAPlantedFieldDifference) {
  auto run = CpuRun(1);
  ASSERT_TRUE(run->Run(2).ok());
  auto a = run->engine().Snapshot(run->slot(0));
  ASSERT_TRUE(a.ok());
  BrainSnapshot b = *a;
  const FieldShape& sh = a->shape;
  const int64_t at = sh.index(5, 3, 7, 2);
  b.field[size_t(at)] += 2e-5f;
  b.field[size_t(sh.index(40 % sh.channels, 1, 1, 1))] += 5e-6f;  // under tolerance
  const SnapshotDiff d = CompareSnapshots(*a, b, 1e-5);
  EXPECT_EQ(d.field.where, at);
  EXPECT_EQ(d.field.over, 1);
  EXPECT_NEAR(d.field.max_abs, 2e-5, 1e-6);
  EXPECT_NE(DescribeField(d.field, sh).find("F[c=5][x=3][y=7][z=2]"), std::string::npos) << DescribeField(d.field, sh);
  EXPECT_FALSE(BitwiseEqual(*a, b));
  b.state.wp[1][7] += 1.0f;
  EXPECT_EQ(CompareSnapshots(*a, b, 1e-5).state.over, 1);
}

TEST(ParityHarness, FindsAPlantedOutputDifference) {
  auto run = CpuRun(1);
  ASSERT_TRUE(run->Run(25).ok());
  std::vector<RobotOutput> a = run->outputs(1), b = a;
  b[17].motors[2] += 0.01f;
  b[20].prediction[63] -= 0.002f;
  OutputDiff d = CompareOutputs(a, b, 1e-3);
  EXPECT_EQ(d.first_cycle_over, 17);
  EXPECT_NEAR(d.motors.max_abs, 0.01, 1e-6);
  EXPECT_EQ(d.motors.where, 17 * 16 + 2);
  EXPECT_EQ(d.prediction.over, 1);
  EXPECT_FALSE(BitwiseEqual(a, b));
  b = a;
  b[3].cycle += 1;
  EXPECT_FALSE(CompareOutputs(a, b, 1e-3).cycles_match);
  b.pop_back();
  EXPECT_TRUE(std::isinf(CompareOutputs(a, b, 1e-3).motors.max_abs));
}

TEST(ParityHarness, NanOnOneSideIsAnInfiniteDifference) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> a{1.0f, nan, 3.0f}, b{1.0f, 2.0f, 3.0f}, c{1.0f, nan, 3.0f};
  EXPECT_TRUE(std::isinf(MaxAbsDiff(a, b, 1.0).max_abs));
  EXPECT_EQ(MaxAbsDiff(a, b, 1.0).where, 1);
  EXPECT_EQ(MaxAbsDiff(a, c, 0.0).max_abs, 0.0);
}

// The harness's batch path: a robot alone and the same robot in a batch, on the CPU engine
// (which promises bitwise equality too); the GPU test runs the same comparison on CUDA.
TEST(ParityHarness, CpuRobotAloneEqualsRobotInBatch) {
  auto alone_engine = MakeEngine("cpu", SmallConfig(1, 1));
  ASSERT_TRUE(alone_engine.ok());
  ParityRun alone(*std::move(alone_engine));
  ASSERT_TRUE(alone.Add(Specs()[1]).ok());
  auto batch = CpuRun(2);
  const std::vector<int> orders[] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}};
  for (int c = 0; c < 12; ++c) {
    ASSERT_TRUE(alone.Step(std::vector<int>{0}).ok());
    ASSERT_TRUE(batch->Step(orders[c % 3]).ok());
  }
  EXPECT_TRUE(BitwiseEqual(alone.outputs(0), batch->outputs(1)));
}

#if FIELDBRAIN_HAVE_CUDA

TEST(CudaHostLogic, BatchBucketsArePowersOfTwoThenMaxBatch) {
  EXPECT_EQ(cuda::BatchBuckets(1), (std::vector<int>{1}));
  EXPECT_EQ(cuda::BatchBuckets(16), (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_EQ(cuda::BatchBuckets(20), (std::vector<int>{1, 2, 4, 8, 16, 20}));
  for (int max_batch : {1, 2, 3, 7, 16, 20, 64, 100, 256}) {
    const std::vector<int> buckets = cuda::BatchBuckets(max_batch);
    EXPECT_EQ(buckets.back(), max_batch);
    for (int n = 1; n <= max_batch; ++n) {
      const int i = cuda::BucketIndex(buckets, n);
      ASSERT_LT(i, int(buckets.size()));
      EXPECT_GE(buckets[size_t(i)], n);
      if (i > 0) {
        EXPECT_LT(buckets[size_t(i - 1)], n);
      }
      EXPECT_LE(buckets[size_t(i)], 2 * n);  // at most twice the rows launched
    }
  }
}

TEST(CudaHostLogic, StagingLayoutIsAlignedAndDisjoint) {
  for (int max_batch : {1, 5, 16, 64, 256}) {
    const cuda::StagingLayout l(max_batch, 128, cuda::kPartialFloats);
    EXPECT_EQ(l.count_at, 0);
    EXPECT_GE(l.field_in_at, int64_t(sizeof(int32_t)));
    EXPECT_EQ(l.field_in_at % 8, 0);
    EXPECT_EQ(l.field_out_at, l.field_in_at + 8 * max_batch);
    EXPECT_GE(l.rows_at, l.field_out_at + 8 * max_batch);
    for (int64_t at : {l.rows_at, l.input_bytes, l.pinned_outputs_at, l.pinned_bytes, l.ws_outputs_at, l.ws_errors_at,
                       l.ws_partials_at, l.workspace_bytes})
      EXPECT_EQ(at % cuda::kStagingAlign, 0) << at;
    EXPECT_EQ(l.input_copy_bytes(max_batch), l.rows_at + max_batch * int64_t(sizeof(BatchInputRow)));
    EXPECT_LE(l.input_copy_bytes(max_batch), l.input_bytes);
    EXPECT_LT(l.input_copy_bytes(1), l.input_copy_bytes(max_batch) + 1);
    EXPECT_GE(l.pinned_outputs_at, l.input_bytes);
    EXPECT_GE(l.pinned_bytes, l.pinned_outputs_at + l.output_copy_bytes(max_batch));
    EXPECT_GE(l.ws_outputs_at, l.input_bytes);
    EXPECT_GE(l.ws_errors_at, l.ws_outputs_at + l.output_copy_bytes(max_batch));
    EXPECT_GE(l.ws_partials_at, l.ws_errors_at + int64_t(max_batch) * kMaxSensors * 4);
    EXPECT_GE(l.workspace_bytes, l.ws_partials_at + int64_t(max_batch) * 128 * cuda::kPartialFloats * 4);
  }
}

TEST(CudaHostLogic, EvolveTileOfTheDefaultAndSmallFields) {
  constexpr int kH100OptIn = 227 * 1024;
  const auto d = cuda::PlanEvolveTile(FieldShape::Default(), kH100OptIn);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rows, 8);
  EXPECT_EQ(d->quads, 8);
  EXPECT_EQ(d->threads, 64);
  EXPECT_EQ(d->tiles_y, 4);
  EXPECT_EQ(d->blocks_per_robot, 128);
  EXPECT_LE(d->smem_bytes, 48 * 1024);  // no opt-in needed; several blocks per SM
  const auto s = cuda::PlanEvolveTile(FieldShape::Small(), kH100OptIn);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->rows, 4);
  EXPECT_EQ(s->threads, 16);
  EXPECT_EQ(s->blocks_per_robot, 16 * 4);
}

TEST(CudaHostLogic, EvolveTilesStayInsidePoolCellsAndTheirSharedMemoryIsAligned) {
  for (const FieldShape shape : {FieldShape::Default(), FieldShape::Small(), FieldShape{48, 8, 12, 20},
                                 FieldShape{16, 40, 24, 8}, FieldShape{64, 64, 64, 64}}) {
    ASSERT_TRUE(shape.valid());
    const auto t = cuda::PlanEvolveTile(shape, 227 * 1024);
    ASSERT_TRUE(t.has_value()) << shape.nz;
    EXPECT_EQ((shape.ny / 4) % t->rows, 0);
    EXPECT_EQ(t->tiles_y % 4, 0);
    EXPECT_EQ(t->threads, t->rows * shape.nz / 4);
    EXPECT_LE(t->threads, cuda::kMaxEvolveThreads);
    const cuda::EvolveSmem& m = t->smem;
    const int offsets[] = {m.rates, m.group_mean, m.new_group, m.tile, m.sensors, m.errors, m.row_reduce,
                           m.near, m.near_count, m.words};
    for (size_t i = 0; i < std::size(offsets); ++i) {
      EXPECT_EQ(offsets[i] % 4, 0);
      if (i > 0) {
        EXPECT_GT(offsets[i], offsets[i - 1]);
      }
    }
    const int v = t->rows * shape.nz;
    EXPECT_GE(m.group_mean - m.rates, 4 * shape.quarter() * v);
    EXPECT_GE(m.sensors - m.tile, 2 * (t->rows + 2) * shape.nz);
    EXPECT_EQ(t->smem_bytes, 4 * m.words);
  }
}

TEST(CudaHostLogic, EvolveTileRefusesWhatDoesNotFit) {
  EXPECT_FALSE(cuda::PlanEvolveTile(FieldShape{16, 8, 8, 1024}, 48 * 1024).has_value());
  EXPECT_TRUE(cuda::PlanEvolveTile(FieldShape{16, 8, 8, 1024}, 227 * 1024).has_value());
  EXPECT_FALSE(cuda::PlanEvolveTile(FieldShape{16, 8, 8, 2048}, 227 * 1024).has_value());
  EXPECT_FALSE(cuda::PlanEvolveTile(FieldShape{17, 8, 8, 8}, 227 * 1024).has_value());
}

#endif  // FIELDBRAIN_HAVE_CUDA

}  // namespace
}  // namespace fieldbrain::testing

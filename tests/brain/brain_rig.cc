#include "tests/brain/brain_rig.h"

#include <cmath>

#include "gtest/gtest.h"

namespace fieldbrain::testing {

BrainRig::BrainRig(const FieldShape& shape, int robots, int threads) {
  EngineConfig config;
  config.shape = shape;
  config.max_robots = robots;
  config.max_batch = robots;
  config.threads = threads;
  auto engine = MakeEngine("cpu", config);
  EXPECT_TRUE(engine.ok()) << engine.status();
  engine_ = std::move(*engine);
}

int BrainRig::Add(const BrainSpec& spec) {
  auto slot = engine_->CreateBrain(spec);
  EXPECT_TRUE(slot.ok()) << slot.status();
  slots_.push_back(*slot);
  specs_.push_back(spec);
  return int(slots_.size()) - 1;
}

std::vector<CycleOut> BrainRig::Step(std::span<const int> which, const std::vector<std::vector<float>>& sensors,
                                     const std::vector<float>& rewards) {
  std::span<BatchInputRow> in = engine_->inputs();
  for (size_t r = 0; r < which.size(); ++r) {
    in[r].slot = slots_[which[r]];
    in[r].reward = rewards[r];
    for (size_t i = 0; i < sensors[r].size(); ++i) in[r].sensors[i] = sensors[r][i];
  }
  const absl::Status s = engine_->RunBatch(int(which.size()));
  EXPECT_TRUE(s.ok()) << s;
  std::vector<CycleOut> outs;
  for (size_t r = 0; r < which.size(); ++r) {
    const BatchOutputRow& o = engine_->outputs()[r];
    const BrainSpec& spec = specs_[which[r]];
    outs.push_back(CycleOut{std::vector<float>(o.motors, o.motors + spec.motor_count),
                            std::vector<float>(o.prediction, o.prediction + spec.sensor_count), o.confidence,
                            o.error});
  }
  return outs;
}

CycleOut BrainRig::Step1(int which, const std::vector<float>& sensors, float reward) {
  const int w[1] = {which};
  return Step(w, {sensors}, {reward})[0];
}

float MeanAbsContent(const BrainSnapshot& s) {
  const int64_t n = int64_t(s.shape.content()) * s.shape.voxels();
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::fabs(s.field[i]);
  return float(sum / double(n));
}

}  // namespace fieldbrain::testing

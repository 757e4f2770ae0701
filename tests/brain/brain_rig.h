// A small harness for driving CPU-engine brains in tests: one engine, a few robots, one call
// per cycle.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "gpu/engine.h"

namespace fieldbrain::testing {

struct CycleOut {
  std::vector<float> motors;
  std::vector<float> prediction;
  float confidence = 0;
  float error = 0;
};

class BrainRig {
 public:
  // An engine of `shape` with room for `robots` brains, all run in one batch per Step.
  BrainRig(const FieldShape& shape, int robots, int threads = 0);

  // Adds a brain; returns its index in this rig (0, 1, ...).
  int Add(const BrainSpec& spec);
  // One cycle of the brains `which` (indices from Add), in that order, as one batch.
  std::vector<CycleOut> Step(std::span<const int> which, const std::vector<std::vector<float>>& sensors,
                             const std::vector<float>& rewards);
  // One cycle of a single brain.
  CycleOut Step1(int which, const std::vector<float>& sensors, float reward = 0.0f);

  Engine& engine() { return *engine_; }
  int slot(int which) const { return slots_[which]; }

 private:
  std::unique_ptr<Engine> engine_;
  std::vector<int> slots_;
  std::vector<BrainSpec> specs_;
};

// Mean |content| of a brain's field.
float MeanAbsContent(const BrainSnapshot& s);

}  // namespace fieldbrain::testing

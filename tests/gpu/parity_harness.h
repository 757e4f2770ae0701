// A harness for comparing two engines (CUDA against CPU, graph against direct launches, a robot
// alone against the same robot in a batch): drive brains through an engine with deterministic
// inputs, record every output, and measure the differences of outputs and snapshots.
// Host-only; the harness's own tests run it on two CPU engines (parity_harness_test.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpu/engine.h"

namespace fieldbrain::testing {

// The inputs a robot gets in a cycle, a pure function of (seed, cycle): sensors uniform in
// [-1, 1], a reward of +-0.5 every third cycle (0 otherwise).
void FillInputRow(const BrainSpec& spec, uint64_t cycle, int slot, BatchInputRow& row);

struct RobotOutput {
  std::vector<float> motors;      // motor_count values
  std::vector<float> prediction;  // sensor_count values
  float confidence = 0.0f;
  float error = 0.0f;
  uint64_t cycle = 0;
};
using Trace = std::vector<std::vector<RobotOutput>>;  // [cycle][robot]

// Brains of `specs` in one engine, run as batches.
class ParityRun {
 public:
  explicit ParityRun(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}

  absl::Status Add(const BrainSpec& spec);
  // One batch: the robots `order` (indices in Add order) as rows 0, 1, ..., each with its inputs
  // for its own next cycle. Records the outputs of the robots in the batch.
  absl::Status Step(std::span<const int> order);
  // `cycles` batches of all robots in Add order.
  absl::Status Run(int cycles);

  Engine& engine() { return *engine_; }
  int slot(int robot) const { return slots_[size_t(robot)]; }
  int robots() const { return int(specs_.size()); }
  // Outputs of robot r, one per cycle it ran.
  const std::vector<RobotOutput>& outputs(int robot) const { return outputs_[size_t(robot)]; }

 private:
  std::unique_ptr<Engine> engine_;
  std::vector<BrainSpec> specs_;
  std::vector<int> slots_;
  std::vector<uint64_t> cycles_;
  std::vector<std::vector<RobotOutput>> outputs_;
};

// The largest |a_i - b_i|, where it is, and how many exceed `tol` (sizes must match; a size
// mismatch or a NaN on one side only counts as an infinite difference).
struct Diff {
  double max_abs = 0.0;
  int64_t where = -1;
  double a = 0.0, b = 0.0;
  int64_t over = 0;
  int64_t compared = 0;
};
Diff MaxAbsDiff(std::span<const float> a, std::span<const float> b, double tol);
void Merge(Diff& into, const Diff& d, int64_t offset);

struct SnapshotDiff {
  Diff field, pattern, state;  // state: scalars (|psi|^2 / its length), means, prediction, psi_prev, critic, traces, Wp, Wm
  Diff memory;                 // the pattern memory's keys, valences, strengths and stored patterns
};
SnapshotDiff CompareSnapshots(const BrainSnapshot& a, const BrainSnapshot& b, double tol);
std::vector<float> MemoryFloats(const BrainSnapshot& s);

struct OutputDiff {
  Diff motors, prediction, confidence;
  int64_t first_cycle_over = -1;  // first cycle where a motor or prediction exceeds tol
  bool cycles_match = true;       // the cycle counters agree everywhere
};
OutputDiff CompareOutputs(const std::vector<RobotOutput>& a, const std::vector<RobotOutput>& b, double tol);

// Every float and counter identical, bit for bit.
bool BitwiseEqual(const std::vector<RobotOutput>& a, const std::vector<RobotOutput>& b);
bool BitwiseEqual(const BrainSnapshot& a, const BrainSnapshot& b);

// "max |d| 3.1e-06 at F[c=3][x=1][y=2][z=5] (0.12 vs 0.12), 0 of 2097152 over tolerance".
std::string DescribeField(const Diff& d, const FieldShape& shape);
std::string Describe(const Diff& d);

}  // namespace fieldbrain::testing

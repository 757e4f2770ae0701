// The imprint of one slab of x planes (DESIGN.md section 4, step 2) for the CPU field pass: which
// sensors reach the slab, and per content channel the sensory field S and error field E they
// write.
//
// A sensor reaches the voxels within Chebyshev distance kImprintRadius of its site, weighted by
// imprint_decay of the L1 distance. On one plane that is a run of whole z-rows, contiguous in the
// plane; the run carries a weight per voxel, zero where the sensor does not reach, so S and E are
// built by vector loops over runs. Each voxel still adds its sensors' shares in
// sensor order (a zero-weight share adds +-0, which leaves a sum that starts at +0 unchanged), and a
// column takes at most kMaxNearSensors sensors: S and E are bit for bit those of model:: and of
// the CUDA kernel.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "gpu/cpu/cache_aligned.h"
#include "gpu/model/field_math.h"
#include "gpu/model/robot_state.h"

namespace fieldbrain::cpu {

class SlabImprint {
 public:
  // For slabs of up to `max_planes` x planes.
  SlabImprint(const FieldShape& shape, int max_planes);

  // The runs of the sensors that reach the slab of planes [x0, x0 + planes): plane by plane, each
  // plane's in sensor order. They depend on the sensors' sites alone, so a slab prepared last for
  // the same sites (the next robot of a batch with as many sensors, the same robot's next cycle on
  // a field of one slab) keeps its runs.
  void Prepare(const RobotParams& params, int x0, int planes);

  // No sensor reaches the slab: its imprint is zero everywhere.
  bool empty() const { return runs_.empty(); }
  // The slab voxels ((plane * ny + y) * nz + z) some sensor reaches lie in [begin(), end()).
  int begin() const { return begin_; }
  int end() const { return end_; }

  // S and E of content channel ch over [begin(), end()), indexed by slab voxel.
  void Fill(const RobotParams& params, const float* sensors, const float* errors, int ch);
  const float* s_field() const { return s_field_.data(); }
  const float* e_field() const { return e_field_.data(); }

 private:
  struct Run {
    int sensor;
    int first;   // slab voxel where the run starts
    int length;  // voxels: whole z-rows
    const float* weight;
  };
  // What the runs were prepared for (planes 0: nothing yet).
  struct Prepared {
    int x0 = 0, planes = 0, sensor_count = 0;
    int32_t site[kMaxSensors][3] = {};
  };
  bool PreparedFor(const RobotParams& params, int x0, int planes) const;

  int Y_, Z_;
  Prepared prepared_;
  int begin_ = 0, end_ = 0;
  std::vector<Run> runs_;
  CacheAlignedVector<float> weights_;  // per run: (2 kImprintRadius + 1) rows of nz weights
  std::array<float, 3 * model::kImprintRadius + 1> decay_;  // imprint_decay of every L1 distance in a window
  std::vector<int> taken_;      // per plane and y: sensors this column has taken (the cap)
  CacheAlignedVector<float> s_field_, e_field_;
};

}  // namespace fieldbrain::cpu

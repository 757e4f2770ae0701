// The CPU engine's field pass (DESIGN.md section 4, steps 2-3 and the reduction of step 4), one
// x-slab of one robot at a time: imprint + evolve F_t -> F_t+1, then the slab's share of the
// FieldSummary. Slabs are independent, so the engine spreads (robot, slab) pairs over threads and
// sums the slab partials in slab order: results do not depend on the thread count or the batch.
#pragma once

#include <vector>

#include "gpu/cpu/slab_imprint.h"
#include "gpu/model/field_math.h"
#include "gpu/model/readout.h"
#include "gpu/model/robot_state.h"

namespace fieldbrain::cpu {

struct SlabJob {
  const FieldShape* shape;
  const RobotParams* params;
  const float* sensors;  // s, sensor_count values
  const float* errors;   // e = s - p
  const float* field_in;
  const float* pattern_z;  // the recalled pattern upsampled along z (UpsamplePatternZ)
  bool pattern_active;     // false: the pattern is all zero and its term is skipped
  float* field_out;
  // This slab's share of the pooled memory channels of F_t+1 (model::coarse_memory_value's plane
  // sums): memory() x (ny/4) x (nz/4) floats, written whole.
  float* memory_plane;
};

// Working memory of one thread for one slab, allocated once.
class SlabScratch {
 public:
  explicit SlabScratch(const FieldShape& shape);

 private:
  friend void EvolveSlab(const SlabJob& job, int x, SlabScratch& s, model::FieldSummary& partial);
  float* plane(int i) { return planes_.data() + size_t(i) * plane_; }
  int plane_;
  std::vector<float> planes_;  // per-voxel terms of one slab, ny * nz floats each
  // One channel's slab with a replicated row above and below, so every voxel's y and z
  // neighbours are plain loads.
  std::vector<float> padded_;
  std::vector<int> z_first_, z_last_;  // per plane voxel: whether z is 0 / nz - 1
  std::vector<float> pattern_x_;  // the recalled pattern at this slab's x: [memory][ny/4][nz]
  std::vector<float> columns_;    // one coarse y cell's memory rows summed: nz floats
  SlabImprint imprint_;
};

void EvolveSlab(const SlabJob& job, int x, SlabScratch& s, model::FieldSummary& partial);

// Floats of one SlabJob::memory_plane.
inline int64_t MemoryPlaneFloats(const FieldShape& s) { return int64_t(s.memory()) * (s.ny / 4) * (s.nz / 4); }
// model::coarse_memory_value for every cell, from the memory planes of the field's nx slabs
// (planes[x] at planes + x * MemoryPlaneFloats): the four planes of each coarse x cell in order.
void PoolFromMemoryPlanes(const float* planes, const FieldShape& shape, float* pooled);

// Floats UpsamplePatternZ writes: memory() x (nx/4) x (ny/4) x nz.
inline int64_t PatternZFloats(const FieldShape& s) { return int64_t(s.memory()) * (s.nx / 4) * (s.ny / 4) * s.nz; }
// The first lerp of model::pattern_sample, once per cycle: every coarse (x, y) column of the
// recalled pattern `coarse` interpolated to every fine z.
void UpsamplePatternZ(const float* coarse, const FieldShape& shape, float* out);

}  // namespace fieldbrain::cpu

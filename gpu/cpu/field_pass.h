// The CPU engine's field pass (DESIGN.md section 4, steps 2-3 and the reduction of step 4), one
// x-slab of one robot at a time: imprint + evolve F_t -> F_t+1, then the slab's share of the
// FieldSummary. Slabs are independent, so the engine spreads (robot, slab) pairs over threads and
// sums the slab partials in slab order: results do not depend on the thread count or the batch.
#pragma once

#include <array>
#include <vector>

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
  friend const float* RowImprint(const SlabJob& job, int x, int y, int ch, const float* eta, SlabScratch& s);
  float* plane(int i) { return planes_.data() + size_t(i) * plane_; }
  int plane_;
  std::vector<float> planes_;  // per-voxel terms of one slab, ny * nz floats each
  std::vector<float> row_;     // core values of one row
  std::vector<float> padded_;  // one channel's slab with replicated borders
  std::vector<float> imprint_; // imprint of one row
  std::vector<float> zeros_;   // ... of a row no sensor reaches
  std::vector<float> s_field_, e_field_;  // S and E along one row
  std::vector<unsigned char> touched_;    // whether any sensor reaches each voxel of the row
  std::array<float, 3 * model::kImprintRadius + 1> decay_;  // imprint_decay by L1 distance
  std::vector<float> pattern_x_;  // the recalled pattern at this slab's x: [memory][ny/4][nz]
  std::vector<float> pattern_row_;  // ... at one row's y
  std::vector<float> memory_columns_;  // F_t+1's memory channels summed over each coarse y cell
  std::vector<int> near_;      // sensors near each column of the slab
  std::vector<int> near_count_;
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

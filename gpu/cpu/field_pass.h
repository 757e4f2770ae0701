// The CPU engine's field pass (DESIGN.md section 4, steps 2-3 and the reduction of step 4), one
// slab of one robot at a time: imprint + evolve F_t -> F_t+1 over a run of x planes, then each
// plane's share of the FieldSummary (PlanePool). Slabs are independent, so the engine spreads
// (robot, slab) pairs over threads and adds the planes' shares in x order (AddPlanePools):
// results depend neither on the thread count, nor on the batch, nor on how many planes a slab
// takes.
#pragma once

#include <vector>

#include "gpu/cpu/cache_aligned.h"
#include "gpu/cpu/slab_imprint.h"
#include "gpu/model/field_math.h"
#include "gpu/model/readout.h"
#include "gpu/model/robot_state.h"

namespace fieldbrain::cpu {

// How many x planes one slab takes: one where a plane is long enough to keep the vector loops
// busy, more on small fields, whose planes are too short for their loops' set-up to pay (a
// divisor of nx, so slabs tile the field).
int SlabPlanes(const FieldShape& shape);

// One x plane's share of a FieldSummary: its sums of A_g over the pool blocks of the one x cell
// it lies in, [group][y cell * kPoolCells + z cell].
struct PlanePool {
  float pool[kContentGroups][kPoolCells * kPoolCells];
};
// The field's FieldSummary from the nx PlanePools of a pass: each block's planes added in x order
// from 0.0f.
void AddPlanePools(const PlanePool* planes, const FieldShape& shape, model::FieldSummary& summary);

struct SlabJob {
  const FieldShape* shape;
  int x;       // the slab's first plane
  int planes;  // SlabPlanes(*shape), 1, or any divisor of nx the scratch holds (all compute the same bits)
  const RobotParams* params;
  const float* sensors;  // s, sensor_count values
  const float* errors;   // e = s - p
  const float* field_in;
  const float* pattern_z;  // the recalled pattern upsampled along z (UpsamplePatternZ)
  bool pattern_active;     // false: the pattern is all zero and its term is skipped
  float* field_out;
  // Each plane's share of the pooled memory channels of F_t+1 (model::coarse_memory_value's plane
  // sums): memory() x (ny/4) x (nz/4) floats per plane, the slab's planes one after another,
  // written whole.
  float* memory_plane;
  // Each plane's share of the summary of F_t+1, one per plane, written whole.
  PlanePool* plane_pools;
  // Write F_t+1 past the caches (streaming_store.h), for a batch whose fields do not fit the
  // last-level cache; the values are the same either way. Lines of field_out that do not start
  // at kStreamAlign are written as usual.
  bool stream_out = false;
};

// Working memory of one thread, allocated once: for slabs of up to SlabPlanes(shape) planes, or
// of up to `planes`.
class SlabScratch {
 public:
  explicit SlabScratch(const FieldShape& shape);
  SlabScratch(const FieldShape& shape, int planes);

 private:
  template <bool kYBorders>
  friend void EvolveSlabOf(const SlabJob& job, SlabScratch& s);
  float* terms(int i) { return terms_.data() + size_t(i) * slab_; }
  int slab_;                  // voxels of a slab: planes * ny * nz
  CacheAlignedVector<float> terms_;  // per-voxel terms of one slab, slab_ floats each
  // One channel's slab, padded so that every voxel's neighbours are loads in bounds: a slab of
  // one plane gets a replicated row above and below (its y and z neighbours plain loads, its x
  // neighbours read from the field; of a long plane only the border rows are copied, the inner
  // ones read from the field), a slab of several the planes on either side, replicated at the
  // field's x borders (its x neighbours plain loads, y and z chosen at the borders).
  CacheAlignedVector<float> padded_;
  // Per slab voxel: whether z is 0 / nz - 1; read only for row lengths the runs do not know at
  // compile time (other than 8, 16 and 32: field_pass.cc, WithRowLength).
  std::vector<int> z_first_, z_last_;
  std::vector<int> y_first_, y_last_;  // per slab voxel of a slab of several planes: whether y is 0 / ny - 1
  CacheAlignedVector<float> pattern_x_;  // one channel's recalled pattern at one plane's x: [ny/4][nz]
  std::vector<model::PatternAxis> y_axes_;  // model::pattern_axis of every y
  CacheAlignedVector<float> columns_;    // one coarse y cell's memory rows summed: nz floats
  SlabImprint imprint_;
};

void EvolveSlab(const SlabJob& job, SlabScratch& s);

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

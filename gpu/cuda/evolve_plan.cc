#include "gpu/cuda/evolve_plan.h"

namespace fieldbrain::cuda {
namespace {

int Align4(int words) { return (words + 3) / 4 * 4; }

}  // namespace

EvolveSmem EvolveSmemLayout(int rows, const FieldShape& shape) {
  const int v = rows * shape.nz;
  EvolveSmem s;
  s.rates = 0;
  s.group_mean = Align4(s.rates + 4 * shape.quarter() * v);
  s.new_group = Align4(s.group_mean + kContentGroups * v);
  s.tile = Align4(s.new_group + kContentGroups * v);
  s.sensors = Align4(s.tile + 2 * (rows + 2) * shape.nz);
  s.errors = Align4(s.sensors + kMaxSensors);
  s.row_reduce = Align4(s.errors + kMaxSensors);
  s.near = Align4(s.row_reduce + kContentGroups * rows * kRowReduceStride);
  s.near_count = Align4(s.near + rows * kMaxNearSensors);
  s.words = Align4(s.near_count + rows);
  return s;
}

std::optional<EvolveTile> PlanEvolveTile(const FieldShape& shape, int max_smem_bytes) {
  if (!shape.valid()) return std::nullopt;
  const int quads = shape.nz / 4;
  const int cell_rows = shape.ny / 4;
  for (int rows = cell_rows; rows >= 1; --rows) {
    // The epilogue writes one content group per thread: a block needs at least kContentGroups.
    if (cell_rows % rows != 0 || rows * quads > kMaxEvolveThreads || rows * quads < kContentGroups) continue;
    EvolveTile t;
    t.rows = rows;
    t.quads = quads;
    t.threads = rows * quads;
    t.tiles_y = shape.ny / rows;
    t.blocks_per_robot = shape.nx * t.tiles_y;
    t.smem = EvolveSmemLayout(rows, shape);
    t.smem_bytes = t.smem.words * 4;
    if (t.smem_bytes <= max_smem_bytes) return t;
  }
  return std::nullopt;
}

}  // namespace fieldbrain::cuda

// How the fused imprint + evolve kernel tiles a field (host-side plan; the kernel gets it as an
// argument). No CUDA calls here, so the plan is unit-tested without a GPU.
//
// One thread block per (batch row, x-slab, y-tile): the tile is `rows` consecutive y rows of one
// x-slab, all of z, and never spans two 4x4x4 pool cells in y (rows divides ny/4), so each block's
// share of the FieldSummary is a handful of numbers. One thread per 4 consecutive z voxels (a
// float4 "quad"): threads = rows * nz/4. Default field 64x32^3: rows = 8, 64 threads, 128 blocks
// per robot, about 30 KiB of shared memory per block.
#pragma once

#include <cstdint>
#include <optional>

#include "gpu/model/field_math.h"
#include "gpu/model/field_shape.h"

namespace fieldbrain::cuda {

// Per block, per content group g, kPartialStride floats: the sums of A_g over the tile's voxels
// in each of the 4 pool cells along z.
inline constexpr int kPartialStride = kPoolCells;
inline constexpr int kPartialFloats = kContentGroups * kPartialStride;
// Sensors whose imprint reaches one (x, y) column, in sensor order: model's cap.
inline constexpr int kMaxNearSensors = model::kMaxNearSensors;
// Per (group, tile row) in the block's row reduction: the row's sums in the 4 pool cells.
inline constexpr int kRowReduceStride = kPoolCells;
inline constexpr int kMaxEvolveThreads = 256;

// Offsets into the block's dynamic shared memory, in 4-byte words; every array starts on a
// 16-byte boundary, so float4 views are aligned.
struct EvolveSmem {
  int rates = 0;       // float [4 kinds: lam, k, eta, coupling][quarter][V], V = rows * nz
  int group_mean = 0;  // float [4][V]: mean of each content group of F_t
  int new_group = 0;   // float [4][V]: sum of each content group of F_t+1
  int tile = 0;        // float [2][rows + 2][nz]: one channel of the slab, with a y halo, double-buffered
  int sensors = 0;     // float [kMaxSensors]
  int errors = 0;      // float [kMaxSensors]
  int row_reduce = 0;  // float [4][rows][kRowReduceStride]
  int near = 0;        // int [rows][kMaxNearSensors]
  int near_count = 0;  // int [rows]
  int words = 0;
};

struct EvolveTile {
  int rows = 0;              // y rows per block
  int quads = 0;             // float4 quads per z row (nz / 4)
  int threads = 0;           // rows * quads
  int tiles_y = 0;           // ny / rows (a multiple of 4)
  int blocks_per_robot = 0;  // nx * tiles_y
  EvolveSmem smem;
  int smem_bytes = 0;
};

EvolveSmem EvolveSmemLayout(int rows, const FieldShape& shape);

// The largest tile (rows dividing ny/4, at most kMaxEvolveThreads threads) whose shared memory
// fits in max_smem_bytes; nullopt when none does (nz too large for one block row).
std::optional<EvolveTile> PlanEvolveTile(const FieldShape& shape, int max_smem_bytes);

}  // namespace fieldbrain::cuda

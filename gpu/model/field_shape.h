// The shape of one brain's field and the channel groups of DESIGN.md section 4.
// F[channel][x][y][z], z fastest. Half the channels are content (4 groups), a quarter memory,
// a quarter dynamics parameters (4 quarters: retention, diffusion, coupling, plasticity).
#pragma once

#include <cstdint>

#include "gpu/model/hd.h"

namespace fieldbrain {

// Limits shared by the wire contract, the engines and the per-robot state layout.
inline constexpr int kMaxSensors = 64;
inline constexpr int kMaxMotors = 16;
inline constexpr int kMaxContentChannels = 32;
inline constexpr int kContentGroups = 4;
inline constexpr int kPoolCells = 4;  // phi pools each group to 4x4x4
inline constexpr int kPoolBlocks = kPoolCells * kPoolCells * kPoolCells;
inline constexpr int kFeatures = kContentGroups * kPoolBlocks;  // P = 256

// The four quarters of the dynamics channels, in channel order (DESIGN.md section 4).
enum class DynamicsQuarter : int { kRetention = 0, kDiffusion = 1, kCoupling = 2, kPlasticity = 3 };
inline constexpr int kDynamicsQuarters = 4;

struct FieldShape {
  int channels = 64;
  int nx = 32, ny = 32, nz = 32;

  FB_HD_CONST int voxels() const { return nx * ny * nz; }
  FB_HD_CONST int64_t floats() const { return int64_t(channels) * voxels(); }
  FB_HD_CONST int content() const { return channels / 2; }
  FB_HD_CONST int memory() const { return channels / 4; }
  FB_HD_CONST int dynamics() const { return channels / 4; }
  FB_HD_CONST int memory_begin() const { return content(); }
  FB_HD_CONST int dynamics_begin() const { return content() + memory(); }
  FB_HD_CONST int group_size() const { return content() / kContentGroups; }
  // Dynamics channels per quarter (4 for C = 64, 2 for C = 32).
  FB_HD_CONST int quarter() const { return dynamics() / 4; }
  // The coarse memory pattern is the field pooled by 4 on each axis.
  FB_HD_CONST int coarse_voxels() const { return (nx / 4) * (ny / 4) * (nz / 4); }
  FB_HD_CONST int64_t index(int c, int x, int y, int z) const {
    return ((int64_t(c) * nx + x) * ny + y) * nz + z;
  }
  // Which dynamics channel of quarter q governs content/memory channel ch.
  FB_HD_CONST int dyn_channel(DynamicsQuarter q, int ch) const {
    return dynamics_begin() + int(q) * quarter() + ch % quarter();
  }
  // The quarter dynamics channel d (counted from dynamics_begin()) belongs to.
  FB_HD_CONST DynamicsQuarter quarter_of(int d) const { return DynamicsQuarter(d / quarter()); }
  // Valid: channels a multiple of 16 up to 64, each side a multiple of 4 and at least 8.
  constexpr bool valid() const {
    return channels >= 16 && channels <= 2 * kMaxContentChannels && channels % 16 == 0 &&
           nx >= 8 && ny >= 8 && nz >= 8 && nx % 4 == 0 && ny % 4 == 0 && nz % 4 == 0;
  }
  constexpr bool operator==(const FieldShape&) const = default;

  static constexpr FieldShape Default() { return {64, 32, 32, 32}; }
  static constexpr FieldShape Small() { return {32, 16, 16, 16}; }
  // The smallest valid field: for load tests, where the engine's share of a round trip must
  // vanish next to the transport's (docs/benchmarks.md), and for the tiniest robots.
  static constexpr FieldShape Tiny() { return {16, 8, 8, 8}; }
};

}  // namespace fieldbrain

// The CPU field pass's slabs (gpu/cpu/field_pass.h): on fields with short planes a slab takes
// several x planes, and it must compute bit for bit what those planes compute one at a time; a
// slab of one long plane reads its inner rows from the field, not from a padded copy, and must
// compute what a slab of two planes (a padded copy of everything) computes; a pass that writes the
// new field past the caches (streaming stores) must write what ordinary stores write. The pass's
// working memory starts on cache lines, whatever its size.
#include "gpu/cpu/field_pass.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "gpu/cpu/cache_aligned.h"
#include "gpu/cpu/streaming_store.h"
#include "gpu/model/field_init.h"
#include "gpu/robot_params.h"

namespace fieldbrain::testing {
namespace {

struct PassOutput {
  std::vector<float> field, memory_planes;
  std::vector<cpu::PlanePool> plane_pools;
};

// One robot's field pass, in slabs of `planes` planes, the new field written into a buffer aligned
// as the engine's pool aligns its fields (so that a streaming pass streams), then copied out.
PassOutput Pass(const FieldShape& shape, int planes, const RobotParams& params, const std::vector<float>& field,
                const std::vector<float>& sensors, const std::vector<float>& errors,
                const std::vector<float>& pattern_z, bool pattern_active, bool stream_out = false) {
  PassOutput o{std::vector<float>(size_t(shape.floats())),
               std::vector<float>(size_t(shape.nx * cpu::MemoryPlaneFloats(shape))),
               std::vector<cpu::PlanePool>(size_t(shape.nx))};
  cpu::CacheAlignedVector<float> out_buffer(size_t(shape.floats()));
  float* out = out_buffer.data();
  EXPECT_TRUE(cpu::StreamAligned(out));
  cpu::SlabScratch scratch(shape, planes);
  for (int x = 0; x < shape.nx; x += planes) {
    const cpu::SlabJob job{&shape,          x,
                           planes,          &params,
                           sensors.data(),  errors.data(),
                           field.data(),    pattern_z.data(),
                           pattern_active,  out,
                           o.memory_planes.data() + x * cpu::MemoryPlaneFloats(shape),
                           &o.plane_pools[size_t(x)], stream_out};
    cpu::EvolveSlab(job, scratch);
  }
  std::copy(out, out + shape.floats(), o.field.begin());
  return o;
}

bool SameBits(const void* a, const void* b, size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

// The pass of `shape` in slabs of `planes_a` and of `planes_b` planes (the second streaming its
// new field where `stream_b`), bit for bit the same, for 12 sensors and for 64 (which crowd the
// small fields past the cap on sensors per column), with and without a recalled pattern.
void ExpectSameBitsInSlabsOf(const FieldShape& shape, int planes_a, int planes_b, bool stream_b = false) {
  for (const int sensor_count : {12, 64}) {
    const absl::StatusOr<RobotParams> params = MakeRobotParams(BrainSpec{7, sensor_count, 4, true}, shape);
    ASSERT_TRUE(params.ok()) << params.status();
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    std::vector<float> field(size_t(shape.floats()));
    for (int64_t i = 0; i < shape.floats(); ++i)  // the start field, stirred so neighbours differ
      field[size_t(i)] = model::initial_field_value(3, shape, i) + 0.3f * uni(rng);
    std::vector<float> sensors(static_cast<size_t>(sensor_count)), errors(static_cast<size_t>(sensor_count));
    for (float& v : sensors) v = uni(rng);
    for (float& v : errors) v = uni(rng);
    std::vector<float> pattern_z(size_t(cpu::PatternZFloats(shape)));
    for (float& v : pattern_z) v = uni(rng);
    for (const bool pattern_active : {false, true}) {
      const PassOutput a = Pass(shape, planes_a, *params, field, sensors, errors, pattern_z, pattern_active);
      const PassOutput b =
          Pass(shape, planes_b, *params, field, sensors, errors, pattern_z, pattern_active, stream_b);
      const std::string what = std::to_string(shape.nx) + "x" + std::to_string(shape.ny) + "x" +
                               std::to_string(shape.nz) + " in slabs of " + std::to_string(planes_a) + " and " +
                               std::to_string(planes_b) + (stream_b ? " streamed" : "") + ", " +
                               std::to_string(sensor_count) + " sensors, " +
                               (pattern_active ? "a pattern recalled" : "no pattern");
      EXPECT_TRUE(SameBits(a.field.data(), b.field.data(), a.field.size() * sizeof(float))) << what;
      EXPECT_TRUE(SameBits(a.memory_planes.data(), b.memory_planes.data(), a.memory_planes.size() * sizeof(float)))
          << what;
      EXPECT_TRUE(SameBits(a.plane_pools.data(), b.plane_pools.data(), a.plane_pools.size() * sizeof(cpu::PlanePool)))
          << what;
      // The new field is not the old one: the pass ran.
      EXPECT_FALSE(SameBits(a.field.data(), field.data(), field.size() * sizeof(float))) << what;
    }
  }
}

TEST(FieldPass, ASlabOfSeveralPlanesComputesWhatItsPlanesComputeOneByOne) {
  // The tiny field (one slab of 8), 12 planes in slabs of 4 with sides of three lengths, and
  // C = 32 (two dynamics channels per quarter) in two slabs of 8.
  for (const FieldShape shape : {FieldShape::Tiny(), FieldShape{16, 12, 8, 12}, FieldShape{32, 16, 8, 8}}) {
    const int planes = cpu::SlabPlanes(shape);
    ASSERT_GT(planes, 1) << shape.nx << "x" << shape.ny << "x" << shape.nz;
    ASSERT_EQ(shape.nx % planes, 0);
    ExpectSameBitsInSlabsOf(shape, 1, planes);
  }
}

TEST(FieldPass, ALongPlaneReadFromTheFieldComputesWhatItsPaddedCopyComputes) {
  // Planes of 512 voxels (the shortest that read their inner rows from the field), of 1024 with
  // rows of 64, and the default field's; each against slabs of two planes, which copy all of it.
  for (const FieldShape shape : {FieldShape{16, 8, 32, 16}, FieldShape{32, 8, 16, 64}, FieldShape::Default()}) {
    ASSERT_EQ(cpu::SlabPlanes(shape), 1) << shape.nx << "x" << shape.ny << "x" << shape.nz;
    ExpectSameBitsInSlabsOf(shape, 1, 2);
  }
}

TEST(FieldPass, WritingTheNewFieldPastTheCachesWritesTheSameBits) {
  // The default field (rows of 32, every chunk a line pair), rows of 16 (each a line), and of 8
  // and 12 (rows that start lines only every so often, the rest written as usual), in slabs of
  // one plane and of several.
  for (const FieldShape shape : {FieldShape::Default(), FieldShape{32, 16, 8, 16}, FieldShape::Tiny(),
                                 FieldShape{16, 12, 8, 12}}) {
    ExpectSameBitsInSlabsOf(shape, 1, 1, /*stream_b=*/true);
    ExpectSameBitsInSlabsOf(shape, 1, cpu::SlabPlanes(shape) > 1 ? cpu::SlabPlanes(shape) : 2, /*stream_b=*/true);
  }
}

TEST(FieldPass, WorkingMemoryStartsOnACacheLineAtEverySize) {
  // Sizes below and above glibc's mmap threshold (128 KiB), odd ones, and a vector that grows
  // (its storage moves); each would start 16 bytes off a line about three times in four under
  // plain new.
  for (const size_t floats : {size_t(1), size_t(3), size_t(17), size_t(1000), size_t(40000), size_t(300001)}) {
    cpu::CacheAlignedVector<float> v(floats);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % cpu::kCacheLineBytes, 0u) << floats << " floats";
    v.resize(2 * floats + 5);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % cpu::kCacheLineBytes, 0u) << floats << " floats, grown";
  }
  cpu::CacheAlignedVector<cpu::PlanePool> pools(33);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pools.data()) % cpu::kCacheLineBytes, 0u);
}

}  // namespace
}  // namespace fieldbrain::testing

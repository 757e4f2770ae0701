#include "gpu/field_pool.h"

#include <set>

#include "gtest/gtest.h"

namespace fieldbrain {
namespace {

TEST(FieldPool, LayoutIsAlignedAndDisjoint) {
  const FieldPool pool(FieldShape::Small(), 3, 2);
  EXPECT_EQ(pool.field_bytes(), FieldShape::Small().floats() * 4);
  int64_t end = 0;
  for (int b = 0; b < 5; ++b) {  // 3 robots + 2 spares
    EXPECT_EQ(pool.field_offset(b) % 256, 0);
    EXPECT_GE(pool.field_offset(b), end);
    end = pool.field_offset(b) + pool.field_bytes();
  }
  EXPECT_GE(pool.pattern_offset(0), end);
  EXPECT_GE(pool.params_offset(0), pool.pattern_offset(2) + pool.pattern_bytes());
  EXPECT_GE(pool.state_offset(0), pool.params_offset(2) + int64_t(sizeof(RobotParams)));
  EXPECT_GE(pool.bytes(), pool.state_offset(2) + int64_t(sizeof(RobotState)));
}

// Guards: every field buffer, pattern and memory-pattern region is followed by at least the
// guard, the gaps cover exactly what no brain uses, and a pool without guards is laid out as before.
TEST(FieldPool, GuardsSeparateEveryBrainsRegionsAndGapsCoverTheRest) {
  const FieldPool plain(FieldShape::Small(), 3, 2);
  const FieldPool guarded(FieldShape::Small(), 3, 2, 200);
  EXPECT_EQ(plain.field_offset(1), plain.field_bytes());
  EXPECT_EQ(plain.pattern_stride(), plain.pattern_bytes());
  EXPECT_EQ(guarded.field_offset(1) - guarded.field_offset(0), guarded.field_bytes() + 256);
  EXPECT_EQ(guarded.pattern_stride(), guarded.pattern_bytes() + 256);
  EXPECT_EQ(guarded.memory_patterns_stride(), guarded.memory_patterns_bytes() + 256);
  const auto gaps = guarded.Gaps();
  int64_t gap_bytes = 0;
  auto in_gap = [&](int64_t offset) {
    for (const auto& [begin, bytes] : gaps)
      if (offset >= begin && offset < begin + bytes) return true;
    return false;
  };
  for (const auto& [begin, bytes] : gaps) {
    EXPECT_GT(bytes, 0);
    gap_bytes += bytes;
  }
  for (int b = 0; b < 5; ++b) {
    EXPECT_FALSE(in_gap(guarded.field_offset(b)));
    EXPECT_FALSE(in_gap(guarded.field_offset(b) + guarded.field_bytes() - 1));
    EXPECT_TRUE(in_gap(guarded.field_offset(b) + guarded.field_bytes())) << "the byte after field buffer " << b;
  }
  for (int s = 0; s < 3; ++s) {
    EXPECT_TRUE(in_gap(guarded.pattern_offset(s) + guarded.pattern_bytes()));
    EXPECT_TRUE(in_gap(guarded.memory_patterns_offset(s) + guarded.memory_patterns_bytes()));
  }
  EXPECT_TRUE(in_gap(guarded.state_offset(0) - 1)) << "the params array is followed by a guard";
  EXPECT_FALSE(in_gap(guarded.memory_offset(2)));
  EXPECT_GE(gap_bytes, 256 * (5 + 3 + 3 + 3));
}

TEST(FieldPool, SlotsAreAcquiredUntilFullAndReleasedOnce) {
  FieldPool pool(FieldShape::Small(), 2, 2);
  EXPECT_EQ(*pool.Acquire(), 0);
  EXPECT_EQ(*pool.Acquire(), 1);
  const absl::StatusOr<int> full = pool.Acquire();
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(pool.Release(0));
  EXPECT_FALSE(pool.Release(0)) << "a second release of one slot must change nothing";
  EXPECT_FALSE(pool.Release(7));
  EXPECT_EQ(pool.active(), 1);
  EXPECT_EQ(*pool.Acquire(), 0);
  EXPECT_EQ(pool.active(), 2);
}

TEST(FieldPool, BatchesAreValidatedAndSwapBuffers) {
  FieldPool pool(FieldShape::Small(), 4, 2);
  ASSERT_EQ(*pool.Acquire(), 0);
  ASSERT_EQ(*pool.Acquire(), 1);
  BatchInputRow rows[3];
  rows[0].slot = 1;
  rows[1].slot = 0;
  EXPECT_TRUE(pool.ValidateBatch({rows, 2}).ok());
  EXPECT_FALSE(pool.ValidateBatch({rows, 0}).ok());
  EXPECT_FALSE(pool.ValidateBatch({rows, 3}).ok()) << "more rows than max_batch";
  rows[1].slot = 1;
  EXPECT_FALSE(pool.ValidateBatch({rows, 2}).ok()) << "one slot twice";
  rows[1].slot = 3;
  EXPECT_FALSE(pool.ValidateBatch({rows, 2}).ok()) << "a free slot";

  rows[1].slot = 0;
  const int before1 = pool.current_buffer(1), spare0 = pool.spare_buffer(0);
  pool.CommitBatch({rows, 2});
  EXPECT_EQ(pool.current_buffer(1), spare0);
  EXPECT_EQ(pool.spare_buffer(0), before1);
  std::set<int> buffers = {pool.current_buffer(0), pool.current_buffer(1), pool.spare_buffer(0), pool.spare_buffer(1)};
  EXPECT_EQ(buffers.size(), 4u) << "no two live fields may share a buffer";
}

}  // namespace
}  // namespace fieldbrain

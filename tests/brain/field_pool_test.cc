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

// The start state of a field (DESIGN.md section 4): content and memory N(0, 0.05^2), retention
// channels 2, the other dynamics channels 0. A pure function of (seed, index), so an engine can
// fill its pool in place, in any order, and every engine starts from the same field.
#pragma once

#include <cstdint>

#include "gpu/model/field_math.h"
#include "gpu/model/field_shape.h"
#include "gpu/model/philox.h"

namespace fieldbrain::model {

FB_HD float initial_field_value(uint64_t seed, const FieldShape& s, int64_t i) {
  const int c = int(i / s.voxels());
  if (c >= s.dynamics_begin()) return dynamics_rest(s.quarter_of(c - s.dynamics_begin()));
  return kInitialSpread * normal_draw(seed, Domain::kField, uint64_t(i), 0);
}

}  // namespace fieldbrain::model

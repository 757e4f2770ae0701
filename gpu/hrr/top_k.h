// A running top-k of (cosine, slot) pairs, best first: higher cosine first, lower slot first on a
// tie, so the result does not depend on the order items are seen in (threads, blocks). For both
// backends' cleanup.
#pragma once

#include <cstdint>

#include "gpu/model/hd.h"

namespace fieldbrain::hrr {

// Whether (c1, s1) ranks before (c2, s2).
FB_HD bool ranks_before(float c1, int32_t s1, float c2, int32_t s2) { return c1 > c2 || (c1 == c2 && s1 < s2); }

// Inserts (c, s) into the k-entry list (cos, slot), kept sorted; empty entries have slot -1 and
// rank last. Entries beyond k fall off.
FB_HD void top_k_insert(float* cos, int32_t* slot, int k, float c, int32_t s) {
  if (slot[k - 1] >= 0 && !ranks_before(c, s, cos[k - 1], slot[k - 1])) return;
  int i = k - 1;
  while (i > 0 && (slot[i - 1] < 0 || ranks_before(c, s, cos[i - 1], slot[i - 1]))) {
    cos[i] = cos[i - 1];
    slot[i] = slot[i - 1];
    --i;
  }
  cos[i] = c;
  slot[i] = s;
}

FB_HD void top_k_clear(float* cos, int32_t* slot, int k) {
  for (int i = 0; i < k; ++i) {
    cos[i] = 0.0f;
    slot[i] = -1;
  }
}

}  // namespace fieldbrain::hrr

#include "gpu/cpu/slab_imprint.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "gpu/model/field_math.h"

namespace fieldbrain::cpu {
namespace {

constexpr int kWindow = 2 * model::kImprintRadius + 1;

// One sensor's shares added along its run (a small function with __restrict parameters, so GCC
// vectorises it).
void AddShares(const float* __restrict weight, float mix, float sensor, float error, float* __restrict s_field,
               float* __restrict e_field, int n) {
  for (int k = 0; k < n; ++k) {
    s_field[k] += model::imprint_share(mix, sensor, weight[k]);
    e_field[k] += model::imprint_share(mix, error, weight[k]);
  }
}

}  // namespace

SlabImprint::SlabImprint(const FieldShape& shape, int max_planes)
    : Y_(shape.ny),
      Z_(shape.nz),
      weights_(size_t(kMaxSensors) * max_planes * kWindow * shape.nz),
      taken_(size_t(max_planes) * shape.ny),
      s_field_(size_t(max_planes) * shape.ny * shape.nz),
      e_field_(size_t(max_planes) * shape.ny * shape.nz) {
  runs_.reserve(size_t(kMaxSensors) * max_planes);
  for (int l1 = 0; l1 < int(decay_.size()); ++l1) decay_[l1] = model::imprint_decay(l1);
}

bool SlabImprint::PreparedFor(const RobotParams& p, int x0, int planes) const {
  return prepared_.planes == planes && prepared_.x0 == x0 && prepared_.sensor_count == p.sensor_count &&
         std::memcmp(prepared_.site, p.site, sizeof(p.site[0]) * size_t(p.sensor_count)) == 0;
}

void SlabImprint::Prepare(const RobotParams& p, int x0, int planes) {
  using model::kImprintRadius;
  if (PreparedFor(p, x0, planes)) return;
  prepared_.x0 = x0;
  prepared_.planes = planes;
  prepared_.sensor_count = p.sensor_count;
  std::memcpy(prepared_.site, p.site, sizeof(p.site[0]) * size_t(p.sensor_count));
  runs_.clear();
  std::fill(taken_.begin(), taken_.begin() + planes * Y_, 0);
  begin_ = planes * Y_ * Z_;
  end_ = 0;
  for (int t = 0; t < planes; ++t)
    for (int i = 0; i < p.sensor_count; ++i) {
      const int dx = std::abs(p.site[i][0] - (x0 + t));
      if (dx > kImprintRadius) continue;
      const int sy = p.site[i][1], sz = p.site[i][2];
      const int y0 = std::max(sy - kImprintRadius, 0), y1 = std::min(sy + kImprintRadius, Y_ - 1);
      const int z0 = std::max(sz - kImprintRadius, 0), z1 = std::min(sz + kImprintRadius, Z_ - 1);
      if (y0 > y1 || z0 > z1) continue;
      float* weight = weights_.data() + size_t(runs_.size()) * kWindow * Z_;
      int* taken = taken_.data() + t * Y_;
      std::fill(weight, weight + (y1 - y0 + 1) * Z_, 0.0f);
      bool reaches = false;
      for (int y = y0; y <= y1; ++y) {
        float* row = weight + (y - y0) * Z_;
        if (taken[y] == model::kMaxNearSensors) continue;  // past the cap: this column ignores it
        ++taken[y];
        reaches = true;
        const int plane_l1 = dx + std::abs(sy - y);
        for (int z = z0; z <= z1; ++z) row[z] = decay_[plane_l1 + std::abs(sz - z)];
      }
      if (!reaches) continue;
      const int first = (t * Y_ + y0) * Z_;
      runs_.push_back(Run{i, first, (y1 - y0 + 1) * Z_, weight});
      begin_ = std::min(begin_, first);
      end_ = std::max(end_, (t * Y_ + y1 + 1) * Z_);
    }
}

void SlabImprint::Fill(const RobotParams& p, const float* sensors, const float* errors, int ch) {
  std::fill(s_field_.begin() + begin_, s_field_.begin() + end_, 0.0f);
  std::fill(e_field_.begin() + begin_, e_field_.begin() + end_, 0.0f);
  for (const Run& run : runs_)
    AddShares(run.weight, p.mix[run.sensor][ch], sensors[run.sensor], errors[run.sensor],
              s_field_.data() + run.first, e_field_.data() + run.first, run.length);
}

}  // namespace fieldbrain::cpu

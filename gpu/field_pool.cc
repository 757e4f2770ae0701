#include "gpu/field_pool.h"

#include "absl/strings/str_cat.h"

namespace fieldbrain {
namespace {

constexpr int64_t kAlign = 256;
int64_t AlignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

}  // namespace

FieldPool::FieldPool(const FieldShape& shape, int capacity, int max_batch, int64_t guard_bytes)
    : shape_(shape),
      capacity_(capacity),
      max_batch_(max_batch),
      guard_(AlignUp(guard_bytes)),
      field_bytes_(AlignUp(shape.floats() * int64_t(sizeof(float)))),
      pattern_bytes_(AlignUp(int64_t(shape.memory()) * shape.coarse_voxels() * int64_t(sizeof(float)))),
      memory_patterns_bytes_(
          AlignUp(kMemoryEntries * int64_t(shape.memory()) * shape.coarse_voxels() * int64_t(sizeof(float)))),
      live_(capacity, 0),
      buffer_of_(capacity),
      spare_(max_batch),
      seen_in_batch_(capacity, 0) {
  fields_at_ = 0;
  patterns_at_ = AlignUp(fields_at_ + int64_t(capacity + max_batch) * (field_bytes_ + guard_));
  params_at_ = AlignUp(patterns_at_ + int64_t(capacity) * pattern_stride());
  states_at_ = AlignUp(params_at_ + int64_t(capacity) * int64_t(sizeof(RobotParams))) + guard_;
  memories_at_ = AlignUp(states_at_ + int64_t(capacity) * int64_t(sizeof(RobotState))) + guard_;
  memory_patterns_at_ = AlignUp(memories_at_ + int64_t(capacity) * int64_t(sizeof(MemoryBank))) + guard_;
  bytes_ = AlignUp(memory_patterns_at_ + int64_t(capacity) * memory_patterns_stride());
  for (int s = 0; s < capacity; ++s) buffer_of_[s] = s;
  for (int r = 0; r < max_batch; ++r) spare_[r] = capacity + r;
}

std::vector<std::pair<int64_t, int64_t>> FieldPool::Gaps() const {
  std::vector<std::pair<int64_t, int64_t>> used;  // (begin, end), in address order
  for (int b = 0; b < capacity_ + max_batch_; ++b) used.emplace_back(field_offset(b), field_offset(b) + field_bytes_);
  for (int s = 0; s < capacity_; ++s) used.emplace_back(pattern_offset(s), pattern_offset(s) + pattern_bytes_);
  used.emplace_back(params_at_, params_at_ + capacity_ * int64_t(sizeof(RobotParams)));
  used.emplace_back(states_at_, states_at_ + capacity_ * int64_t(sizeof(RobotState)));
  used.emplace_back(memories_at_, memories_at_ + capacity_ * int64_t(sizeof(MemoryBank)));
  for (int s = 0; s < capacity_; ++s)
    used.emplace_back(memory_patterns_offset(s), memory_patterns_offset(s) + memory_patterns_bytes_);
  std::vector<std::pair<int64_t, int64_t>> gaps;
  int64_t at = 0;
  for (const auto& [begin, end] : used) {
    if (begin > at) gaps.emplace_back(at, begin - at);
    at = end;
  }
  if (bytes_ > at) gaps.emplace_back(at, bytes_ - at);
  return gaps;
}

absl::StatusOr<int> FieldPool::Acquire() {
  for (int s = 0; s < capacity_; ++s) {
    if (!live_[s]) {
      live_[s] = 1;
      ++active_;
      return s;
    }
  }
  return absl::ResourceExhaustedError(absl::StrCat("all ", capacity_, " brain slots are in use"));
}

bool FieldPool::Release(int slot) {
  if (!live(slot)) return false;
  live_[slot] = 0;
  --active_;
  return true;
}

absl::Status FieldPool::ValidateBatch(std::span<const BatchInputRow> rows) {
  if (rows.empty() || int(rows.size()) > max_batch_)
    return absl::InvalidArgumentError(
        absl::StrCat("batch of ", rows.size(), " rows; this pool takes 1 to ", max_batch_));
  ++batch_stamp_;
  for (const BatchInputRow& row : rows) {
    if (!live(row.slot)) return absl::InvalidArgumentError(absl::StrCat("slot ", row.slot, " is not live"));
    if (seen_in_batch_[row.slot] == batch_stamp_)
      return absl::InvalidArgumentError(absl::StrCat("slot ", row.slot, " appears twice in one batch"));
    seen_in_batch_[row.slot] = batch_stamp_;
  }
  return absl::OkStatus();
}

void FieldPool::CommitBatch(std::span<const BatchInputRow> rows) {
  for (size_t r = 0; r < rows.size(); ++r) std::swap(buffer_of_[rows[r].slot], spare_[r]);
}

}  // namespace fieldbrain

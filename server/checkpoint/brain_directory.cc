#include "server/checkpoint/brain_directory.h"

#include <algorithm>


namespace fieldbrain::server {

BrainPlace NextPlace(BrainPlace place, BrainEvent event, bool copy_on_its_way) {
  switch (event) {
    case BrainEvent::kBound:
      return BrainPlace::kInSlot;
    case BrainEvent::kReleased:
      switch (place) {
        case BrainPlace::kInSlot: return copy_on_its_way ? BrainPlace::kSaving : BrainPlace::kOnDisk;
        case BrainPlace::kSaving:
        case BrainPlace::kOnDisk:
        case BrainPlace::kDiscarded: return place;  // a slot freed after its robot gave way or was discarded
      }
      break;
    case BrainEvent::kSettled:
      switch (place) {
        case BrainPlace::kSaving: return BrainPlace::kOnDisk;
        case BrainPlace::kInSlot:  // a periodic copy written: the brain is still in its slot
        case BrainPlace::kOnDisk:
        case BrainPlace::kDiscarded: return place;
      }
      break;
    case BrainEvent::kGaveWay:
      switch (place) {
        case BrainPlace::kInSlot:
        case BrainPlace::kSaving: return BrainPlace::kOnDisk;
        case BrainPlace::kOnDisk:
        case BrainPlace::kDiscarded: return place;
      }
      break;
    case BrainEvent::kDiscarded:
      return BrainPlace::kDiscarded;
  }
  return place;  // not reached: every place and event is named above
}

const char* BrainPlaceName(BrainPlace place) {
  switch (place) {
    case BrainPlace::kInSlot: return "in a slot";
    case BrainPlace::kSaving: return "being saved";
    case BrainPlace::kOnDisk: return "on disk";
    case BrainPlace::kDiscarded: return "discarded";
  }
  return "unknown";
}

BrainDirectory::BrainDirectory(int slots) : slots_(size_t(std::max(slots, 0))) {}

BrainDirectory::Robot& BrainDirectory::Apply(const std::string& robot_id, BrainEvent event, bool copy_on_its_way) {
  Robot& r = robots_[robot_id];
  r.place = NextPlace(r.place, event, copy_on_its_way);
  return r;
}

void BrainDirectory::UnbindAll(const std::string& robot_id) {
  for (std::optional<std::string>& s : slots_)
    if (s.has_value() && *s == robot_id) s.reset();
}

void BrainDirectory::Bind(int slot, const std::string& robot_id, const std::array<uint8_t, 32>& token_sha256,
                          uint64_t generation) {
  if (slot < 0 || size_t(slot) >= slots_.size()) return;
  slots_[size_t(slot)] = robot_id;
  Robot& r = Apply(robot_id, BrainEvent::kBound);
  r.generation = std::max(r.generation, generation);
  r.token_sha256 = token_sha256;
  r.written_cycle.reset();
}

void BrainDirectory::Released(int slot, bool copy_on_its_way) {
  if (slot < 0 || size_t(slot) >= slots_.size() || !slots_[size_t(slot)].has_value()) return;
  const std::string robot_id = *std::move(slots_[size_t(slot)]);
  slots_[size_t(slot)].reset();
  // Another slot may still hold the robot (a brain made while its old one was released).
  for (const std::optional<std::string>& s : slots_)
    if (s.has_value() && *s == robot_id) return;
  Apply(robot_id, BrainEvent::kReleased, copy_on_its_way);
}

void BrainDirectory::Settled(const std::string& robot_id) {
  if (robots_.contains(robot_id)) Apply(robot_id, BrainEvent::kSettled);
}

void BrainDirectory::GaveWay(const std::string& robot_id) {
  UnbindAll(robot_id);
  Apply(robot_id, BrainEvent::kGaveWay);
}

void BrainDirectory::Discard(const std::string& robot_id, uint64_t on_disk_generation) {
  UnbindAll(robot_id);
  Robot& r = Apply(robot_id, BrainEvent::kDiscarded);
  r.generation = std::max(r.generation, on_disk_generation) + 1;
  r.written_cycle.reset();
}

uint64_t BrainDirectory::NewGeneration(const std::string& robot_id, uint64_t on_disk_generation) {
  Robot& r = robots_[robot_id];
  r.generation = std::max(r.generation, on_disk_generation) + 1;
  return r.generation;
}

void BrainDirectory::Written(const std::string& robot_id, uint64_t cycle) {
  if (auto it = robots_.find(robot_id); it != robots_.end()) it->second.written_cycle = cycle;
}

const std::string* BrainDirectory::RobotIn(int slot) const {
  if (slot < 0 || size_t(slot) >= slots_.size() || !slots_[size_t(slot)].has_value()) return nullptr;
  return &*slots_[size_t(slot)];
}

const BrainDirectory::Robot* BrainDirectory::Find(const std::string& robot_id) const {
  auto it = robots_.find(robot_id);
  return it == robots_.end() ? nullptr : &it->second;
}

bool BrainDirectory::Unsettled(const std::string& robot_id) const {
  const Robot* r = Find(robot_id);
  if (r == nullptr) return false;
  switch (r->place) {
    case BrainPlace::kInSlot:
    case BrainPlace::kSaving: return true;
    case BrainPlace::kOnDisk:
    case BrainPlace::kDiscarded: return false;
  }
  return false;
}

}  // namespace fieldbrain::server

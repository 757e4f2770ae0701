#include "server/checkpoint/checkpoint_format.h"

#include <openssl/crypto.h>

#include <bit>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "server/checkpoint/checkpoint_fields.h"

namespace fieldbrain::server {
namespace {

// The layout constants the arrays are sized by: a file written with others is refused.
constexpr uint32_t kLayout[] = {uint32_t(kMaxSensors),   uint32_t(kMaxMotors),     uint32_t(kReadoutFeatures),
                                uint32_t(kKeyBins),      uint32_t(kMemoryEntries), uint32_t(kRecallTop),
                                uint32_t(kMaxContentChannels)};

// Appends values little-endian.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void operator()(uint64_t v) { Bytes(v, 8); }
  void operator()(uint32_t v) { Bytes(v, 4); }
  void operator()(int32_t v) { Bytes(uint32_t(v), 4); }
  void operator()(float v) { Bytes(std::bit_cast<uint32_t>(v), 4); }
  template <class T, size_t N>
  void operator()(const T (&a)[N]) {
    for (const T& x : a) (*this)(x);
  }
  void Raw(const void* data, size_t n) { out_.append(static_cast<const char*>(data), n); }

 private:
  void Bytes(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(char(uint8_t(v >> (8 * i))));
  }
  std::string& out_;
};

// Reads values little-endian; once past the end it stays failed and reads zeros.
class Reader {
 public:
  explicit Reader(absl::string_view in) : in_(in) {}
  void operator()(uint64_t& v) { v = Bytes(8); }
  void operator()(uint32_t& v) { v = uint32_t(Bytes(4)); }
  void operator()(int32_t& v) { v = int32_t(uint32_t(Bytes(4))); }
  void operator()(float& v) { v = std::bit_cast<float>(uint32_t(Bytes(4))); }
  template <class T, size_t N>
  void operator()(T (&a)[N]) {
    for (T& x : a) (*this)(x);
  }
  bool Raw(void* data, size_t n) {
    if (!Take(n)) return false;
    std::memcpy(data, in_.data() + at_ - n, n);
    return true;
  }
  bool ok() const { return ok_; }
  size_t at() const { return at_; }

 private:
  bool Take(size_t n) {
    if (!ok_ || in_.size() - at_ < n) {
      ok_ = false;
      return false;
    }
    at_ += n;
    return true;
  }
  uint64_t Bytes(int n) {
    if (!Take(size_t(n))) return 0;
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(uint8_t(in_[at_ - n + i])) << (8 * i);
    return v;
  }
  absl::string_view in_;
  size_t at_ = 0;
  bool ok_ = true;
};

void Floats(Writer& w, const std::vector<float>& v) {
  w(uint64_t(v.size()));
  for (float x : v) w(x);
}

bool Floats(Reader& r, std::vector<float>& v, uint64_t expected) {
  uint64_t n = 0;
  r(n);
  if (!r.ok() || n != expected) return false;
  v.resize(n);
  for (float& x : v) r(x);
  return r.ok();
}

std::string ShapeText(const FieldShape& s) { return absl::StrCat(s.channels, "x", s.nx, "x", s.ny, "x", s.nz); }

}  // namespace

std::string EncodeCheckpoint(const CheckpointHeader& header, const BrainSnapshot& snapshot) {
  std::string payload;
  Writer p(payload);
  checkpoint_fields::Params(p, snapshot.params);
  checkpoint_fields::State(p, snapshot.state);
  Floats(p, snapshot.field);
  Floats(p, snapshot.pattern);
  checkpoint_fields::Memory(p, snapshot.memory);
  Floats(p, snapshot.memory_patterns);
  checkpoint_fields::DriverUndo(p, snapshot.state);

  std::string out;
  Writer h(out);
  h.Raw(kCheckpointMagic, sizeof(kCheckpointMagic));
  h(kCheckpointVersion);
  for (uint32_t c : kLayout) h(c);
  h(uint32_t(header.shape.channels));
  h(uint32_t(header.shape.nx));
  h(uint32_t(header.shape.ny));
  h(uint32_t(header.shape.nz));
  h(header.sensor_count);
  h(header.motor_count);
  h(header.seed);
  h(header.cycle);
  h(uint32_t(header.robot_id.size()));
  h.Raw(header.robot_id.data(), header.robot_id.size());
  h.Raw(header.resume_token_sha256.data(), header.resume_token_sha256.size());
  h(header.generation);
  h(uint64_t(payload.size()));
  const std::array<uint8_t, 32> digest = Sha256(out, payload);
  h.Raw(digest.data(), digest.size());
  out += payload;
  return out;
}

absl::StatusOr<DecodedCheckpoint> DecodeCheckpoint(absl::string_view bytes, const FieldShape& expected_shape) {
  Reader r(bytes);
  char magic[sizeof(kCheckpointMagic)] = {};
  if (!r.Raw(magic, sizeof(magic)) || std::memcmp(magic, kCheckpointMagic, sizeof(magic)) != 0) {
    return absl::DataLossError("not a fieldbrain checkpoint (no FBCHKPT magic)");
  }
  uint32_t version = 0;
  r(version);
  if (!r.ok()) return absl::DataLossError("truncated in the header");
  if (version < kOldestCheckpointVersion) {
    const absl::string_view why = version < 3 ? "predates the brain's driver"
                                              : "holds the field readout's retired actor and critic";
    return absl::FailedPreconditionError(absl::StrCat("format version ", version, " ", why, "; this daemon reads versions ",
                                                      kOldestCheckpointVersion, " to ", kCheckpointVersion,
                                                      ": the robot starts a new brain"));
  }
  if (version > kCheckpointVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("format version ", version, "; this daemon reads versions ", kOldestCheckpointVersion, " to ",
                     kCheckpointVersion));
  }
  for (uint32_t expected : kLayout) {
    uint32_t got = 0;
    r(got);
    if (r.ok() && got != expected) {
      return absl::FailedPreconditionError("written by a build with other layout constants (kMaxSensors, ...)");
    }
  }
  DecodedCheckpoint d;
  CheckpointHeader& hd = d.header;
  uint32_t c = 0, x = 0, y = 0, z = 0, id_bytes = 0;
  r(c);
  r(x);
  r(y);
  r(z);
  r(hd.sensor_count);
  r(hd.motor_count);
  r(hd.seed);
  r(hd.cycle);
  r(id_bytes);
  if (!r.ok()) return absl::DataLossError("truncated in the header");
  if (id_bytes > kMaxCheckpointRobotIdBytes) return absl::DataLossError("robot id longer than 128 bytes");
  hd.robot_id.resize(id_bytes);
  r.Raw(hd.robot_id.data(), id_bytes);
  r.Raw(hd.resume_token_sha256.data(), hd.resume_token_sha256.size());
  r(hd.generation);
  uint64_t payload_bytes = 0;
  r(payload_bytes);
  const size_t hashed = r.at();
  std::array<uint8_t, 32> digest{};
  r.Raw(digest.data(), digest.size());
  if (!r.ok()) return absl::DataLossError("truncated in the header");
  if (payload_bytes != bytes.size() - r.at()) {
    return absl::DataLossError(absl::StrCat("payload of ", bytes.size() - r.at(), " bytes where the header says ",
                                            payload_bytes, " (truncated or padded)"));
  }
  const absl::string_view payload = bytes.substr(r.at());
  const std::array<uint8_t, 32> actual = Sha256(bytes.substr(0, hashed), payload);
  if (CRYPTO_memcmp(actual.data(), digest.data(), digest.size()) != 0) {
    return absl::DataLossError("SHA-256 mismatch: the file is corrupt");
  }
  hd.shape = FieldShape{int(c), int(x), int(y), int(z)};
  if (!(hd.shape == expected_shape)) {
    return absl::FailedPreconditionError(absl::StrCat("field shape ", ShapeText(hd.shape), "; this daemon runs ",
                                                      ShapeText(expected_shape)));
  }
  if (hd.sensor_count < 1 || hd.sensor_count > kMaxSensors || hd.motor_count < 1 || hd.motor_count > kMaxMotors) {
    return absl::DataLossError("sensor or motor count out of range");
  }

  Reader p(payload);
  BrainSnapshot& s = d.snapshot;
  s.shape = hd.shape;
  checkpoint_fields::Params(p, s.params);
  checkpoint_fields::State(p, s.state);
  const uint64_t pattern_floats = uint64_t(hd.shape.memory()) * uint64_t(hd.shape.coarse_voxels());
  if (!Floats(p, s.field, uint64_t(hd.shape.floats())) || !Floats(p, s.pattern, pattern_floats)) {
    return absl::DataLossError("field or pattern of the wrong size");
  }
  checkpoint_fields::Memory(p, s.memory);
  if (!Floats(p, s.memory_patterns, pattern_floats * kMemoryEntries)) {
    return absl::DataLossError("memory patterns of the wrong size");
  }
  if (version >= 5) {
    checkpoint_fields::DriverUndo(p, s.state);
    const RobotState& st = s.state;
    if (p.ok() && (st.undo_left < 0 || st.undo_left >= model::kUndoCycles || (st.undo_held != 0 && st.undo_held != 1) ||
                   st.undo_since < 0 || st.undo_since > model::kUndoSinceCap || (st.undo_left > 0 && !st.undo_held))) {
      return absl::DataLossError("the driver's undo state is out of range");
    }
  }
  if (!p.ok() || p.at() != payload.size()) return absl::DataLossError("payload does not match its fields");
  if (s.params.sensor_count != hd.sensor_count || s.params.motor_count != hd.motor_count ||
      s.params.seed != hd.seed || s.state.cycle != hd.cycle) {
    return absl::DataLossError("header and payload disagree");
  }
  return d;
}

std::optional<CheckpointHead> PeekCheckpointHead(absl::string_view prefix) {
  auto uint_at = [&](size_t at, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | uint8_t(prefix[at + size_t(i)]);
    return v;
  };
  if (prefix.size() < kCheckpointCycleEnd + 4 ||
      std::memcmp(prefix.data(), kCheckpointMagic, sizeof(kCheckpointMagic)) != 0) {
    return std::nullopt;
  }
  const uint64_t version = uint_at(8, 4);
  if (version < kOldestCheckpointVersion || version > kCheckpointVersion) return std::nullopt;
  CheckpointHead head;
  head.cycle = uint_at(kCheckpointCycleEnd - 8, 8);
  const uint64_t id_bytes = uint_at(kCheckpointCycleEnd, 4);
  const size_t token_at = kCheckpointCycleEnd + 4 + size_t(id_bytes);
  const size_t head_end = token_at + 32 + 8;
  if (id_bytes > kMaxCheckpointRobotIdBytes || prefix.size() < head_end) return std::nullopt;
  head.robot_id = std::string(prefix.substr(kCheckpointCycleEnd + 4, size_t(id_bytes)));
  std::memcpy(head.resume_token_sha256.data(), prefix.data() + token_at, 32);
  head.generation = uint_at(token_at + 32, 8);
  return head;
}

}  // namespace fieldbrain::server

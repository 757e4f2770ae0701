#include "server/checkpoint/checkpoint_reader.h"

#include <openssl/crypto.h>

#include <cstdio>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "server/checkpoint/checkpoint_files.h"
#include "server/log.h"

namespace fieldbrain::server {

CheckpointReader::CheckpointReader(std::string dir, telemetry::Metrics* metrics)
    : dir_(std::move(dir)), metrics_(metrics) {}

void CheckpointReader::set_shape(FieldShape shape) {
  absl::MutexLock lock(&mu_);
  shape_ = shape;
}

std::optional<CheckpointHead> CheckpointReader::HeadOnDisk(const std::string& robot_id) const {
  std::ifstream in(CheckpointPath(dir_, robot_id), std::ios::binary);
  std::string prefix(kCheckpointHeadMax, '\0');
  in.read(prefix.data(), std::streamsize(prefix.size()));
  prefix.resize(size_t(in.gcount()));
  std::optional<CheckpointHead> head = PeekCheckpointHead(prefix);
  if (!head.has_value() || head->robot_id != robot_id) return std::nullopt;
  return head;
}

std::optional<uint64_t> CheckpointReader::CycleOnDisk(const std::string& robot_id) const {
  std::optional<CheckpointHead> head = HeadOnDisk(robot_id);
  if (!head.has_value()) return std::nullopt;
  return head->cycle;
}

absl::StatusOr<DecodedCheckpoint> CheckpointReader::Load(const std::string& robot_id) {
  {
    absl::MutexLock lock(&mu_);
    ++held_reads_;
    auto go = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !hold_reads_; };
    mu_.Await(absl::Condition(&go));
    --held_reads_;
  }
  const std::string path = CheckpointPath(dir_, robot_id);
  absl::StatusOr<std::string> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  FieldShape shape;
  {
    absl::MutexLock lock(&mu_);
    shape = shape_;
  }
  absl::StatusOr<DecodedCheckpoint> decoded = DecodeCheckpoint(*bytes, shape);
  if (decoded.ok() && decoded->header.robot_id != robot_id) {
    decoded = absl::DataLossError("the file holds another robot's brain");
  }
  if (!decoded.ok() && absl::IsFailedPrecondition(decoded.status())) {
    // A whole brain this daemon cannot run (another field shape, format version or build): a
    // daemon configured for it can. The file stays; the Hello is refused, saying why.
    if (metrics_ != nullptr) metrics_->RecordCheckpointFailure(telemetry::CheckpointFailure::kForeign);
    LogWarning("checkpoint of robot_id \"", robot_id, "\" (", path, ") is not for this daemon: ",
               decoded.status().message(), "; its Hello is refused and the file kept");
    return absl::FailedPreconditionError(absl::StrCat(
        "the checkpointed brain of robot_id \"", robot_id, "\" cannot run on this daemon: ", decoded.status().message(),
        "; connect to a daemon configured for it, or send fresh=true to discard it and start a new brain"));
  }
  if (!decoded.ok()) {
    if (metrics_ != nullptr) metrics_->RecordCheckpointFailure(telemetry::CheckpointFailure::kCorrupt);
    if (std::rename(path.c_str(), (path + ".refused").c_str()) == 0 && metrics_ != nullptr) {
      metrics_->AddCheckpointRefusedFile();
    }
    LogWarning("checkpoint of robot_id \"", robot_id, "\" refused (", path, ".refused): ", decoded.status().message(),
               "; the robot gets a new brain");
    return absl::DataLossError(absl::StrCat("its checkpoint was refused: ", decoded.status().message()));
  }
  return decoded;
}

std::array<uint8_t, 32> CheckpointReader::TokenHash(const std::string& token) { return Sha256(token); }

bool CheckpointReader::TokenMatches(const CheckpointHeader& header, const std::string& token) {
  if (token.empty()) return false;
  const std::array<uint8_t, 32> digest = TokenHash(token);
  return CRYPTO_memcmp(digest.data(), header.resume_token_sha256.data(), digest.size()) == 0;
}

absl::StatusOr<std::optional<RestorableBrain>> CheckpointReader::ForHello(const brain::v1::Hello& hello) {
  if (hello.fresh()) return std::nullopt;
  const std::string& robot_id = hello.profile().robot_id();
  absl::StatusOr<DecodedCheckpoint> saved = Load(robot_id);
  if (absl::IsFailedPrecondition(saved.status())) return saved.status();  // kept for another daemon
  if (!saved.ok()) return std::nullopt;  // none, or damaged (logged, counted, set aside)
  const CheckpointHeader& h = saved->header;
  if (!TokenMatches(h, hello.resume_token())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "robot_id \"", robot_id, "\" has a checkpointed brain (cycle ", h.cycle,
        "); send the resume_token of its last Welcome to resume it, or fresh=true to discard it and start a "
        "new brain"));
  }
  if (uint32_t(h.sensor_count) != hello.profile().sensor_count() ||
      uint32_t(h.motor_count) != hello.profile().motor_count()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the checkpointed brain of robot_id \"", robot_id, "\" has ", h.sensor_count, " sensors and ",
        h.motor_count, " motors, this Hello's profile ", hello.profile().sensor_count(), " and ",
        hello.profile().motor_count(), "; send fresh=true to discard it and start a new brain"));
  }
  LogInfo("robot_id \"", robot_id, "\" resumes from its checkpoint at cycle ", h.cycle);
  return RestorableBrain{h.seed, h.generation, std::make_shared<const BrainSnapshot>(std::move(saved->snapshot))};
}

void CheckpointReader::HoldReadsForTesting(bool hold) {
  absl::MutexLock lock(&mu_);
  hold_reads_ = hold;
}

int CheckpointReader::ReadsHeldForTesting() const {
  absl::MutexLock lock(&mu_);
  return held_reads_;
}

}  // namespace fieldbrain::server

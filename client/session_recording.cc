#include "client/session_recording.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>

#include "absl/strings/str_cat.h"

namespace fieldbrain::client {

using brain::v1::RecordEntry;

absl::StatusOr<std::unique_ptr<SessionRecorder>> SessionRecorder::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot record to ", path, ": ", std::strerror(errno)));
  }
  return std::unique_ptr<SessionRecorder>(new SessionRecorder(path, fd));
}

SessionRecorder::SessionRecorder(std::string path, int fd)
    : path_(std::move(path)),
      fd_(fd),
      out_(std::make_unique<google::protobuf::io::FileOutputStream>(fd)),
      last_flush_(absl::Now()) {}

SessionRecorder::~SessionRecorder() {
  absl::MutexLock lock(&mu_);
  FlushLocked();
  out_.reset();
  if (fd_ >= 0) ::close(fd_);
}

void SessionRecorder::RecordHello(const brain::v1::Hello& hello) {
  RecordEntry entry;
  *entry.mutable_hello() = hello;
  entry.mutable_hello()->clear_resume_token();
  Write(entry);
}

void SessionRecorder::RecordWelcome(const brain::v1::Welcome& welcome) {
  RecordEntry entry;
  *entry.mutable_welcome() = welcome;
  entry.mutable_welcome()->clear_resume_token();
  Write(entry);
}

void SessionRecorder::RecordSensors(const brain::v1::SensorFrame& frame) {
  RecordEntry entry;
  *entry.mutable_sensors() = frame;
  Write(entry);
}

void SessionRecorder::RecordMotors(const brain::v1::MotorFrame& frame) {
  RecordEntry entry;
  *entry.mutable_motors() = frame;
  Write(entry);
}

void SessionRecorder::Write(RecordEntry& entry) {
  const absl::Time now = absl::Now();
  entry.set_time_unix_us(absl::ToUnixMicros(now));
  absl::MutexLock lock(&mu_);
  if (!status_.ok()) return;
  if (!google::protobuf::util::SerializeDelimitedToZeroCopyStream(entry, out_.get())) {
    FailLocked("write failed");
    return;
  }
  if (now - last_flush_ >= kFlushEvery) FlushLocked();
}

void SessionRecorder::Flush() {
  absl::MutexLock lock(&mu_);
  FlushLocked();
}

void SessionRecorder::FlushLocked() {
  last_flush_ = absl::Now();
  if (status_.ok() && !out_->Flush()) FailLocked("flush failed");
}

void SessionRecorder::FailLocked(std::string what) {
  const int error = out_->GetErrno();
  status_ = absl::DataLossError(absl::StrCat("recording to ", path_, " stopped: ", what,
                                             error != 0 ? absl::StrCat(": ", std::strerror(error)) : ""));
}

absl::Status SessionRecorder::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

absl::StatusOr<std::vector<RecordEntry>> ReadRecording(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": not a regular file"));
  }
  google::protobuf::io::FileInputStream file(fd);
  file.SetCloseOnDelete(true);
  std::vector<RecordEntry> entries;
  for (;;) {
    RecordEntry entry;
    bool clean_eof = false;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&entry, &file, &clean_eof)) {
      if (clean_eof) break;
      if (file.GetErrno() != 0) {
        return absl::DataLossError(absl::StrCat("cannot read ", path, ": ", std::strerror(file.GetErrno())));
      }
      // A parse that ran into the end of the file is a cut-off recording; one that stopped
      // earlier met bytes that are not a RecordEntry.
      const bool at_end = file.ByteCount() >= int64_t(info.st_size);
      return absl::DataLossError(absl::StrCat(
          path, ": entry ", entries.size(),
          at_end ? ": truncated (the file ends inside it)" : ": not a brain.v1.RecordEntry (corrupt, or not a recording)"));
    }
    if (entry.entry_case() == RecordEntry::ENTRY_NOT_SET) {
      return absl::DataLossError(absl::StrCat(path, ": entry ", entries.size(),
                                              ": holds no Hello, Welcome, SensorFrame or MotorFrame"));
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace fieldbrain::client

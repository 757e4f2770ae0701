#include "client/session_recording.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>

#include "absl/strings/str_cat.h"

namespace fieldbrain::client {

using brain::v1::RecordEntry;

absl::StatusOr<std::unique_ptr<SessionRecorder>> SessionRecorder::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  struct stat info {};
  if (fd < 0 && errno == EEXIST && ::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);  // a pipe or a device: written, never replaced
  }
  if (fd < 0) {
    const int error = errno;
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot record to ", path, ": ", std::strerror(error),
        error == EEXIST ? " (a recording is never overwritten: remove it or choose another name)" : ""));
  }
  return std::unique_ptr<SessionRecorder>(new SessionRecorder(path, fd));
}

SessionRecorder::SessionRecorder(std::string path, int fd) : path_(std::move(path)), fd_(fd) {
  writer_ = std::thread([this] { WriterLoop(); });
}

SessionRecorder::~SessionRecorder() {
  Close();
  ::close(fd_);
}

void SessionRecorder::RecordHello(const brain::v1::Hello& hello) {
  RecordEntry entry;
  *entry.mutable_hello() = hello;
  entry.mutable_hello()->clear_resume_token();
  Enqueue(entry);
}

void SessionRecorder::RecordWelcome(const brain::v1::Welcome& welcome) {
  RecordEntry entry;
  *entry.mutable_welcome() = welcome;
  entry.mutable_welcome()->clear_resume_token();
  Enqueue(entry);
}

void SessionRecorder::RecordSensors(const brain::v1::SensorFrame& frame) {
  RecordEntry entry;
  *entry.mutable_sensors() = frame;
  Enqueue(entry);
}

void SessionRecorder::RecordMotors(const brain::v1::MotorFrame& frame) {
  RecordEntry entry;
  *entry.mutable_motors() = frame;
  Enqueue(entry);
}

void SessionRecorder::Enqueue(RecordEntry& entry) {
  entry.set_time_unix_us(absl::ToUnixMicros(absl::Now()));
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::util::SerializeDelimitedToZeroCopyStream(entry, &out);
  }
  absl::MutexLock lock(&mu_);
  if (closing_ || !status_.ok()) return;
  if (queue_.size() >= kMaxQueuedEntries) {
    status_ = absl::DataLossError(absl::StrCat("recording to ", path_, " stopped: the disk fell ",
                                               kMaxQueuedEntries, " entries behind"));
    queue_.clear();
    return;
  }
  queue_.push_back(std::move(bytes));
}

void SessionRecorder::WriterLoop() {
  for (;;) {
    std::deque<std::string> batch;
    bool closing = false;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this] { return closing_ || !queue_.empty(); };
      mu_.AwaitWithTimeout(absl::Condition(&ready), kFlushEvery);
      batch.swap(queue_);
      closing = closing_;
    }
    std::string bytes;
    for (const std::string& entry : batch) bytes += entry;
    // Each batch goes to the kernel at once: what the robot did survives a crash of this process.
    if (!bytes.empty() && !WriteAll(bytes)) return;
    if (closing) return;
  }
}

bool SessionRecorder::WriteAll(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Fail(absl::DataLossError(absl::StrCat("recording to ", path_, " stopped: write failed: ",
                                            n < 0 ? std::strerror(errno) : "no progress")));
      return false;
    }
    done += size_t(n);
  }
  return true;
}

void SessionRecorder::Fail(absl::Status error) {
  absl::MutexLock lock(&mu_);
  if (status_.ok()) status_ = std::move(error);
  queue_.clear();
}

void SessionRecorder::Close() {
  absl::MutexLock close_lock(&close_mu_);
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  if (writer_.joinable()) writer_.join();
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

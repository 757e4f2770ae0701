// Recording a robot session to a file and reading it back (the format is documented in
// proto/brain/v1/recording.proto: length-delimited RecordEntry messages).
//
// SessionRecorder is what BrainClient uses with ClientOptions::record_path; brain-replay reads the
// file with ReadRecording. A recorder never fails its caller: the first write error stops the
// recording and is kept in status(), so a full disk costs the recording, never the robot's tick.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "brain/v1/recording.pb.h"

namespace google::protobuf::io {
class FileOutputStream;
}

namespace fieldbrain::client {

class SessionRecorder {
 public:
  // Creates or truncates `path`. The error says why it cannot be written.
  static absl::StatusOr<std::unique_ptr<SessionRecorder>> Open(const std::string& path);
  ~SessionRecorder();  // flushes and closes
  SessionRecorder(const SessionRecorder&) = delete;
  SessionRecorder& operator=(const SessionRecorder&) = delete;

  // Thread-safe. Hello and Welcome are recorded without their resume tokens.
  void RecordHello(const brain::v1::Hello& hello);
  void RecordWelcome(const brain::v1::Welcome& welcome);
  void RecordSensors(const brain::v1::SensorFrame& frame);
  void RecordMotors(const brain::v1::MotorFrame& frame);

  // Writes what is buffered to the file (done by itself at least every kFlushEvery and on
  // destruction).
  void Flush();
  // OK, or the first error, after which nothing more was recorded.
  absl::Status status() const;

  static constexpr absl::Duration kFlushEvery = absl::Milliseconds(200);

 private:
  SessionRecorder(std::string path, int fd);
  void Write(brain::v1::RecordEntry& entry);
  void FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FailLocked(std::string what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  mutable absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<google::protobuf::io::FileOutputStream> out_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  absl::Time last_flush_ ABSL_GUARDED_BY(mu_);
};

// The entries of a recording, in file order. Refuses, naming the file, the entry's index and the
// cause: a file that cannot be read, a truncated entry, bytes that are not a RecordEntry, or an
// entry with nothing in it.
absl::StatusOr<std::vector<brain::v1::RecordEntry>> ReadRecording(const std::string& path);

}  // namespace fieldbrain::client

// Recording a robot session to a file and reading it back (the format is documented in
// proto/brain/v1/recording.proto: length-delimited RecordEntry messages).
//
// SessionRecorder is what BrainClient uses with ClientOptions::record_path; brain-replay reads the
// file with ReadRecording. A recorder never blocks or fails its caller: Record* only serialise the
// message onto a bounded queue, and a writer thread of its own writes the queue to the file and
// flushes it every kFlushEvery. The first write error, or a queue overrun (a disk slower than the
// robot), stops the recording and is kept in status(); the robot's ticks never wait for the disk.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "brain/v1/recording.pb.h"

namespace fieldbrain::client {

class SessionRecorder {
 public:
  // Creates `path`; refuses to overwrite an existing regular file (a recording is evidence). A
  // pipe or device is written to. The error says why it cannot be written.
  static absl::StatusOr<std::unique_ptr<SessionRecorder>> Open(const std::string& path);
  ~SessionRecorder();  // Close()
  SessionRecorder(const SessionRecorder&) = delete;
  SessionRecorder& operator=(const SessionRecorder&) = delete;

  // Thread-safe and non-blocking. Hello and Welcome are recorded without their resume tokens.
  void RecordHello(const brain::v1::Hello& hello);
  void RecordWelcome(const brain::v1::Welcome& welcome);
  void RecordSensors(const brain::v1::SensorFrame& frame);
  void RecordMotors(const brain::v1::MotorFrame& frame);

  // Writes what is queued, flushes, stops the writer and closes the file. Idempotent; entries
  // recorded afterwards are dropped.
  void Close();
  // OK, or the first error, after which nothing more was recorded. Final after Close().
  absl::Status status() const;

  static constexpr absl::Duration kFlushEvery = absl::Milliseconds(200);
  static constexpr size_t kMaxQueuedEntries = 4096;  // about 80 s of a 50 Hz robot

 private:
  SessionRecorder(std::string path, int fd);
  void Enqueue(brain::v1::RecordEntry& entry);
  void WriterLoop();
  // Appends `bytes` to the file; false (and status_ set) on an error.
  bool WriteAll(const std::string& bytes);
  void Fail(absl::Status error) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string path_;
  const int fd_;
  mutable absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);  // delimited, serialised entries
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  absl::Mutex close_mu_;  // serialises Close
  std::thread writer_;
};

// The entries of a recording, in file order. Refuses, naming the file, the entry's index and the
// cause: a file that cannot be read, a truncated entry, bytes that are not a RecordEntry, or an
// entry with nothing in it.
absl::StatusOr<std::vector<brain::v1::RecordEntry>> ReadRecording(const std::string& path);

}  // namespace fieldbrain::client

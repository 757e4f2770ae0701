// Where a robot's checkpoint lives and how it is written: to a temporary file in the same
// directory, fsynced, renamed over the old one, and the directory fsynced, so a crash at any
// moment leaves either the old checkpoint or the new one, never a mix.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fieldbrain::server {

// dir/<first 32 hex digits of SHA-256(robot_id)>.ckpt: robot ids are arbitrary bytes, file names
// must not be; the id itself is inside the file.
std::string CheckpointPath(const std::string& dir, const std::string& robot_id);

// Refuses a directory that does not exist or cannot be written (checked at start).
absl::Status CheckCheckpointDir(const std::string& dir);

// Writes `bytes` to `path` through a temporary file of this process (<path>.tmp.<host>.<pid>),
// fsync and rename: a reader sees the old file or the new one, never a mix, even when several
// daemons share the directory.
absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes);
// The same in its steps: the temporary file, written and fsynced (its path); its rename over
// `path` (the temporary file is removed if that fails); the directory's fsync, which makes the
// rename durable.
absl::StatusOr<std::string> WriteTemporaryFile(const std::string& path, const std::string& bytes);
absl::Status RenameOver(const std::string& tmp, const std::string& path);
absl::Status SyncDirectoryOf(const std::string& path);

// An exclusive flock(2) on <dir>/.fieldbrain.lock for as long as it lives: daemons that share the
// directory take turns at a checkpoint's last check and its rename. Where the lock cannot be had
// (a filesystem without flock), it holds nothing and says so.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::string& dir);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// At start: removes temporary files that no write will finish, those of this host whose process is
// gone (a killed daemon's) and any older than an hour (another host's); returns how many.
int RemoveStaleTemporaryFiles(const std::string& dir);
// Damaged checkpoints set aside as <file>.refused in `dir`.
int CountRefusedFiles(const std::string& dir);

// NotFound when there is no file; other errors say why it could not be read.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace fieldbrain::server

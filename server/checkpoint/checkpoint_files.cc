#include "server/checkpoint/checkpoint_files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/sha256.h"

namespace fieldbrain::server {
namespace {

std::string Errno() { return std::strerror(errno); }

absl::Status FsyncPath(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("open ", path, ": ", Errno()));
  const int rc = ::fsync(fd);
  const std::string error = rc != 0 ? Errno() : "";
  ::close(fd);
  if (rc != 0) return absl::UnavailableError(absl::StrCat("fsync ", path, ": ", error));
  return absl::OkStatus();
}

}  // namespace

std::string CheckpointPath(const std::string& dir, const std::string& robot_id) {
  const Sha256Digest digest = Sha256(robot_id);
  const std::string hex =
      absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
  return absl::StrCat(dir, "/", hex.substr(0, 32), ".ckpt");
}

absl::Status CheckCheckpointDir(const std::string& dir) {
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--checkpoint_dir=", dir, ": ", Errno()));
  }
  if (!S_ISDIR(info.st_mode)) return absl::InvalidArgumentError(absl::StrCat("--checkpoint_dir=", dir, ": not a directory"));
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--checkpoint_dir=", dir, ": not writable: ", Errno()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> WriteTemporaryFile(const std::string& path, const std::string& bytes) {
  // Daemons behind one proxy share the directory: each writes its own temporary file, so two
  // that write one robot's brain at once never mix their bytes (the last rename wins, whole).
  char host[256] = "host";
  ::gethostname(host, sizeof(host) - 1);
  const std::string tmp = absl::StrCat(path, ".tmp.", host, ".", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("create ", tmp, ": ", Errno()));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string error = n < 0 ? Errno() : "no progress";
      ::close(fd);
      ::unlink(tmp.c_str());
      return absl::UnavailableError(absl::StrCat("write ", tmp, ": ", error));
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0) {
    const std::string error = Errno();
    ::close(fd);
    ::unlink(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("fsync ", tmp, ": ", error));
  }
  ::close(fd);
  return tmp;
}

absl::Status RenameOver(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string error = Errno();
    ::unlink(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("rename ", tmp, ": ", error));
  }
  return absl::OkStatus();
}

absl::Status SyncDirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return FsyncPath(slash == std::string::npos ? "." : path.substr(0, slash), O_RDONLY | O_DIRECTORY);
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  absl::StatusOr<std::string> tmp = WriteTemporaryFile(path, bytes);
  if (!tmp.ok()) return tmp.status();
  if (absl::Status s = RenameOver(*tmp, path); !s.ok()) return s;
  return SyncDirectoryOf(path);
}

int RemoveStaleTemporaryFiles(const std::string& dir) {
  char host[256] = "host";
  ::gethostname(host, sizeof(host) - 1);
  const std::string ours = absl::StrCat(".tmp.", host, ".");
  const auto an_hour_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  int removed = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    const size_t tmp = name.find(".ckpt.tmp.");
    if (tmp == std::string::npos) continue;
    bool stale = entry.last_write_time(error) < an_hour_ago && !error;
    if (const size_t at = name.find(ours, tmp); !stale && at != std::string::npos) {
      const std::string pid_text = name.substr(at + ours.size());
      char* end = nullptr;
      const long pid = std::strtol(pid_text.c_str(), &end, 10);
      stale = end != pid_text.c_str() && *end == '\0' && pid > 0 && pid != ::getpid() &&
              ::kill(pid_t(pid), 0) != 0 && errno == ESRCH;
    }
    if (stale && std::filesystem::remove(entry.path(), error)) ++removed;
  }
  return removed;
}

int CountRefusedFiles(const std::string& dir) {
  int refused = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().extension() == ".refused") ++refused;
  }
  return refused;
}

DirectoryLock::DirectoryLock(const std::string& dir) {
  fd_ = ::open(absl::StrCat(dir, "/.fieldbrain.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) return;
  int rc;
  do {
    rc = ::flock(fd_, LOCK_EX);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the lock
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no checkpoint"));
    return absl::UnavailableError(absl::StrCat("open ", path, ": ", Errno()));
  }
  std::string out;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string error = Errno();
      ::close(fd);
      return absl::UnavailableError(absl::StrCat("read ", path, ": ", error));
    }
    if (n == 0) break;
    out.append(buffer, size_t(n));
  }
  ::close(fd);
  return out;
}

}  // namespace fieldbrain::server

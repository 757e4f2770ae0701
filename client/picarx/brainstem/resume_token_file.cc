#include "client/picarx/brainstem/resume_token_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace fieldbrain::picarx {

absl::StatusOr<std::optional<std::string>> ReadResumeToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return std::nullopt;
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string token(absl::StripAsciiWhitespace(text.str()));
  bool printable = !token.empty() && token.size() <= 128;
  for (char c : token) printable = printable && absl::ascii_isgraph(static_cast<unsigned char>(c));
  if (!printable) return absl::InvalidArgumentError(absl::StrCat(path, " does not hold a resume token"));
  return token;
}

absl::Status WriteResumeToken(const std::string& path, const std::string& token) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot write ", tmp, ": ", std::strerror(errno)));
  const std::string line = token + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == ssize_t(line.size()) && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  if (!written || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", std::strerror(written ? errno : error)));
  }
  return absl::OkStatus();
}

}  // namespace fieldbrain::picarx

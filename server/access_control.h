// AccessControl: who may drive which robots and use which Memory spaces, from a tokens file.
//
// With no tokens file the server is open (anyone who reaches the port). With one, every Cycle
// stream and Memory call must carry the metadata "authorization: Bearer <token>" of a token in
// the file: none or an unknown one is UNAUTHENTICATED; a robot id (or space) the token does not
// cover is PERMISSION_DENIED. The file is re-read on SIGHUP (Load again): the server then ends the
// live streams a token no longer covers (BrainServer::ReloadTokens); a file that does not parse is
// refused and the old table stays.
//
// Tokens file, one token per line ('#' starts a comment):
//   <token> robots=<pattern>[,<pattern>...] spaces=<pattern>[,<pattern>...]
// A pattern is an exact id, a prefix ending in '*' ("car-*"), or '*' (everything); either key may
// be left out (no robots / no spaces). Tokens are 16-256 printable characters without spaces.
//
// Tokens are never logged or exported: the table holds their SHA-256, and a presented token is
// hashed and its hash compared in constant time (CRYPTO_memcmp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace fieldbrain::server {

struct TokenGrant {
  std::vector<std::string> robots;  // patterns
  std::vector<std::string> spaces;
};

// SHA-256 of a token (32 raw bytes) -> what it may do.
using TokenTable = absl::flat_hash_map<std::string, TokenGrant>;

// Parses a tokens file's text. Refuses with the line number and what is wrong (never the token).
absl::StatusOr<TokenTable> ParseTokensFile(absl::string_view text);

// True when `pattern` (exact, "prefix*" or "*") covers `name`.
bool PatternCovers(absl::string_view pattern, absl::string_view name);

class AccessControl {
 public:
  AccessControl() = default;  // open: no tokens file

  // Reads and parses `path` and, when it parses, replaces the table. On an error the table in use
  // stays as it was.
  absl::Status Load(const std::string& path);
  bool enabled() const;

  // `authorization` is the metadata value ("Bearer <token>"), empty when absent.
  absl::Status CheckRobot(absl::string_view authorization, absl::string_view robot_id) const;
  absl::Status CheckSpace(absl::string_view authorization, absl::string_view space) const;
  // Any valid token (for calls that name no robot or space, e.g. ListSpaces).
  absl::Status CheckToken(absl::string_view authorization) const;

 private:
  // The grant of the presented token, or UNAUTHENTICATED.
  absl::StatusOr<TokenGrant> GrantOf(absl::string_view authorization) const;

  mutable absl::Mutex mu_;
  std::shared_ptr<const TokenTable> table_ ABSL_GUARDED_BY(mu_);  // null = open
};

}  // namespace fieldbrain::server

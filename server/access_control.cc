#include "server/access_control.h"

#include <openssl/crypto.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/sha256.h"

namespace fieldbrain::server {
namespace {

constexpr size_t kMinTokenBytes = 16, kMaxTokenBytes = 256;
constexpr char kBearer[] = "Bearer ";

// The table's key: a token's SHA-256 as 32 raw bytes.
std::string TokenKey(absl::string_view token) {
  const Sha256Digest digest = Sha256(token);
  return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

absl::StatusOr<std::vector<std::string>> Patterns(absl::string_view list, absl::string_view key) {
  std::vector<std::string> out;
  for (absl::string_view p : absl::StrSplit(list, ',')) {
    if (p.empty()) return absl::InvalidArgumentError(absl::StrCat(key, "= has an empty pattern"));
    const size_t star = p.find('*');
    if (star != absl::string_view::npos && star != p.size() - 1) {
      return absl::InvalidArgumentError(absl::StrCat(key, "= pattern '", p, "': '*' only at the end"));
    }
    out.emplace_back(p);
  }
  return out;
}

}  // namespace

bool PatternCovers(absl::string_view pattern, absl::string_view name) {
  if (absl::ConsumeSuffix(&pattern, "*")) return absl::StartsWith(name, pattern);
  return pattern == name;
}

absl::StatusOr<TokenTable> ParseTokensFile(absl::string_view text) {
  TokenTable table;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    std::vector<absl::string_view> words = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    const absl::string_view token = words[0];
    auto bad = [line_number](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("tokens file line ", line_number, ": ", why));
    };
    if (token.size() < kMinTokenBytes || token.size() > kMaxTokenBytes) {
      return bad(absl::StrCat("a token must be ", kMinTokenBytes, "-", kMaxTokenBytes, " characters"));
    }
    for (char c : token) {
      if (!absl::ascii_isgraph(static_cast<unsigned char>(c))) return bad("a token must be printable, without spaces");
    }
    TokenGrant grant;
    for (size_t i = 1; i < words.size(); ++i) {
      absl::string_view word = words[i];
      std::vector<std::string>* target = nullptr;
      absl::string_view key;
      if (absl::ConsumePrefix(&word, "robots=")) {
        target = &grant.robots;
        key = "robots";
      } else if (absl::ConsumePrefix(&word, "spaces=")) {
        target = &grant.spaces;
        key = "spaces";
      } else {
        return bad(absl::StrCat("expected robots=... or spaces=..., got '", words[i], "'"));
      }
      absl::StatusOr<std::vector<std::string>> patterns = Patterns(word, key);
      if (!patterns.ok()) return bad(patterns.status().message());
      target->insert(target->end(), patterns->begin(), patterns->end());
    }
    if (!table.emplace(TokenKey(token), std::move(grant)).second) return bad("this token is already listed");
  }
  return table;
}

absl::Status AccessControl::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("tokens file ", path, ": ", std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<TokenTable> table = ParseTokensFile(text.str());
  if (!table.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", table.status().message()));
  auto shared = std::make_shared<const TokenTable>(*std::move(table));
  absl::MutexLock lock(&mu_);
  table_ = std::move(shared);
  return absl::OkStatus();
}

bool AccessControl::enabled() const {
  absl::MutexLock lock(&mu_);
  return table_ != nullptr;
}

absl::StatusOr<TokenGrant> AccessControl::GrantOf(absl::string_view authorization) const {
  std::shared_ptr<const TokenTable> table;
  {
    absl::MutexLock lock(&mu_);
    table = table_;
  }
  if (table == nullptr) return TokenGrant{{"*"}, {"*"}};
  absl::string_view token = authorization;
  if (!absl::ConsumePrefix(&token, kBearer) || token.empty()) {
    return absl::UnauthenticatedError("this server needs a bearer token (metadata \"authorization: Bearer <token>\")");
  }
  const std::string digest = TokenKey(token);
  const auto it = table->find(digest);
  // The map is keyed by the hash, so a lookup reveals nothing about the token; the final
  // comparison is in constant time anyway.
  if (it == table->end() || CRYPTO_memcmp(it->first.data(), digest.data(), digest.size()) != 0) {
    return absl::UnauthenticatedError("the bearer token is not valid here");
  }
  return it->second;
}

absl::Status AccessControl::CheckToken(absl::string_view authorization) const {
  return GrantOf(authorization).status();
}

absl::Status AccessControl::CheckRobot(absl::string_view authorization, absl::string_view robot_id) const {
  absl::StatusOr<TokenGrant> grant = GrantOf(authorization);
  if (!grant.ok()) return grant.status();
  for (const std::string& p : grant->robots) {
    if (PatternCovers(p, robot_id)) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat("this token may not drive robot_id \"", robot_id, "\""));
}

absl::Status AccessControl::CheckSpace(absl::string_view authorization, absl::string_view space) const {
  absl::StatusOr<TokenGrant> grant = GrantOf(authorization);
  if (!grant.ok()) return grant.status();
  for (const std::string& p : grant->spaces) {
    if (PatternCovers(p, space)) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat("this token may not use Memory space \"", space, "\""));
}

}  // namespace fieldbrain::server

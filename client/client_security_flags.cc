#include "client/client_security_flags.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/channel_credentials.h"

ABSL_FLAG(std::string, tls_ca, "",
          "TLS: the PEM CA bundle that signed the server's certificate; empty = plaintext");
ABSL_FLAG(std::string, tls_cert, "", "mutual TLS: this client's PEM certificate chain (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "mutual TLS: this client's PEM private key");
ABSL_FLAG(std::string, token_file, "",
          "a file holding the bearer token for a server with a tokens file (kept out of the command "
          "line, where other users could read it)");

namespace fieldbrain::client {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFromFlags() {
  return MakeChannelCredentials(
      ClientTlsFiles{absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key)});
}

absl::StatusOr<std::string> BearerTokenFromFlags() {
  const std::string path = absl::GetFlag(FLAGS_token_file);
  if (path.empty()) return std::string();
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--token_file=", path, ": ", std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(text.str()));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat("--token_file=", path, " holds no token"));
  return token;
}

}  // namespace fieldbrain::client

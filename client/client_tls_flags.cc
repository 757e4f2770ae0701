#include "client/client_tls_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "client/channel_credentials.h"

ABSL_FLAG(std::string, tls_ca, "",
          "TLS: the PEM CA bundle that signed the server's certificate; empty = plaintext");
ABSL_FLAG(std::string, tls_cert, "", "mutual TLS: this client's PEM certificate chain (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "mutual TLS: this client's PEM private key");

namespace fieldbrain::client {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFromFlags() {
  return MakeChannelCredentials(
      ClientTlsFiles{absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key)});
}

}  // namespace fieldbrain::client

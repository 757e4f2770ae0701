// The credentials brain-server listens with: plaintext, TLS (--tls_cert, --tls_key) or mutual TLS
// (plus --tls_client_ca: every client must present a certificate that CA signed).
#pragma once

#include <memory>
#include <string>

#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"

namespace fieldbrain::server {

struct TlsFiles {
  std::string cert;       // PEM certificate chain; empty with key empty = plaintext
  std::string key;        // PEM private key
  std::string client_ca;  // PEM CA bundle; non-empty = mutual TLS
};

// Reads the files. Refuses, naming the file and the cause: a cert without a key (or the reverse),
// a client CA without a server cert, a file that cannot be read or holds no PEM block.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const TlsFiles& files);

}  // namespace fieldbrain::server

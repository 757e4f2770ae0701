// The credentials a robot connects with, from the options every client program takes:
// plaintext, TLS against a CA (--tls_ca), and mutual TLS with the robot's own certificate
// (--tls_cert, --tls_key).
#pragma once

#include <memory>
#include <string>

#include <grpcpp/security/credentials.h>

#include "absl/status/statusor.h"

namespace fieldbrain::client {

struct ClientTlsFiles {
  std::string ca;    // PEM CA bundle that signed the server's certificate; empty = plaintext
  std::string cert;  // PEM client certificate chain, for servers that require one
  std::string key;   // its PEM private key
};

// Refuses, naming the flag and file: a cert without a key (or the reverse), a client certificate
// without --tls_ca, a file that cannot be read or is not PEM.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const ClientTlsFiles& files);

}  // namespace fieldbrain::client

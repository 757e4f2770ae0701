// --tls_ca, --tls_cert, --tls_key and --token_file, defined once for every client program
// (brain-sim, brain-replay, picarx-brainstem): the channel credentials and bearer token they ask for.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/security/credentials.h>

#include "absl/status/statusor.h"

namespace fieldbrain::client {

// The file that defines the flags, for SetProgramUsage's list.
inline constexpr char kClientSecurityFlagsFile[] = "client_security_flags.cc";

// Plaintext when --tls_ca is empty; see channel_credentials.h for what is refused.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFromFlags();

// The bearer token in --token_file (whitespace around it dropped); empty without the flag. A
// file that cannot be read or holds no token is refused, naming the file (never the token).
absl::StatusOr<std::string> BearerTokenFromFlags();

}  // namespace fieldbrain::client

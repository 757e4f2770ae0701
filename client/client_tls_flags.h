// --tls_ca, --tls_cert and --tls_key, defined once for every client program (brain-sim,
// brain-replay, picarx-brainstem), and the channel credentials they ask for.
#pragma once

#include <memory>

#include <grpcpp/security/credentials.h>

#include "absl/status/statusor.h"

namespace fieldbrain::client {

// The file that defines the flags, for SetProgramUsage's list.
inline constexpr char kClientTlsFlagsFile[] = "client_tls_flags.cc";

// Plaintext when --tls_ca is empty; see channel_credentials.h for what is refused.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFromFlags();

}  // namespace fieldbrain::client

#include "common/sha256.h"

#include <openssl/evp.h>

namespace fieldbrain {

Sha256Digest Sha256(absl::string_view a, absl::string_view b) {
  Sha256Digest digest{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned int n = 0;
  const bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, a.data(), a.size()) == 1 && EVP_DigestUpdate(ctx, b.data(), b.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, digest.data(), &n) == 1 && n == digest.size();
  EVP_MD_CTX_free(ctx);
  if (!ok) digest.fill(0xff);
  return digest;
}

}  // namespace fieldbrain

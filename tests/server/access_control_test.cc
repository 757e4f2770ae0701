// The tokens file and the checks made with it (server/access_control.h).
#include "server/access_control.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fieldbrain::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kCarToken[] = "car-token-0123456789abcdef";
constexpr char kLabToken[] = "lab-token-fedcba9876543210";

std::string TokensPath(const std::string& text) {
  const std::string path = ::testing::TempDir() + "/tokens." + std::to_string(::getpid());
  std::ofstream(path) << text;
  return path;
}

const char kFile[] =
    "# fleet tokens\n"
    "car-token-0123456789abcdef robots=car-7\n"
    "lab-token-fedcba9876543210 robots=lab-*,sim-1 spaces=lab.*   # the lab's robots and spaces\n";

TEST(TokensFile, ParsesTokensRobotsAndSpaces) {
  absl::StatusOr<TokenTable> table = ParseTokensFile(kFile);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->size(), 2u);
  for (const auto& [digest, grant] : *table) {
    EXPECT_EQ(digest.size(), 32u) << "the table keeps hashes, not tokens";
    EXPECT_THAT(digest, Not(HasSubstr("token")));
  }
}

TEST(TokensFile, RefusesBadLinesNamingTheLineButNeverTheToken) {
  const std::pair<const char*, const char*> bad[] = {
      {"short robots=a\n", "line 1: a token must be 16-256 characters"},
      {"# ok\nsecret-token-123456789 cars=a\n", "line 2: expected robots=... or spaces=..., got 'cars=a'"},
      {"secret-token-123456789 robots=a*b\n", "'*' only at the end"},
      {"secret-token-123456789 robots=a,,b\n", "empty pattern"},
      {"secret-token-123456789 robots=a\nsecret-token-123456789 robots=b\n", "line 2: this token is already listed"},
  };
  for (const auto& [text, why] : bad) {
    absl::StatusOr<TokenTable> table = ParseTokensFile(text);
    ASSERT_FALSE(table.ok()) << text;
    EXPECT_THAT(table.status().message(), HasSubstr(why));
    EXPECT_THAT(table.status().message(), Not(HasSubstr("secret-token")));
  }
}

TEST(AccessControl, OpenWithoutAFileAndCheckedWithOne) {
  AccessControl open;
  EXPECT_FALSE(open.enabled());
  EXPECT_TRUE(open.CheckRobot("", "anything").ok());

  AccessControl access;
  ASSERT_TRUE(access.Load(TokensPath(kFile)).ok());
  EXPECT_TRUE(access.enabled());
  EXPECT_EQ(access.CheckRobot("", "car-7").code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(access.CheckRobot("Basic abc", "car-7").code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(access.CheckRobot("Bearer not-a-known-token-at-all", "car-7").code(), absl::StatusCode::kUnauthenticated);
  const std::string car = std::string("Bearer ") + kCarToken;
  const std::string lab = std::string("Bearer ") + kLabToken;
  EXPECT_TRUE(access.CheckRobot(car, "car-7").ok());
  const absl::Status denied = access.CheckRobot(car, "car-8");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(denied.message(), HasSubstr("may not drive robot_id \"car-8\""));
  EXPECT_THAT(denied.message(), Not(HasSubstr(kCarToken)));
  EXPECT_TRUE(access.CheckRobot(lab, "lab-arm-2").ok());
  EXPECT_TRUE(access.CheckRobot(lab, "sim-1").ok());
  EXPECT_EQ(access.CheckRobot(lab, "sim-10").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(access.CheckSpace(lab, "lab.places").ok());
  EXPECT_EQ(access.CheckSpace(car, "lab.places").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(access.CheckToken(car).ok());
  EXPECT_EQ(access.CheckToken("Bearer ").code(), absl::StatusCode::kUnauthenticated);
}

TEST(AccessControl, ABadReloadKeepsTheTokensInUse) {
  AccessControl access;
  const std::string path = TokensPath(kFile);
  ASSERT_TRUE(access.Load(path).ok());
  std::ofstream(path) << "too-short robots=*\n";
  const absl::Status reload = access.Load(path);
  EXPECT_EQ(reload.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reload.message(), HasSubstr("line 1"));
  EXPECT_TRUE(access.CheckRobot(std::string("Bearer ") + kCarToken, "car-7").ok());
  EXPECT_FALSE(access.Load(path + ".missing").ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace fieldbrain::server

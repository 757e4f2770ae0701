// The fake Brain service as a process, for brain-sim's end-to-end test. Writes its port to
// --port_file once listening and serves until killed.
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/clock.h"
#include "tests/client/fake_brain_server.h"

ABSL_FLAG(std::string, port_file, "", "where to write the listening port");
ABSL_FLAG(double, seconds, 60, "serve this long, then exit");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  auto server = fieldbrain::testing::FakeBrainServer::Start();
  if (server == nullptr) {
    std::fprintf(stderr, "fake_brain_server: could not listen\n");
    return 1;
  }
  const std::string path = absl::GetFlag(FLAGS_port_file);
  {
    std::ofstream tmp(path + ".tmp");
    tmp << server->port() << "\n";
  }
  std::rename((path + ".tmp").c_str(), path.c_str());  // readers never see a partial file
  absl::SleepFor(absl::Seconds(absl::GetFlag(FLAGS_seconds)));
  return 0;
}

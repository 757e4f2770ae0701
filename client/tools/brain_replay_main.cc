// brain-replay: sends a recorded session's sensor frames to a brain server, to a new brain of the
// recorded seed, and says whether every answer is the recorded one, bit for bit, or where the
// first difference is (client/tools/session_replay.h). Exit status: 0 identical, 1 a difference,
// 2 bad flags or a recording that cannot be read or replayed, 3 the server could not be reached
// or ended the replay.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/time.h"
#include "client/client_security_flags.h"
#include "client/session_recording.h"
#include "client/tools/session_replay.h"
#include "common/program_usage.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "brain server address");
ABSL_FLAG(std::string, recording, "", "the recorded session (a client's --record=FILE)");
ABSL_FLAG(std::string, robot_id, "",
          "robot id the replay drives; empty = \"replay-\" + the recorded id (so a live robot's kept "
          "brain is never touched)");
ABSL_FLAG(double, timeout_s, 600, "longest the whole replay may take");

int main(int argc, char** argv) {
  fieldbrain::SetProgramUsage("brain-replay",
                              "replays a recorded robot session against a brain server and reports "
                              "whether every answer is identical, or the first difference.\n"
                              "  brain-replay --target=127.0.0.1:50051 --recording=robot.rec",
                              {"brain_replay_main.cc", fieldbrain::client::kClientSecurityFlagsFile});
  absl::ParseCommandLine(argc, argv);
  const std::string path = absl::GetFlag(FLAGS_recording);
  const double timeout_s = absl::GetFlag(FLAGS_timeout_s);
  if (path.empty() || !(timeout_s > 0)) {
    std::fprintf(stderr, "brain-replay: need --recording=FILE and a positive --timeout_s\n");
    return 2;
  }
  const auto entries = fieldbrain::client::ReadRecording(path);
  if (!entries.ok()) {
    std::fprintf(stderr, "brain-replay: %s\n", std::string(entries.status().message()).c_str());
    return 2;
  }
  const auto plan = fieldbrain::sim::PlanReplay(*entries);
  if (!plan.ok()) {
    std::fprintf(stderr, "brain-replay: %s: %s\n", path.c_str(), std::string(plan.status().message()).c_str());
    return 2;
  }
  fieldbrain::sim::ReplayOptions options;
  options.target = absl::GetFlag(FLAGS_target);
  const auto credentials = fieldbrain::client::ChannelCredentialsFromFlags();
  const auto token = fieldbrain::client::BearerTokenFromFlags();
  if (!credentials.ok() || !token.ok()) {
    std::fprintf(stderr, "brain-replay: %s\n",
                 std::string((credentials.ok() ? token.status() : credentials.status()).message()).c_str());
    return 2;
  }
  options.credentials = *credentials;
  options.bearer_token = *token;
  options.robot_id = absl::GetFlag(FLAGS_robot_id);
  options.timeout = absl::Seconds(timeout_s);
  const auto report = fieldbrain::sim::ReplaySession(*plan, options);
  if (!report.ok()) {
    std::fprintf(stderr, "brain-replay: %s\n", std::string(report.status().message()).c_str());
    return 3;
  }
  std::printf("recording     %s: %lld frames, %zu brain(s), %lld not run by the original brain (skipped)\n",
              path.c_str(), static_cast<long long>(plan->frames_recorded), plan->brains.size(),
              static_cast<long long>(plan->frames_skipped));
  for (const std::string& note : report->notes) std::printf("note          %s\n", note.c_str());
  std::printf("replayed      %lld frames to %s, %lld held to a recorded answer\n",
              static_cast<long long>(report->frames_sent), options.target.c_str(),
              static_cast<long long>(report->frames_compared));
  if (report->rate_limited > 0) {
    std::printf("note          %lld frames were answered RATE_LIMITED by the server and sent again\n",
                static_cast<long long>(report->rate_limited));
  }
  if (report->first_difference.empty()) {
    std::printf("result        identical: every answer matches the recording bit for bit\n");
    return 0;
  }
  std::printf("result        DIFFERENT at %s\n", report->first_difference.c_str());
  return 1;
}

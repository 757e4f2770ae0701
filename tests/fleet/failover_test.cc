// A fleet behind a real proxy: nginx (Debian's, deploy/nginx/fieldbrain-grpc.conf) routes 24
// robots by their x-robot-id to three brain-server processes that share one checkpoint directory.
// One daemon is killed with SIGKILL mid-run (no shutdown checkpoint: only the periodic ones exist).
// Its robots must reconnect through nginx, land on the survivors and resume from their last
// checkpoint; every other robot must not notice. Prints the frames lost and the time to resume.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "brain/v1/brain.grpc.pb.h"
#include "client/brain_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server_process.h"

namespace fieldbrain {
namespace {

using server::testing::ChildProcess;
using server::testing::ReadFile;
using ::testing::HasSubstr;

constexpr int kDaemons = 3;
constexpr int kRobots = 24;
constexpr int kCheckpointEvery = 25;           // cycles
constexpr absl::Duration kTick = absl::Milliseconds(50);  // 20 Hz
constexpr absl::Duration kBeforeKill = absl::Seconds(4);  // ~80 cycles: at least 3 checkpoints each

struct Daemon {
  std::unique_ptr<ChildProcess> process;
  int port = 0;
  std::string log;
};

// One robot's control loop and what it saw.
struct RobotRun {
  std::string id;
  std::unique_ptr<client::BrainClient> client;
  absl::Mutex mu;
  struct Tick {
    absl::Time at;
    bool ok;
    uint64_t cycle;
  };
  std::vector<Tick> ticks ABSL_GUARDED_BY(mu);
};

std::string Work(const std::string& name) { return absl::StrCat(FLEET_WORK_DIR, "/", name); }

int SessionsOn(int port) {
  auto stub = brain::v1::Brain::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  brain::v1::GetServerInfoRequest request;
  brain::v1::ServerInfo info;
  return stub->GetServerInfo(&ctx, request, &info).ok() ? static_cast<int>(info.sessions_active()) : -1;
}

// nginx's access log, a line per ended stream, as robot -> the upstream list of each stream
// ("a, b" when nginx tried a, found it down, and went on to b), oldest first.
std::map<std::string, std::vector<std::string>> UpstreamsByRobot(const std::string& log) {
  std::map<std::string, std::vector<std::string>> by_robot;
  for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    const size_t robot_at = line.find(" robot=");
    const size_t upstream_at = line.find(" upstream=\"");
    if (robot_at == absl::string_view::npos || upstream_at == absl::string_view::npos) continue;
    const size_t robot_end = line.find(' ', robot_at + 7);
    const size_t upstream_end = line.find('"', upstream_at + 11);
    by_robot[std::string(line.substr(robot_at + 7, robot_end - robot_at - 7))].push_back(
        std::string(line.substr(upstream_at + 11, upstream_end - upstream_at - 11)));
  }
  return by_robot;
}

// The daemon that finally served a stream: the last of its upstream list.
std::string FinalUpstream(const std::string& list) {
  const size_t comma = list.rfind(", ");
  return comma == std::string::npos ? list : list.substr(comma + 2);
}

TEST(FleetFailoverTest, RobotsOfAKilledDaemonResumeOnTheOthersAndNoOtherRobotNotices) {
  std::filesystem::remove_all(FLEET_WORK_DIR);
  std::filesystem::create_directories(Work("checkpoints"));
  std::filesystem::create_directories(Work("nginx-temp"));

  std::vector<Daemon> daemons(kDaemons);
  std::string servers;
  for (int d = 0; d < kDaemons; ++d) {
    daemons[d].log = Work(absl::StrCat("daemon", d, ".log"));
    std::optional<ChildProcess> p = ChildProcess::Spawn(
        {BRAIN_SERVER_PATH, "--listen=127.0.0.1:0", "--engine=cpu", "--field=tiny", "--threads=1",
         absl::StrCat("--max_robots=", kRobots), "--checkpoint_dir=" + Work("checkpoints"),
         absl::StrCat("--checkpoint_every_cycles=", kCheckpointEvery), "--max_frame_hz=0",
         // Robots stay silent until all 24 are connected; a loaded CI machine may take a while.
         "--stream_idle_timeout_s=5"},
        daemons[d].log);
    ASSERT_TRUE(p.has_value());
    daemons[d].process = std::make_unique<ChildProcess>(std::move(*p));
    std::optional<server::testing::DaemonPorts> ports =
        server::testing::WaitForDaemonPorts(*daemons[d].process, daemons[d].log, absl::Seconds(30));
    ASSERT_TRUE(ports.has_value()) << ReadFile(daemons[d].log);
    daemons[d].port = ports->grpc;
    absl::StrAppend(&servers, "server 127.0.0.1:", ports->grpc, ";\n    ");
  }

  // The shipped nginx configuration, with this run's daemons, a free port and a log of its own.
  const int proxy_port = server::testing::PickFreePort();
  std::string site;
  bool servers_written = false;
  for (absl::string_view line : absl::StrSplit(ReadFile(NGINX_SITE_CONF), '\n')) {
    const absl::string_view code = absl::StripLeadingAsciiWhitespace(line);
    if (absl::StartsWith(code, "server ") && absl::EndsWith(code, ";")) {  // the upstream's daemons
      if (!std::exchange(servers_written, true)) absl::StrAppend(&site, "    ", servers, "\n");
    } else if (absl::StartsWith(code, "listen ")) {
      absl::StrAppend(&site, "    listen 127.0.0.1:", proxy_port, " http2;\n");
    } else if (absl::StartsWith(code, "access_log ")) {
      absl::StrAppend(&site, "    access_log ", Work("access.log"), " fieldbrain;\n");
    } else {
      absl::StrAppend(&site, line, "\n");
    }
  }
  ASSERT_TRUE(servers_written) << NGINX_SITE_CONF << " has no upstream server lines";
  std::ofstream(Work("fieldbrain-grpc.conf")) << site;
  const std::string temp = Work("nginx-temp");
  std::ofstream(Work("nginx.conf"))
      << "daemon off;\nworker_processes 1;\npid " << Work("nginx.pid") << ";\nerror_log " << Work("nginx-error.log")
      << " info;\nevents { worker_connections 1024; }\nhttp {\n  client_body_temp_path " << temp
      << "/body;\n  proxy_temp_path " << temp << "/proxy;\n  fastcgi_temp_path " << temp
      << "/fastcgi;\n  uwsgi_temp_path " << temp << "/uwsgi;\n  scgi_temp_path " << temp
      << "/scgi;\n  include " << Work("fieldbrain-grpc.conf") << ";\n}\n";
  std::optional<ChildProcess> nginx = ChildProcess::Spawn(
      {NGINX_PATH, "-e", Work("nginx-error.log"), "-p", FLEET_WORK_DIR, "-c", Work("nginx.conf")},
      Work("nginx-stderr.log"));
  ASSERT_TRUE(nginx.has_value());
  const std::string target = absl::StrCat("127.0.0.1:", proxy_port);
  {
    auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
    ASSERT_TRUE(channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(20))))
        << "nginx did not come up: " << ReadFile(Work("nginx-stderr.log")) << ReadFile(Work("nginx-error.log"));
  }

  // 24 robots through nginx, 20 Hz each, with a deadline long enough that only a broken link
  // makes a safe stop on this shared 2-core machine.
  std::vector<std::unique_ptr<RobotRun>> robots;
  for (int i = 0; i < kRobots; ++i) {
    auto run = std::make_unique<RobotRun>();
    run->id = absl::StrCat("fleet-car-", i);
    client::ClientOptions options;
    options.target = target;
    options.profile.set_robot_id(run->id);
    options.profile.set_sensor_count(6);
    options.profile.set_motor_count(2);
    options.fresh = true;
    absl::StatusOr<std::unique_ptr<client::BrainClient>> c = client::BrainClient::Create(options);
    ASSERT_TRUE(c.ok()) << c.status();
    run->client = *std::move(c);
    robots.push_back(std::move(run));
  }
  for (auto& r : robots) ASSERT_TRUE(r->client->WaitConnected(absl::Seconds(20)).ok()) << r->id;
  std::atomic<bool> stop{false};
  std::vector<std::thread> loops;
  for (auto& r : robots) {
    loops.emplace_back([&stop, run = r.get()] {
      std::vector<float> sensors(6);
      for (uint64_t t = 0; !stop; ++t) {
        const absl::Time next = absl::Now() + kTick;
        for (size_t s = 0; s < sensors.size(); ++s) sensors[s] = 0.5f * float(((t + s) % 7)) / 7.0f;
        const client::StepResult result = run->client->Step(sensors, 0.0f, absl::Seconds(1));
        {
          absl::MutexLock lock(&run->mu);
          run->ticks.push_back({absl::Now(), !result.safe_stop, result.cycle});
        }
        absl::SleepFor(next - absl::Now());
      }
    });
  }

  absl::SleepFor(kBeforeKill);
  // Each daemon got some robots; kill the busiest.
  std::vector<int> sessions(kDaemons);
  int victim = 0;
  for (int d = 0; d < kDaemons; ++d) {
    sessions[d] = SessionsOn(daemons[d].port);
    if (sessions[d] > sessions[victim]) victim = d;
  }
  std::printf("robots per daemon before the kill: %d, %d, %d; killing daemon %d\n", sessions[0], sessions[1],
              sessions[2], victim);
  EXPECT_EQ(sessions[0] + sessions[1] + sessions[2], kRobots);
  for (int d = 0; d < kDaemons; ++d) EXPECT_GT(sessions[d], 0) << "the hash left daemon " << d << " empty";
  const absl::Time killed_at = absl::Now();
  daemons[victim].process->Signal(SIGKILL);
  ASSERT_TRUE(daemons[victim].process->WaitExit(absl::Seconds(10)).has_value());

  // Run on until every robot steps OK again, plus two seconds.
  const absl::Time give_up = killed_at + absl::Seconds(30);
  auto all_back = [&] {
    for (auto& r : robots) {
      absl::MutexLock lock(&r->mu);
      if (r->ticks.empty() || !r->ticks.back().ok || r->ticks.back().at < killed_at) return false;
    }
    return true;
  };
  while (!all_back() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(50));
  absl::SleepFor(absl::Seconds(2));
  stop = true;
  for (auto& t : loops) t.join();
  for (auto& r : robots) r->client->Close();
  nginx->Signal(SIGQUIT);  // graceful: the access log gets every stream's line
  nginx->WaitExit(absl::Seconds(10));

  const std::string victim_address = absl::StrCat("127.0.0.1:", daemons[victim].port);
  const std::map<std::string, std::vector<std::string>> upstreams = UpstreamsByRobot(ReadFile(Work("access.log")));
  std::string survivor_logs;
  for (int d = 0; d < kDaemons; ++d) {
    if (d != victim) survivor_logs += ReadFile(daemons[d].log);
  }

  int moved = 0;
  std::vector<double> resume_ms;
  std::vector<int> lost_frames, lost_cycles;
  int undisturbed_stops = 0;
  size_t undisturbed_ticks = 0;
  for (auto& r : robots) {
    absl::MutexLock lock(&r->mu);
    const std::vector<RobotRun::Tick>& ticks = r->ticks;
    ASSERT_FALSE(ticks.empty()) << r->id;
    // Its streams, as nginx saw them: the first went to one daemon and stayed there.
    ASSERT_TRUE(upstreams.contains(r->id)) << r->id << " is missing from nginx's access log";
    const std::vector<std::string>& streams = upstreams.at(r->id);
    const bool was_on_victim = FinalUpstream(streams.front()) == victim_address;
    // The last cycle before the link broke, and the first after the robot came back: a resume
    // shows as a safe stop (the link down) followed by OK ticks.
    int safe_stops = 0;
    bool gapped = false;  // consecutive OK ticks whose cycles do not follow each other
    uint64_t last_before = 0;
    std::optional<uint64_t> first_after;
    std::optional<absl::Time> back_at;
    for (size_t i = 0; i < ticks.size(); ++i) {
      if (!ticks[i].ok) {
        ++safe_stops;
        continue;
      }
      if (safe_stops > 0 && !first_after.has_value()) {
        first_after = ticks[i].cycle;
        back_at = ticks[i].at;
      }
      if (first_after.has_value()) continue;
      if (last_before > 0 && ticks[i].cycle != last_before + 1) gapped = true;
      last_before = ticks[i].cycle;
    }
    if (!was_on_victim) {
      EXPECT_EQ(streams.size(), 1u) << r->id << " was not on the killed daemon but reconnected";
      // A robot the failover does not touch may still miss a tick's deadline now and then on a
      // loaded 2-core machine (the moved robots' resumes share its cores): counted, bounded at 5 %
      // of its ticks, reported below.
      EXPECT_LE(safe_stops, int(ticks.size() / 20) + 1) << r->id << " was not on the killed daemon but lost frames";
      EXPECT_FALSE(gapped) << r->id << "'s cycles have a gap";
      undisturbed_stops += safe_stops;
      undisturbed_ticks += ticks.size();
      continue;
    }
    ++moved;
    ASSERT_EQ(streams.size(), 2u) << r->id << ": one stream to the killed daemon, one to a survivor";
    EXPECT_NE(FinalUpstream(streams.back()), victim_address) << r->id << " came back to the killed daemon";
    // Resumed from its last checkpoint (the survivor says which, in its log): taken every
    // kCheckpointEvery cycles (a cycle or two later where the copy buffers were busy), so at most
    // about two periods (one still being written when the daemon died) behind the last cycle it ran.
    ASSERT_TRUE(first_after.has_value()) << r->id << " never stepped OK on a survivor";
    const uint64_t resumed_from = *first_after - 1;
    EXPECT_GE(resumed_from, uint64_t{kCheckpointEvery}) << r->id << " started a new brain instead of resuming";
    // The daemon may have run (and checkpointed) a frame whose answer never reached the robot.
    EXPECT_LE(resumed_from, last_before + 2);
    EXPECT_FALSE(gapped) << r->id << "'s cycles have a gap before the kill";
    EXPECT_GE(resumed_from + 2 * kCheckpointEvery, last_before + 1);
    EXPECT_THAT(survivor_logs, HasSubstr(absl::StrCat("robot_id \"", r->id, "\" resumes from its checkpoint at cycle ",
                                                      resumed_from)));
    resume_ms.push_back(absl::ToDoubleMilliseconds(*back_at - killed_at));
    lost_frames.push_back(safe_stops);
    lost_cycles.push_back(static_cast<int>(last_before) - static_cast<int>(resumed_from));
  }
  ASSERT_EQ(moved, sessions[victim]);
  std::sort(resume_ms.begin(), resume_ms.end());
  std::sort(lost_frames.begin(), lost_frames.end());
  std::sort(lost_cycles.begin(), lost_cycles.end());
  std::printf("moved robots: %d of %d; others: %d, none reconnected, %d safe stops in %zu ticks\n", moved, kRobots,
              kRobots - moved, undisturbed_stops, undisturbed_ticks);
  std::printf("time to resume (SIGKILL -> first OK motor frame on a survivor): median %.0f ms, max %.0f ms\n",
              resume_ms[resume_ms.size() / 2], resume_ms.back());
  std::printf("frames lost per moved robot (safe stops, 20 Hz): median %d, max %d\n", lost_frames[lost_frames.size() / 2],
              lost_frames.back());
  std::printf("brain cycles lost per moved robot (run since its last checkpoint, every %d): median %d, max %d\n",
              kCheckpointEvery, lost_cycles[lost_cycles.size() / 2], lost_cycles.back());
  EXPECT_LT(resume_ms.back(), 10'000) << "a moved robot took over 10 s to resume";
}

}  // namespace
}  // namespace fieldbrain

// brain-sim: N simulated PiCar-X robots, each with its own BrainClient and thread, driving a brain
// server at a fixed control rate. Prints one live line per second and a summary at the end (or on
// SIGINT/SIGTERM). Exit status: 0 after a run, 1 when no robot could connect, 2 on bad flags.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/brain_client.h"
#include "client/picarx/picarx_adapter.h"
#include "client/tools/sim_robot.h"
#include "client/client_security_flags.h"
#include "common/program_usage.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "brain server address");
ABSL_FLAG(int, robots, 4, "simulated robots, one stream and one thread each");
ABSL_FLAG(double, seconds, 30, "run time");
ABSL_FLAG(double, hz, 50, "control rate per robot");
ABSL_FLAG(double, deadline_ms, 20, "per-frame deadline; a later answer is a safe stop");
ABSL_FLAG(uint64_t, seed, 1, "seeds the worlds (robot i's room and start: seed + i)");
ABSL_FLAG(uint64_t, brain_seed, 0,
          "seeds the brains, or a baseline's randomness (robot i: brain_seed + i); 0: the same as --seed. "
          "Several brain seeds on the same rooms tell the brain's luck from the room's");
ABSL_FLAG(bool, quiet, false, "no live lines, only the summary");
ABSL_FLAG(double, connect_timeout_s, 5, "how long to wait for the robots' first Welcome");
ABSL_FLAG(std::string, policy, "brain",
          "who drives: brain (the server); or a baseline, which needs no server: random-held (a random "
          "command held 0.5 s), forward (full ahead), actor-critic (a linear actor-critic on the raw "
          "sensors, learning from the reward; --ac_* flags) or reactive (a hand-written driver from the "
          "distance sensor)");
ABSL_FLAG(double, ac_critic_rate, fieldbrain::sim::ActorCriticConfig().critic_rate,
          "actor-critic: the critic's step size (divided by the number of features)");
ABSL_FLAG(double, ac_actor_rate, fieldbrain::sim::ActorCriticConfig().actor_rate,
          "actor-critic: the actor's step size (divided by the number of features)");
ABSL_FLAG(double, ac_lambda, fieldbrain::sim::ActorCriticConfig().lambda, "actor-critic: the traces' lambda");
ABSL_FLAG(double, ac_gamma, fieldbrain::sim::ActorCriticConfig().gamma, "actor-critic: the discount");
ABSL_FLAG(double, ac_noise, fieldbrain::sim::ActorCriticConfig().noise,
          "actor-critic: the exploration's standard deviation on each motor command");
ABSL_FLAG(std::string, reward, "on", "on: frames carry the world's reward; off: they carry none");
ABSL_FLAG(std::string, reflex, "on",
          "on: the PiCar-X's 2 cm obstacle reflex cuts forward drive (a real car's behaviour); off: it "
          "does not, so pushing into a wall keeps costing (the behaviour test's world)");
ABSL_FLAG(std::string, arena, "default",
          "default (the fixed 4 x 3 m room) or random (a room drawn from each robot's seed)");
ABSL_FLAG(std::string, record, "",
          "record each robot's session for brain-replay: to FILE with one robot, to FILE.<i> for "
          "robot i with several (an existing file is never overwritten)");
ABSL_FLAG(int64_t, ticks, 0,
          "> 0: run this many ticks per robot in lockstep (each waits for its motors; the world "
          "advances 1/hz per tick), instead of --seconds of real time");

namespace {

using fieldbrain::sim::Policy;
using fieldbrain::sim::RobotStats;
using fieldbrain::sim::SimRobot;
using fieldbrain::sim::TraceFigures;

volatile std::sig_atomic_t g_signalled = 0;
extern "C" void OnSignal(int) { g_signalled = 1; }

std::string Ms(absl::Duration d) { return absl::StrFormat("%.3f ms", absl::ToDoubleMilliseconds(d)); }

std::string CountsText(const std::map<std::string, uint64_t>& counts) {
  if (counts.empty()) return "none";
  return absl::StrJoin(counts, ", ", [](std::string* out, const auto& kv) {
    absl::StrAppend(out, kv.first, " ", kv.second);
  });
}

void PrintLive(double t, const RobotStats& w, double window_s) {
  std::printf("[%6.1f s] %8.1f cycles/s  rtt p50 %s p99 %s  safe stops %llu  collisions %llu  "
              "blocked/1000 %5.1f  reward/tick %+.4f  confidence %.3f\n",
              t, w.cycles / window_s, Ms(w.round_trip.Percentile(0.5)).c_str(),
              Ms(w.round_trip.Percentile(0.99)).c_str(),
              static_cast<unsigned long long>(w.safe_stops),
              static_cast<unsigned long long>(w.collisions),
              w.cycles ? 1000.0 * double(w.blocked_ticks) / double(w.cycles) : 0.0,
              w.cycles ? w.reward / double(w.cycles) : 0.0,
              w.confidence_n ? w.confidence_sum / w.confidence_n : 0.0);
  std::fflush(stdout);
}

// The first and the last minute of every robot's run (the ticks of a minute at `hz`), mean over
// robots: what `make demo` shows of learning. Runs shorter than two minutes overlap.
void PrintFirstAndLastMinute(const std::vector<std::unique_ptr<SimRobot>>& fleet, double hz) {
  const int64_t minute = std::max<int64_t>(1, int64_t(60.0 * hz + 0.5));
  TraceFigures mean;
  size_t ticks = 0;
  for (const auto& robot : fleet) {
    const TraceFigures f = fieldbrain::sim::FiguresOf(robot->trace(), minute);
    mean.blocked_per_1000_first += f.blocked_per_1000_first / double(fleet.size());
    mean.blocked_per_1000_last += f.blocked_per_1000_last / double(fleet.size());
    mean.reward_per_tick_first += f.reward_per_tick_first / double(fleet.size());
    mean.reward_per_tick_last += f.reward_per_tick_last / double(fleet.size());
    ticks = std::max(ticks, robot->trace().size());
  }
  std::printf("  first minute     blocked/1000 %.1f  reward/tick %+.4f\n", mean.blocked_per_1000_first,
              mean.reward_per_tick_first);
  std::printf("  last minute      blocked/1000 %.1f  reward/tick %+.4f%s\n", mean.blocked_per_1000_last,
              mean.reward_per_tick_last,
              int64_t(ticks) < 2 * minute ? "  (run shorter than 2 minutes: the two overlap)" : "");
}

// Every robot's 2000-tick windows, mean over robots: how the figures move over a life.
void PrintWindows(const std::vector<std::unique_ptr<SimRobot>>& fleet) {
  constexpr int64_t kSpan = 2000;
  std::vector<fieldbrain::sim::WindowFigures> mean;
  for (const auto& robot : fleet) {
    const std::vector<fieldbrain::sim::WindowFigures> w = fieldbrain::sim::WindowsOf(robot->trace(), kSpan);
    if (w.size() > mean.size()) mean.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      mean[i].blocked_per_1000 += w[i].blocked_per_1000 / double(fleet.size());
      mean[i].reward_per_tick += w[i].reward_per_tick / double(fleet.size());
    }
  }
  if (mean.size() < 2) return;
  std::vector<std::string> blocked, reward;
  for (const auto& w : mean) {
    blocked.push_back(absl::StrFormat("%.1f", w.blocked_per_1000));
    reward.push_back(absl::StrFormat("%+.4f", w.reward_per_tick));
  }
  std::printf("  by %lld ticks     blocked/1000 %s\n", static_cast<long long>(kSpan), absl::StrJoin(blocked, " ").c_str());
  std::printf("                   reward/tick  %s\n", absl::StrJoin(reward, " ").c_str());
}

// The learning curve over every robot: means of the per-robot figures, and the worst blocked runs.
void PrintLearningCurve(const std::vector<std::unique_ptr<SimRobot>>& fleet) {
  TraceFigures mean;
  int64_t longest = 0, longest_after = 0;
  size_t ticks = 0;
  std::vector<TraceFigures> figures;
  for (const auto& robot : fleet) {
    const TraceFigures& f = figures.emplace_back(fieldbrain::sim::FiguresOf(robot->trace()));
    mean.blocked_per_1000_first += f.blocked_per_1000_first / double(fleet.size());
    mean.blocked_per_1000_last += f.blocked_per_1000_last / double(fleet.size());
    mean.reward_per_tick_first += f.reward_per_tick_first / double(fleet.size());
    mean.reward_per_tick_last += f.reward_per_tick_last / double(fleet.size());
    longest = std::max(longest, f.longest_blocked_run);
    longest_after = std::max(longest_after, f.longest_blocked_run_after_settle);
    ticks = std::max(ticks, robot->trace().size());
  }
  std::printf("  blocked / 1000   first 1000 ticks %.1f, last 1000 ticks %.1f (mean over robots)\n",
              mean.blocked_per_1000_first, mean.blocked_per_1000_last);
  std::printf("  reward / tick    first 1000 ticks %.4f, last 1000 ticks %.4f\n", mean.reward_per_tick_first,
              mean.reward_per_tick_last);
  std::printf("  longest blocked  %lld ticks in a row (%lld after tick 2000); %zu ticks per robot\n",
              static_cast<long long>(longest), static_cast<long long>(longest_after), ticks);
  // One line per robot (its seed is --seed + i), for per-seed comparisons between runs.
  for (size_t i = 0; i < figures.size(); ++i) {
    const TraceFigures& f = figures[i];
    std::printf("  robot %-3zu        blocked/1000 %6.1f -> %6.1f  reward/tick %8.4f -> %8.4f  "
                "longest blocked after 2000: %lld\n",
                i, f.blocked_per_1000_first, f.blocked_per_1000_last, f.reward_per_tick_first,
                f.reward_per_tick_last, static_cast<long long>(f.longest_blocked_run_after_settle));
  }
}

void PrintSummary(const std::string& target, const std::string& server, int connected,
                  const std::vector<RobotStats>& per_robot, double seconds) {
  RobotStats all;
  for (const RobotStats& s : per_robot) all.Merge(s);
  double rmin = 0, rmax = 0;
  if (!per_robot.empty()) {
    const auto [lo, hi] = std::minmax_element(
        per_robot.begin(), per_robot.end(),
        [](const RobotStats& a, const RobotStats& b) { return a.reward < b.reward; });
    rmin = lo->reward;
    rmax = hi->reward;
  }
  const double n = std::max<size_t>(per_robot.size(), 1);
  const auto& rt = all.round_trip;
  std::printf("\nbrain-sim summary\n");
  std::printf("  target           %s%s\n", target.c_str(), server.c_str());
  std::printf("  robots           %zu (%d connected at start)\n", per_robot.size(), connected);
  std::printf("  duration         %.1f s\n", seconds);
  std::printf("  cycles           %llu (%.1f cycles/s, %llu answered)\n",
              static_cast<unsigned long long>(all.cycles), all.cycles / std::max(seconds, 1e-9),
              static_cast<unsigned long long>(all.answered));
  std::printf("  round trip       p50 %s  p90 %s  p99 %s  max %s\n",
              Ms(rt.Percentile(0.5)).c_str(), Ms(rt.Percentile(0.9)).c_str(),
              Ms(rt.Percentile(0.99)).c_str(), Ms(rt.max()).c_str());
  std::printf("  safe stops       %llu (%.2f %%): %s\n",
              static_cast<unsigned long long>(all.safe_stops),
              all.cycles ? 100.0 * all.safe_stops / all.cycles : 0.0,
              CountsText(all.stop_reasons).c_str());
  std::printf("  reflex stops     %s\n", CountsText(all.reflexes).c_str());
  std::printf("  collisions       %llu (%llu ticks blocked)\n", static_cast<unsigned long long>(all.collisions),
              static_cast<unsigned long long>(all.blocked_ticks));
  std::printf("  reward / robot   mean %.2f  min %.2f  max %.2f\n", all.reward / n, rmin, rmax);
  if (per_robot.size() <= 16) {
    std::vector<std::string> each;
    for (const RobotStats& s : per_robot) each.push_back(absl::StrFormat("%.2f", s.reward));
    std::printf("                   [%s]\n", absl::StrJoin(each, " ").c_str());
  }
  std::printf("  mean confidence  %.3f\n",
              all.confidence_n ? all.confidence_sum / all.confidence_n : 0.0);
  std::printf("  distance driven  %.2f m total, %.2f m per robot\n", all.distance_m,
              all.distance_m / n);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  fieldbrain::SetProgramUsage("brain-sim",
                              "drives a fieldbrain server with simulated PiCar-X robots, or runs a "
                              "baseline policy in the same worlds.\n"
                              "  brain-sim --target=127.0.0.1:50051 --robots=4 --seconds=30",
                              {"brain_sim_main.cc", fieldbrain::client::kClientSecurityFlagsFile});
  absl::ParseCommandLine(argc, argv);
  const std::string target = absl::GetFlag(FLAGS_target);
  const int robots = absl::GetFlag(FLAGS_robots);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const double hz = absl::GetFlag(FLAGS_hz);
  const double deadline_ms = absl::GetFlag(FLAGS_deadline_ms);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  const uint64_t brain_seed = absl::GetFlag(FLAGS_brain_seed) != 0 ? absl::GetFlag(FLAGS_brain_seed) : seed;
  fieldbrain::sim::ActorCriticConfig actor_critic;
  actor_critic.critic_rate = absl::GetFlag(FLAGS_ac_critic_rate);
  actor_critic.actor_rate = absl::GetFlag(FLAGS_ac_actor_rate);
  actor_critic.lambda = absl::GetFlag(FLAGS_ac_lambda);
  actor_critic.gamma = absl::GetFlag(FLAGS_ac_gamma);
  actor_critic.noise = absl::GetFlag(FLAGS_ac_noise);
  const bool quiet = absl::GetFlag(FLAGS_quiet);
  const int64_t ticks = absl::GetFlag(FLAGS_ticks);
  const std::optional<Policy> policy = fieldbrain::sim::PolicyFromName(absl::GetFlag(FLAGS_policy));
  const std::string reward_flag = absl::GetFlag(FLAGS_reward);
  const std::string arena = absl::GetFlag(FLAGS_arena);
  const std::string reflex_flag = absl::GetFlag(FLAGS_reflex);
  if (robots < 1 || seconds <= 0 || hz <= 0 || deadline_ms <= 0 || ticks < 0) {
    std::fprintf(stderr, "brain-sim: need --robots >= 1, positive --seconds, --hz, --deadline_ms and "
                         "--ticks >= 0\n");
    return 2;
  }
  if (!policy.has_value() || (reward_flag != "on" && reward_flag != "off") ||
      (reflex_flag != "on" && reflex_flag != "off") || (arena != "default" && arena != "random")) {
    std::fprintf(stderr, "brain-sim: --policy is brain, random-held, forward, actor-critic or reactive; "
                         "--reward and --reflex on or off; --arena default or random\n");
    return 2;
  }
  if (!(actor_critic.critic_rate >= 0) || !(actor_critic.actor_rate >= 0) || !(actor_critic.lambda >= 0) ||
      !(actor_critic.lambda <= 1) || !(actor_critic.gamma >= 0) || !(actor_critic.gamma < 1) ||
      !(actor_critic.noise > 0)) {
    std::fprintf(stderr, "brain-sim: need --ac_critic_rate, --ac_actor_rate >= 0, --ac_lambda in [0, 1], "
                         "--ac_gamma in [0, 1) and --ac_noise > 0\n");
    return 2;
  }
  const bool brain = *policy == Policy::kBrain;
  const auto credentials = fieldbrain::client::ChannelCredentialsFromFlags();
  const auto token = fieldbrain::client::BearerTokenFromFlags();
  if (!credentials.ok() || !token.ok()) {
    std::fprintf(stderr, "brain-sim: %s\n",
                 std::string((credentials.ok() ? token.status() : credentials.status()).message()).c_str());
    return 2;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);

  std::vector<std::unique_ptr<SimRobot>> fleet;
  for (int i = 0; i < robots; ++i) {
    std::unique_ptr<fieldbrain::client::BrainClient> client;
    if (brain) {
      fieldbrain::client::ClientOptions options;
      options.target = target;
      options.credentials = *credentials;
      options.bearer_token = *token;
      options.profile = fieldbrain::picarx::MakeProfile(absl::StrCat("sim-", seed, "-", i),
                                                        static_cast<float>(hz), reward_flag == "on");
      options.seed = brain_seed + i;
      options.fresh = true;  // a simulated run starts new brains, even where a run before kept some
      if (const std::string record = absl::GetFlag(FLAGS_record); !record.empty()) {
        options.record_path = robots == 1 ? record : absl::StrCat(record, ".", i);
      }
      auto made = fieldbrain::client::BrainClient::Create(std::move(options));
      if (!made.ok()) {
        std::fprintf(stderr, "brain-sim: %s\n", made.status().ToString().c_str());
        return 2;
      }
      client = *std::move(made);
    }
    fieldbrain::sim::WorldConfig world;
    if (arena == "random") world.arena = fieldbrain::sim::ArenaConfig::Random(seed + i);
    fieldbrain::sim::SimRobotOptions options;
    options.policy = *policy;
    options.send_reward = reward_flag == "on";
    options.obstacle_reflex = reflex_flag == "on";
    options.resend_rate_limited = ticks > 0;
    options.hz = hz;
    options.policy_seed = brain_seed + i;
    options.actor_critic = actor_critic;
    // In lockstep a tick waits for its answer however long the server takes (bounded, not 0).
    options.deadline = ticks > 0 ? absl::Seconds(30) : absl::Milliseconds(deadline_ms);
    fleet.push_back(std::make_unique<SimRobot>(std::move(client), std::move(world), seed + i, options));
  }

  // All robots connect in parallel; wait for them together, up to the connect timeout.
  const absl::Time connect_end = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_connect_timeout_s));
  int connected = brain ? 0 : robots;
  std::string last_error;
  for (auto& robot : fleet) {
    if (!brain) break;
    const absl::Status s =
        robot->client()->WaitConnected(std::max(connect_end - absl::Now(), absl::ZeroDuration()));
    if (s.ok()) {
      ++connected;
    } else {
      last_error = s.ToString();
    }
    if (g_signalled) break;
  }
  if (connected == 0) {
    std::fprintf(stderr, "brain-sim: could not connect to %s: %s\n", target.c_str(),
                 last_error.empty() ? "interrupted" : last_error.c_str());
    return 1;
  }
  if (connected < robots) {
    std::fprintf(stderr, "brain-sim: only %d of %d robots connected (%s); the others keep "
                         "retrying and safe-stop meanwhile\n",
                 connected, robots, last_error.c_str());
  }
  std::string server = absl::StrFormat(" (policy %s, reflex %s)", fieldbrain::sim::PolicyName(*policy),
                                       reflex_flag);
  if (!brain) {
    server = absl::StrFormat("none (policy %s, reflex %s)", fieldbrain::sim::PolicyName(*policy), reflex_flag);
  } else if (auto w = fleet.front()->client()->welcome(); w.has_value()) {
    server = absl::StrFormat(" (engine %s, field %ux%ux%ux%u, reward %s, reflex %s)", w->engine(),
                             w->field().channels(), w->field().x(), w->field().y(), w->field().z(), reward_flag,
                             reflex_flag);
  }

  std::atomic<bool> stop{false};
  const absl::Time start = absl::Now();
  const absl::Time end = ticks > 0 ? absl::InfiniteFuture() : start + absl::Seconds(seconds);
  std::atomic<int> running{robots};
  std::vector<std::thread> threads;
  for (auto& robot : fleet) {
    threads.emplace_back([&stop, &running, end, ticks, r = robot.get()] {
      if (ticks > 0) {
        r->RunLockstep(stop, ticks);
      } else {
        r->Run(stop, end);
      }
      running.fetch_sub(1);
    });
  }

  std::vector<RobotStats> totals(fleet.size());
  const auto collect = [&](RobotStats& window) {
    for (size_t i = 0; i < fleet.size(); ++i) {
      RobotStats w = fleet[i]->TakeWindow();
      totals[i].Merge(w);
      window.Merge(w);
    }
  };
  absl::Time last_report = start;
  while (!g_signalled && absl::Now() < end && running.load() > 0) {
    absl::SleepFor(absl::Milliseconds(50));
    const absl::Time now = absl::Now();
    if (now - last_report < absl::Seconds(1)) continue;
    RobotStats window;
    collect(window);
    if (!quiet) PrintLive(absl::ToDoubleSeconds(now - start), window,
                          absl::ToDoubleSeconds(now - last_report));
    last_report = now;
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  const double ran = absl::ToDoubleSeconds(absl::Now() - start);
  RobotStats rest;
  collect(rest);
  if (g_signalled) std::printf("\nbrain-sim: stopped by signal\n");
  PrintSummary(brain ? target : std::string(), server, connected, totals, ran);
  std::printf("  seeds            rooms %llu-%llu, %s %llu-%llu\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed + uint64_t(robots) - 1),
              brain ? "brains" : "policy draws", static_cast<unsigned long long>(brain_seed),
              static_cast<unsigned long long>(brain_seed + uint64_t(robots) - 1));
  PrintFirstAndLastMinute(fleet, hz);
  PrintLearningCurve(fleet);
  PrintWindows(fleet);
  for (auto& robot : fleet) {
    if (robot->client() == nullptr) continue;
    robot->client()->Close();  // writes out its recording, so the status below is final
    if (const absl::Status s = robot->client()->recording_status(); !s.ok()) {
      std::printf("  recording        %s\n", std::string(s.message()).c_str());
    }
  }
  if (const std::string record = absl::GetFlag(FLAGS_record); !record.empty() && brain) {
    std::printf("  recorded         %s%s (brain-replay --recording=...)\n", record.c_str(),
                robots == 1 ? "" : ".<robot>");
  }
  fleet.clear();  // closes every stream (and flushes every recording) before exit
  return 0;
}

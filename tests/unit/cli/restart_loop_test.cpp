// The restart loop with fake attempts and fake probes: how often a job runs,
// what is logged, which hosts each restart gets, when it gives up.
#include "supervise/restart_loop.h"

#include <signal.h>
#include <sys/wait.h>

#include <map>
#include <sstream>

#include "common/launcher_error.h"
#include "probe/host_probe.h"
#include "test_support.h"

namespace tnt::cli {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using Hosts = std::vector<std::string>;

// Wait statuses as waitpid() reports them.
int exited(int code) { return code << 8; }
int killed(int signal_number) { return signal_number; }

SupervisedResult ended(int wait_status) { return SupervisedResult{wait_status, 0, {}, 0}; }
SupervisedResult rank_failed(int wait_status, int rank) {
  return SupervisedResult{wait_status, 0, rank, 0};
}

// Plays back one result per attempt and records what each attempt was given.
class FakeJob {
 public:
  explicit FakeJob(std::vector<SupervisedResult> results) : results_(std::move(results)) {}

  RestartHooks hooks(std::ostream& log) {
    RestartHooks hooks;
    hooks.run = [this](int restart_count, const Hosts& hosts) {
      restart_counts.push_back(restart_count);
      hosts_of_attempts.push_back(hosts);
      return results_.at(restart_counts.size() - 1);
    };
    hooks.probe = [this](const Hosts& hosts) {
      probed.push_back(hosts);
      std::vector<HostProbe> probes;
      for (const auto& host : hosts) {
        const bool up = down.count(host) == 0 || down.at(host) == 0;
        if (!up) --down.at(host);
        probes.push_back({host, up ? std::nullopt : std::optional<std::string>("ssh failed")});
      }
      return probes;
    };
    hooks.log = &log;
    return hooks;
  }

  std::vector<int> restart_counts;
  std::vector<Hosts> hosts_of_attempts;
  std::vector<Hosts> probed;
  /// host -> the number of probes that find it down.
  std::map<std::string, int> down;

 private:
  std::vector<SupervisedResult> results_;
};

RestartPolicy restarts(int k) {
  RestartPolicy policy;
  policy.max_restarts = k;
  policy.pause = 0ms;
  return policy;
}

RestartPolicy on_hosts(int k, Hosts hosts, int per_node, std::optional<int> min_ranks) {
  RestartPolicy policy = restarts(k);
  policy.hosts = std::move(hosts);
  policy.ranks_per_node = per_node;
  policy.min_ranks = min_ranks;
  return policy;
}

TEST(RestartLoop, ASuccessfulJobRunsOnceAndSaysNothing) {
  FakeJob job({ended(0)});
  std::ostringstream log;
  EXPECT_EQ(run_with_restarts(restarts(3), job.hooks(log)), 0);
  EXPECT_THAT(job.restart_counts, ElementsAre(0));
  EXPECT_EQ(log.str(), "");
}

TEST(RestartLoop, AFailedRunIsRestartedAndTheRestartIsLogged) {
  FakeJob job({rank_failed(killed(SIGKILL), 1), ended(0)});
  std::ostringstream log;
  EXPECT_EQ(run_with_restarts(restarts(1), job.hooks(log)), 0);
  EXPECT_THAT(job.restart_counts, ElementsAre(0, 1));
  EXPECT_EQ(log.str(),
            "tarantella: job failed: mpirun was killed by signal 9 (Killed) (rank 1 failed "
            "first, see above); restarting (restart 1 of 1)\n");
}

TEST(RestartLoop, WithoutRestartsAFailureEndsTheJobAsBefore) {
  FakeJob job({rank_failed(exited(3), 2)});
  std::ostringstream log;
  EXPECT_EQ(run_with_restarts(restarts(0), job.hooks(log)), 3);
  EXPECT_THAT(job.restart_counts, ElementsAre(0));
  EXPECT_EQ(log.str(),
            "tarantella: job failed: mpirun exited with code 3 (rank 2 failed first, see above)\n");
}

TEST(RestartLoop, TheSummaryNamesWhatStartedTheRanks) {
  SupervisedResult result = rank_failed(exited(3), 1);
  result.starter = "srun";  // --srun inside a Slurm job
  EXPECT_EQ(failure_reason(result), "srun exited with code 3 (rank 1 failed first, see above)");
}

TEST(RestartLoop, AJobThatAlwaysFailsRunsOneMoreTimeThanItsRestarts) {
  FakeJob job({ended(exited(1)), ended(exited(1)), ended(exited(4))});
  std::ostringstream log;
  EXPECT_EQ(run_with_restarts(restarts(2), job.hooks(log)), 4);
  EXPECT_THAT(job.restart_counts, ElementsAre(0, 1, 2));
  EXPECT_THAT(log.str(), HasSubstr("restarting (restart 1 of 2)\n"));
  EXPECT_THAT(log.str(), HasSubstr("restarting (restart 2 of 2)\n"));
  EXPECT_THAT(log.str(), HasSubstr("tarantella: job failed: mpirun exited with code 4; giving up "
                                   "after 2 restarts\n"));
}

TEST(RestartLoop, AJobTheUserStoppedIsNeverRestarted) {
  SupervisedResult stopped = ended(exited(1));
  stopped.stop_signal = SIGTERM;
  FakeJob job({stopped, ended(0)});
  std::ostringstream log;
  EXPECT_EQ(run_with_restarts(restarts(5), job.hooks(log)), 128 + SIGTERM);
  EXPECT_THAT(job.restart_counts, ElementsAre(0));
  EXPECT_EQ(log.str(), "tarantella: job failed: stopped by signal 15 (Terminated)\n");
}

TEST(RestartLoop, WithoutAHostfileNothingIsProbed) {
  FakeJob job({ended(exited(1)), ended(0)});
  std::ostringstream log;
  run_with_restarts(restarts(1), job.hooks(log));
  EXPECT_TRUE(job.probed.empty());
  EXPECT_THAT(job.hosts_of_attempts, ElementsAre(Hosts{}, Hosts{}));
}

TEST(RestartLoop, UnreachableHostsAreLeftOutDownToMinRanks) {
  FakeJob job({ended(exited(255)), ended(0)});
  job.down = {{"h2", 1}};
  std::ostringstream log;
  EXPECT_EQ(run_with_restarts(on_hosts(1, {"h1", "h2", "h3"}, 2, 4), job.hooks(log)), 0);
  EXPECT_THAT(job.probed, ElementsAre(Hosts{"h1", "h2", "h3"}));
  EXPECT_THAT(job.hosts_of_attempts, ElementsAre(Hosts{"h1", "h2", "h3"}, Hosts{"h1", "h3"}));
  EXPECT_THAT(log.str(), HasSubstr("tarantella: host h2 cannot be reached (ssh failed): leaving "
                                   "it out; 2 hosts, 4 ranks remain\n"));
}

TEST(RestartLoop, EveryHostIsProbedAgainSoOneThatCameBackRejoins) {
  FakeJob job({ended(exited(1)), ended(exited(1)), ended(0)});
  job.down = {{"h1", 1}};
  std::ostringstream log;
  EXPECT_EQ(run_with_restarts(on_hosts(2, {"h1", "h2"}, 1, 1), job.hooks(log)), 0);
  EXPECT_THAT(job.probed, ElementsAre(Hosts{"h1", "h2"}, Hosts{"h1", "h2"}));
  EXPECT_THAT(job.hosts_of_attempts,
              ElementsAre(Hosts{"h1", "h2"}, Hosts{"h2"}, Hosts{"h1", "h2"}));
}

TEST(RestartLoop, TooFewRanksStopsWithTheNumbersAndTheLastExitCode) {
  FakeJob job({ended(exited(255)), ended(0)});
  job.down = {{"h2", 1}, {"h3", 1}};
  std::ostringstream log;
  try {
    run_with_restarts(on_hosts(1, {"h1", "h2", "h3"}, 2, 4), job.hooks(log));
    FAIL() << "no error";
  } catch (const LauncherError& error) {
    EXPECT_EQ(std::string(error.what()),
              "cannot restart: only 2 ranks on 1 reachable host remain, fewer than --min-ranks "
              "4: make the hosts reachable again, or give a smaller --min-ranks");
    EXPECT_EQ(error.exit_code(), 255);
  }
  EXPECT_THAT(job.restart_counts, ElementsAre(0));
  EXPECT_THAT(log.str(), HasSubstr("host h2 cannot be reached (ssh failed): leaving it out; 2 "
                                   "hosts, 4 ranks remain\n"));
  EXPECT_THAT(log.str(), HasSubstr("host h3 cannot be reached (ssh failed): leaving it out; 1 "
                                   "host, 2 ranks remain\n"));
}

TEST(HostsForRestart, WithoutMinRanksEveryHostMustBeReachable) {
  const auto policy = on_hosts(1, {"h1", "h2"}, 2, std::nullopt);
  std::ostringstream log;
  EXPECT_EQ(hosts_for_restart({{"h1", std::nullopt}, {"h2", std::nullopt}}, policy, 1, log),
            (Hosts{"h1", "h2"}));
  EXPECT_EQ(testing::error_of([&] {
              hosts_for_restart({{"h1", std::nullopt}, {"h2", "timeout"}}, policy, 1, log);
            }),
            "cannot restart: 1 of 2 hosts cannot be reached, and without --min-ranks every host "
            "must take part: give --min-ranks 2 to go on with the 2 ranks of the reachable hosts");
}

TEST(HostsForRestart, NoReachableHostIsAnErrorEvenForMinRanksOne) {
  const auto policy = on_hosts(1, {"h1", "h2"}, 1, 1);
  std::ostringstream log;
  EXPECT_THAT(testing::error_of([&] {
                hosts_for_restart({{"h1", "down"}, {"h2", "down"}}, policy, 1, log);
              }),
              HasSubstr("cannot restart: none of the 2 hosts of the hostfile can be reached"));
  EXPECT_THAT(log.str(), HasSubstr("leaving it out; 0 hosts, 0 ranks remain\n"));
}

TEST(HostsForRestart, ExactlyMinRanksIsEnough) {
  const auto policy = on_hosts(1, {"h1", "h2", "h3"}, 2, 4);
  std::ostringstream log;
  EXPECT_EQ(hosts_for_restart({{"h1", "down"}, {"h2", std::nullopt}, {"h3", std::nullopt}}, policy,
                              1, log),
            (Hosts{"h2", "h3"}));
  EXPECT_THAT(log.str(), Not(HasSubstr("h2")));
}

}  // namespace
}  // namespace tnt::cli

// Host probes before a restart: which agent is used, which hosts count as
// this node, and what a fake agent script (standing in for ssh) answers for
// hosts that are up, down or hanging.
#include "probe/host_probe.h"

#include <sys/stat.h>

#include <chrono>

#include "test_support.h"

namespace tnt::cli {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::read_text;
using testing::TempDir;
using Args = std::vector<std::string>;

// The fake agent after `d=DIR`: DIR holds its lists and its log of calls.
const char* const kAgentBody =
    "echo \"$*\" >>\"$d/calls\"\n"
    "if grep -qx \"$1\" \"$d/down\"; then\n"
    "  echo 'fake agent: some detail' >&2\n"
    "  echo \"fake agent: connect to host $1: No route to host\" >&2\n"
    "  exit 255\n"
    "fi\n"
    "if grep -qx \"$1\" \"$d/hang\"; then exec sleep 30; fi\n"
    "shift\n"
    "exec \"$@\"\n";

// A stand-in for ssh, called as `agent HOST true`: it records its
// arguments, fails like ssh for the hosts listed in `down` and never
// answers for those in `hang`.
class FakeAgent {
 public:
  explicit FakeAgent(const std::string& down = "", const std::string& hang = "") {
    dir_.write("down", down);
    dir_.write("hang", hang);
    dir_.write("calls", "");
    const std::string script = "#!/bin/sh\nd=" + dir_.str() + "\n" + kAgentBody;
    path_ = dir_.write("agent", script);
    ::chmod(path_.c_str(), 0755);
  }
  const std::string& path() const { return path_; }
  std::string calls() const { return read_text(dir_.str("calls")); }
  ProbeOptions options(std::chrono::milliseconds timeout = 10000ms) const {
    return ProbeOptions{{path_}, "launchhost", timeout};
  }

 private:
  TempDir dir_;
  std::string path_;
};

TEST(ProbeAgent, SshInBatchModeByDefault) {
  EXPECT_EQ(probe_agent({}, std::nullopt),
            (Args{"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"}));
  EXPECT_EQ(probe_agent({{"btl_tcp_if_include", "eth0"}}, std::nullopt), default_probe_agent());
}

TEST(ProbeAgent, TheAgentMpirunUsesTheLastMcaSettingWins) {
  EXPECT_EQ(probe_agent({{"plm_rsh_agent", "/bin/echo  -q  -x"}}, std::nullopt),
            (Args{"/bin/echo", "-q", "-x"}));
  EXPECT_EQ(
      probe_agent({{"plm_rsh_agent", "/bin/false"}, {"orte_rsh_agent", "/bin/echo"}}, std::nullopt),
      (Args{"/bin/echo"}));
  // mpirun's plm_rsh_args go between the agent and the host, the probe's too.
  EXPECT_EQ(probe_agent({{"plm_rsh_agent", "/bin/echo -q"}, {"plm_rsh_args", "-p  2222"}},
                        std::nullopt),
            (std::vector<std::string>{"/bin/echo", "-q", "-p", "2222"}));
  const auto with_env_args = probe_agent({}, std::nullopt, std::string("-p 2222"));
  EXPECT_EQ(std::vector<std::string>(with_env_args.end() - 2, with_env_args.end()),
            (std::vector<std::string>{"-p", "2222"}));
  EXPECT_EQ(probe_agent({{"plm_rsh_agent", "/bin/echo"}}, std::string("/bin/false")),
            (Args{"/bin/echo"}));
  EXPECT_EQ(probe_agent({}, std::string("/bin/false -v")), (Args{"/bin/false", "-v"}));
}

TEST(ProbeAgent, FirstAlternativeThatExistsLikeOpenMpi) {
  EXPECT_EQ(probe_agent({{"plm_rsh_agent", "/no/such/agent -a : /bin/echo -b"}}, std::nullopt),
            (Args{"/bin/echo", "-b"}));
  EXPECT_EQ(probe_agent({{"plm_rsh_agent", "/no/such/a : /no/such/b"}}, std::nullopt),
            (Args{"/no/such/a"}));
}

TEST(IsThisHost, LoopbackAndOwnNamesInAnyForm) {
  for (const char* host : {"localhost", "LOCALHOST", "127.0.0.1", "127.0.1.1", "::1", "node7",
                           "Node7", "node7.cluster.org"}) {
    EXPECT_TRUE(is_this_host(host, "node7")) << host;
  }
  EXPECT_TRUE(is_this_host("node7", "node7.cluster.org"));
  for (const char* host : {"node70", "node", "10.0.0.7", "other.cluster.org"}) {
    EXPECT_FALSE(is_this_host(host, "node7")) << host;
  }
  EXPECT_FALSE(is_this_host("node7", ""));
}

TEST(ProbeHosts, UnreachableHostsAreNamedWithTheAgentsLastLine) {
  const FakeAgent agent("b\n");
  const auto probes = probe_hosts({"a", "b", "c"}, agent.options());
  ASSERT_EQ(probes.size(), 3u);
  EXPECT_EQ(probes[0].host, "a");
  EXPECT_FALSE(probes[0].problem);
  EXPECT_EQ(probes[1].host, "b");
  EXPECT_EQ(
      probes[1].problem,
      agent.path() + " exited with code 255: fake agent: connect to host b: No route to host");
  EXPECT_EQ(probes[2].host, "c");
  EXPECT_FALSE(probes[2].problem);
}

TEST(ProbeHosts, TheAgentRunsTrueOnTheHost) {
  const FakeAgent agent;
  probe_hosts({"a"}, agent.options());
  EXPECT_EQ(agent.calls(), "a true\n");
}

TEST(ProbeHosts, ThisNodeIsNotProbed) {
  const FakeAgent agent("localhost\nlaunchhost\n127.0.0.1\n");
  const auto probes = probe_hosts({"localhost", "launchhost", "127.0.0.1", "x"}, agent.options());
  for (const auto& probe : probes) EXPECT_FALSE(probe.problem) << probe.host;
  EXPECT_EQ(agent.calls(), "x true\n");
}

TEST(ProbeHosts, HostsThatDoNotAnswerTimeOutTogether) {
  const FakeAgent agent("", "h1\nh2\nh3\nh4\n");
  const auto start = std::chrono::steady_clock::now();
  // 3 s: the answering host's agent (a shell and two greps, started beside
  // four others) must answer within it on a loaded machine.
  const auto probes = probe_hosts({"h1", "h2", "ok", "h3", "h4"}, agent.options(3000ms));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  for (const auto* host : {&probes[0], &probes[1], &probes[3], &probes[4]}) {
    EXPECT_EQ(host->problem, "no answer from " + agent.path() + " within 3 s") << host->host;
  }
  EXPECT_FALSE(probes[2].problem);
  // In parallel: one timeout, not four one after the other (12 s).
  EXPECT_LT(elapsed, 11000ms);
}

TEST(ProbeHosts, AnAgentThatCannotRunMakesEveryHostUnreachable) {
  const auto probes = probe_hosts({"a", "b"}, ProbeOptions{{"/no/such/agent"}, "here", 30000ms});
  ASSERT_EQ(probes.size(), 2u);
  for (const auto& probe : probes) {
    EXPECT_EQ(probe.problem, "cannot run /no/such/agent: No such file or directory");
  }
}

TEST(ProbeHosts, FailureWithoutMessageNamesTheExitStatus) {
  const auto probes = probe_hosts({"a"}, ProbeOptions{{"/bin/false"}, "here", 30000ms});
  EXPECT_EQ(probes.at(0).problem, "/bin/false exited with code 1");
}

}  // namespace
}  // namespace tnt::cli

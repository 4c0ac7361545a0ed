// Slurm's compressed host and count lists, and the allocation read from
// (fake) SLURM_* variables: what is accepted and every rejected form.
#include "probe/slurm_allocation.h"

#include <map>

#include "test_support.h"

namespace tnt::cli {
namespace {

using ::testing::ElementsAre;
using testing::error_of;
using ::testing::HasSubstr;
using Hosts = std::vector<std::string>;

Hosts hosts(const std::string& text) { return expand_host_list(text, "SLURM_JOB_NODELIST"); }
std::vector<int> counts(const std::string& text) {
  return expand_count_list(text, "SLURM_TASKS_PER_NODE");
}

TEST(SlurmHostList, PlainNamesInOrder) {
  EXPECT_EQ(hosts("gpu5"), Hosts{"gpu5"});
  EXPECT_EQ(hosts("b,a,c.example.org"), (Hosts{"b", "a", "c.example.org"}));
}

TEST(SlurmHostList, RangesKeepTheirZeroPadding) {
  EXPECT_EQ(hosts("node[01-03,07],gpu5"), (Hosts{"node01", "node02", "node03", "node07", "gpu5"}));
  EXPECT_EQ(hosts("n[8-11]"), (Hosts{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(hosts("n[098-101]"), (Hosts{"n098", "n099", "n100", "n101"}));
}

TEST(SlurmHostList, SuffixAndSeveralBracketGroups) {
  EXPECT_EQ(hosts("r[1-2]n[1-2]-ib"), (Hosts{"r1n1-ib", "r1n2-ib", "r2n1-ib", "r2n2-ib"}));
}

TEST(SlurmHostList, BadListsNameTheVariableAndTheValue) {
  EXPECT_THAT(error_of([] { hosts(""); }), HasSubstr("SLURM_JOB_NODELIST='' is empty"));
  EXPECT_THAT(error_of([] { hosts("node[01-03"); }),
              HasSubstr("SLURM_JOB_NODELIST='node[01-03' has an unclosed '['"));
  EXPECT_THAT(error_of([] { hosts("node01]"); }), HasSubstr("has a stray ']'"));
  EXPECT_THAT(error_of([] { hosts("node[3-1]"); }), HasSubstr("has a bad range '[3-1]'"));
  EXPECT_THAT(error_of([] { hosts("node[a-b]"); }), HasSubstr("has a bad range '[a-b]'"));
  EXPECT_THAT(error_of([] { hosts("node[]"); }), HasSubstr("has a bad range '[]'"));
  EXPECT_THAT(error_of([] { hosts("a,,b"); }), HasSubstr("has an empty or blank host name"));
  EXPECT_THAT(error_of([] { hosts("a b"); }), HasSubstr("has an empty or blank host name"));
  EXPECT_THAT(error_of([] { hosts("n[0-99999999]"); }), HasSubstr("bad range"));
  EXPECT_THAT(error_of([] { hosts("x[1-2"); }), HasSubstr("node[01-03,07],gpu5"));
}

TEST(SlurmCountList, RepeatsAndSingles) {
  EXPECT_THAT(counts("2(x3),1"), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(counts("4"), ElementsAre(4));
  EXPECT_THAT(counts("1,2(x1),3"), ElementsAre(1, 2, 3));
}

TEST(SlurmCountList, BadListsNameTheEntry) {
  EXPECT_THAT(error_of([] { counts(""); }), HasSubstr("SLURM_TASKS_PER_NODE='' is empty"));
  EXPECT_THAT(error_of([] { counts("0"); }), HasSubstr("has a bad entry '0'"));
  EXPECT_THAT(error_of([] { counts("2(x0)"); }), HasSubstr("has a bad entry '2(x0)'"));
  EXPECT_THAT(error_of([] { counts("2(3)"); }), HasSubstr("has a bad entry '2(3)'"));
  EXPECT_THAT(error_of([] { counts("2(x3"); }), HasSubstr("has a bad entry '2(x3'"));
  EXPECT_THAT(error_of([] { counts("two"); }), HasSubstr("has a bad entry 'two'"));
  EXPECT_THAT(error_of([] { counts("1,,1"); }), HasSubstr("has a bad entry ''"));
  EXPECT_THAT(error_of([] { counts("-1"); }), HasSubstr("2(x3),1"));
}

using Env = std::map<std::string, std::string>;
EnvLookup lookup(const Env& env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

Env three_tasks_on_two_nodes() {
  return {{"SLURM_JOB_ID", "42"},
          {"SLURM_JOB_NODELIST", "node[01-02]"},
          {"SLURM_TASKS_PER_NODE", "2,1"},
          {"SLURM_NTASKS", "3"}};
}

TEST(SlurmAllocation, NoneOutsideSlurm) {
  EXPECT_FALSE(read_slurm_allocation(lookup({})));
  EXPECT_FALSE(read_slurm_allocation(lookup({{"SLURM_JOB_NODELIST", "a"}})));
}

TEST(SlurmAllocation, HostsTasksAndJob) {
  const auto a = read_slurm_allocation(lookup(three_tasks_on_two_nodes()));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->job_id, "42");
  EXPECT_EQ(a->hosts, (Hosts{"node01", "node02"}));
  EXPECT_THAT(a->tasks_per_node, ElementsAre(2, 1));
  EXPECT_EQ(a->total_tasks(), 3);
  EXPECT_FALSE(a->gpus_per_node);
  EXPECT_EQ(a->node_list_text, "node[01-02]");
}

TEST(SlurmAllocation, GpusPerNodeWithOrWithoutType) {
  Env env = three_tasks_on_two_nodes();
  env["SLURM_GPUS_PER_NODE"] = "a100:2";
  EXPECT_EQ(read_slurm_allocation(lookup(env))->gpus_per_node, 2);
  env["SLURM_GPUS_PER_NODE"] = "4";
  EXPECT_EQ(read_slurm_allocation(lookup(env))->gpus_per_node, 4);
  env["SLURM_GPUS_PER_NODE"] = "0";
  EXPECT_FALSE(read_slurm_allocation(lookup(env))->gpus_per_node);
  env["SLURM_GPUS_PER_TASK"] = "h100:1";
  EXPECT_EQ(read_slurm_allocation(lookup(env))->gpus_per_task, 1);
  env["SLURM_GPUS_PER_TASK"] = "one";
  EXPECT_THAT(error_of([&] { read_slurm_allocation(lookup(env)); }),
              HasSubstr("SLURM_GPUS_PER_TASK='one' is not a GPU count"));
  env.erase("SLURM_GPUS_PER_TASK");
  env["SLURM_GPUS_PER_NODE"] = "a100:lots";
  EXPECT_THAT(error_of([&] { read_slurm_allocation(lookup(env)); }),
              HasSubstr("SLURM_GPUS_PER_NODE='a100:lots' is not a GPU count"));
}

TEST(SlurmAllocation, MissingOrMismatchedVariablesAreErrors) {
  Env env = three_tasks_on_two_nodes();
  env.erase("SLURM_TASKS_PER_NODE");
  EXPECT_THAT(error_of([&] { read_slurm_allocation(lookup(env)); }),
              HasSubstr("SLURM_JOB_ID=42 is set but SLURM_TASKS_PER_NODE is not"));
  env = three_tasks_on_two_nodes();
  env["SLURM_TASKS_PER_NODE"] = "1(x3)";
  EXPECT_THAT(error_of([&] { read_slurm_allocation(lookup(env)); }),
              HasSubstr("SLURM_TASKS_PER_NODE='1(x3)' gives 3 task count(s) but "
                        "SLURM_JOB_NODELIST='node[01-02]' names 2 host(s)"));
}

TEST(SlurmAllocation, OneLauncherPerJobNotOnePerSrunTask) {
  Env env = three_tasks_on_two_nodes();
  env["SLURM_STEP_NUM_TASKS"] = "3";
  env["SLURM_PROCID"] = "1";
  EXPECT_THAT(error_of([&] { read_slurm_allocation(lookup(env)); }),
              HasSubstr("tarantella runs as task 1 of 3 tasks of an srun step"));
  env["SLURM_STEP_NUM_TASKS"] = "1";  // `srun -n1 tarantella` or salloc's interactive step
  EXPECT_TRUE(read_slurm_allocation(lookup(env)));
}

}  // namespace
}  // namespace tnt::cli

// --dry-run text: comments, then `env` assignments, then the quoted command.
#include "plan/dry_run.h"

#include "test_support.h"

namespace tnt::cli {
namespace {

TEST(DryRun, PrintsNotesAssignmentsAndQuotedCommand) {
  LaunchPlan plan;
  plan.notes = {"2 rank(s) on this node, on the CPU"};
  plan.environment = {{"A", "1"}, {"B", "two words"}};
  plan.argv = {"mpirun", "-np", "2", "-x", "A", "-x", "B", "/p", "it's"};
  EXPECT_EQ(format_dry_run(plan),
            "# 2 rank(s) on this node, on the CPU\n"
            "env \\\n"
            "  A=1 \\\n"
            "  'B=two words' \\\n"
            "  mpirun -np 2 -x A -x B /p 'it'\\''s'\n");
}

TEST(DryRun, NoEnvPrefixWithoutAssignments) {
  LaunchPlan plan;
  plan.argv = {"mpirun", "-np", "1", "/p"};
  EXPECT_EQ(format_dry_run(plan), "mpirun -np 1 /p\n");
}

}  // namespace
}  // namespace tnt::cli

// split_into_stages (groups.h): two splits of the model's group.
#include "stages/groups.h"

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include <tarantella/base/argument_error.h>

namespace tnt::stages {
namespace {

std::string role(int stage, int stages, int pipeline) {
  return fmt::format("stage {} of {}, pipeline {}", stage, stages, pipeline);
}

}  // namespace

StageGroups split_into_stages(const comm::ProcessGroup& group, const PipelineSettings& settings) {
  TNT_CHECK_ARG(settings.micro_batches >= 1, "micro_batches must be at least 1, got ",
                settings.micro_batches);
  StageGroups g;
  g.layout = stage_layout(group.size(), group.rank(), settings.stages);
  g.settings = settings;
  // Ordered by replica within a stage, by stage within a pipeline.
  g.stage = group.split(g.layout.stage, g.layout.replica);
  g.pipeline = group.split(g.layout.replica, g.layout.stage);
  // A stage that fails or hangs is named by its rank in the job, its
  // stage and its pipeline, whichever of its groups notices it.
  std::vector<std::string> replica_roles, stage_roles;
  for (int d = 0; d < g.layout.replicas; ++d) {
    replica_roles.push_back(role(g.layout.stage, g.layout.stages, d));
  }
  for (int s = 0; s < g.layout.stages; ++s) {
    stage_roles.push_back(role(s, g.layout.stages, g.layout.replica));
  }
  // The launcher's wrapper of this rank (tarantella rank-exec) names a
  // rank that dies by a signal with this role: it gives the file to write
  // it to in TNT_RANK_ROLE_FILE (src/cli/rank/rank_exec.cpp).
  if (const char* role_file = std::getenv("TNT_RANK_ROLE_FILE")) {
    std::ofstream(role_file, std::ios::trunc)
        << role(g.layout.stage, g.layout.stages, g.layout.replica);
  }
  g.stage.name_ranks(std::move(replica_roles));
  g.pipeline.name_ranks(std::move(stage_roles));
  // The model's own copy of its group (the same ranks in the same order),
  // so that its ranks can be named too without renaming the caller's
  // (often the world): the stop vote, the straggler report's gather and
  // the master's logs run on it.
  g.whole = group.split(0, group.rank());
  std::vector<std::string> roles;
  for (int r = 0; r < group.size(); ++r) {
    const StageLayout l = stage_layout(group.size(), r, settings.stages);
    roles.push_back(role(l.stage, l.stages, l.replica));
  }
  g.whole.name_ranks(std::move(roles));
  return g;
}

}  // namespace tnt::stages

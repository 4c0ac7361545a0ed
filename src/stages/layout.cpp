// stage_layout: pipelines of consecutive ranks, stages' replica groups
// strided by the stage count (layout.h).
#include "stages/layout.h"

#include <fmt/format.h>

#include <tarantella/base/argument_error.h>

namespace tnt::stages {

std::string StageLayout::describe() const {
  return fmt::format("stage {} of {}, replica {} of {}", stage, stages, replica, replicas);
}

StageLayout stage_layout(int ranks, int rank, int stages) {
  TNT_CHECK_ARG(stages >= 1, "pipeline_stages must be at least 1, got ", stages);
  TNT_CHECK_ARG(ranks >= 1 && rank >= 0 && rank < ranks, "rank ", rank, " is not one of ", ranks,
                " ranks");
  TNT_CHECK_ARG(ranks % stages == 0, ranks, " ranks cannot run ", stages,
                " pipeline stages: the number of ranks must be a multiple of ", stages,
                " (start ", (ranks / stages + 1) * stages, " ranks, or choose a pipeline_stages ",
                "that divides ", ranks, ")");
  StageLayout l;
  l.stages = stages;
  l.replicas = ranks / stages;
  l.stage = rank % stages;
  l.replica = rank / stages;
  for (int s = 0; s < stages; ++s) l.pipeline_ranks.push_back(l.replica * stages + s);
  for (int d = 0; d < l.replicas; ++d) l.stage_ranks.push_back(d * stages + l.stage);
  return l;
}

}  // namespace tnt::stages

// split_into_stages (groups.h): two splits of the model's group.
#include "stages/groups.h"

#include <tarantella/base/argument_error.h>

namespace tnt::stages {

StageGroups split_into_stages(const comm::ProcessGroup& group, const PipelineSettings& settings) {
  TNT_CHECK_ARG(settings.micro_batches >= 1, "micro_batches must be at least 1, got ",
                settings.micro_batches);
  StageGroups g;
  g.layout = stage_layout(group.size(), group.rank(), settings.stages);
  g.settings = settings;
  // Ordered by replica within a stage, by stage within a pipeline.
  g.stage = group.split(g.layout.stage, g.layout.replica);
  g.pipeline = group.split(g.layout.replica, g.layout.stage);
  g.whole = group;
  return g;
}

}  // namespace tnt::stages

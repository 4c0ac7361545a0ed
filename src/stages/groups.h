// Private: the process groups of a pipelined model, split from the group
// it trains on (layout.h has the rule): the stage group (this stage's D
// replicas, which reduce its gradients together, as data parallelism does)
// and the pipeline group (this replica's P stages, stage s its rank s, for
// the sends between neighbours).
#pragma once

#include <tarantella/comm/process_group.h>

#include "stages/layout.h"
#include "stages/schedule.h"

namespace tnt::stages {

/// What a pipelined model is asked for (tnt::PipelineOptions, or Python's
/// keywords), checked.
struct PipelineSettings {
  int stages = 1;
  int micro_batches = 1;
  Schedule schedule = Schedule::one_f_one_b;
};

struct StageGroups {
  StageLayout layout;
  comm::ProcessGroup stage;     ///< this stage's replicas (the engine's group)
  comm::ProcessGroup pipeline;  ///< this replica's stages
  comm::ProcessGroup whole;     ///< every stage of every replica: the model's group (its own copy)
  PipelineSettings settings;
};

/// Splits `group` for `settings.stages` stages, and names the new groups'
/// ranks by stage and pipeline (ProcessGroup::name_ranks), so that their
/// errors say "rank 3 (stage 1 of 2, pipeline 1)". Collective over `group`.
/// Throws tnt::ArgumentError (on every rank alike) when the group's size is
/// not a multiple of the stages.
StageGroups split_into_stages(const comm::ProcessGroup& group, const PipelineSettings& settings);

}  // namespace tnt::stages

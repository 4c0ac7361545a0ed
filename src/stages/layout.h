// Private: where a rank sits when N ranks run D = N / P replicas of a
// P-stage pipeline. A pipeline is P consecutive ranks (the launcher fills
// a host's slots with consecutive ranks, so a pipeline's stages share the
// fewest hosts and its sends stay on a host where they can); a stage's D
// replicas (stage s of every pipeline) reduce that stage's gradients
// together, as data parallelism does.
//
//   N = 8, P = 4:  pipeline 0 = ranks 0 1 2 3, pipeline 1 = ranks 4 5 6 7
//                  stage 0's replica group = ranks 0 4, stage 1's = 1 5, ...
#pragma once

#include <string>
#include <vector>

namespace tnt::stages {

struct StageLayout {
  int stages = 1;    ///< P
  int replicas = 1;  ///< D = N / P
  int stage = 0;     ///< this rank's stage, 0 .. P-1
  int replica = 0;   ///< this rank's pipeline, 0 .. D-1
  /// The P ranks of this rank's pipeline, stage 0 first.
  std::vector<int> pipeline_ranks;
  /// The D ranks that hold this rank's stage, replica 0 first.
  std::vector<int> stage_ranks;

  bool first_stage() const { return stage == 0; }
  bool last_stage() const { return stage == stages - 1; }
  /// "stage 1 of 4, replica 0 of 2": for messages.
  std::string describe() const;
};

/// The layout of `rank` among `ranks` ranks with `stages` stages. Throws
/// tnt::ArgumentError when the ranks are not a multiple of the stages.
StageLayout stage_layout(int ranks, int rank, int stages);

}  // namespace tnt::stages

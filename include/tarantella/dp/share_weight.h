// The weight of a rank's gradient in a step, n_r / B, from a loader's
// BatchShare: one definition for the C++ and the Python DistributedOptimizer.
#pragma once

#include <functional>
#include <memory>

#include <tarantella/data/batch_share.h>

namespace tnt::dp {

/// n_r / B from `share` (the loader's share of the current batch; an error
/// if no batch was handed out yet), or 1 / `ranks` without a share. Meant as
/// the weight source of GradientSynchronizer::begin_step, which asks it when
/// the step's first gradient arrives, once the step's batch is known.
///
/// Example: sync.begin_step(tnt::dp::share_weight(loader->share(), group.size()), true);
std::function<double()> share_weight(std::shared_ptr<const data::BatchShare> share, int ranks);

}  // namespace tnt::dp

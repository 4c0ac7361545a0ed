// Private: the public API's default process group, one definition for every
// public entry point that takes an optional group (tnt::Model,
// DistributedOptimizer, load_model, latest_checkpoint).
#pragma once

#include <tarantella/comm/process_group.h>

namespace tnt {

/// `given` if it is a group handle; else the world group of the running
/// runtime; else (no runtime) a new one-rank group.
comm::ProcessGroup default_group(const comm::ProcessGroup& given = comm::ProcessGroup());

}  // namespace tnt

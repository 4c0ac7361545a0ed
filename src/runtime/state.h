// Private: the process-wide view of the alive runtime, for the free
// functions of the public API (get_rank(), tnt::comm::allreduce(), ...).
// Exactly one tnt::Runtime may be alive; it registers itself here.
#pragma once

#include <tarantella/runtime/config.h>

namespace tnt::comm {
class Communicator;
class CommEngine;
}  // namespace tnt::comm

namespace tnt::detail {

struct RuntimeView {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  const Config* config = nullptr;
  comm::Communicator* communicator = nullptr;
  comm::CommEngine* engine = nullptr;
};

/// The alive runtime, or nullptr.
const RuntimeView* runtime_view();
/// The alive runtime; throws tnt::Error naming `caller` if there is none.
const RuntimeView& require_runtime(const char* caller);
void register_runtime(const RuntimeView* view);

/// Logging state: the rank printed in each line and the level in force.
void configure_logging(int rank, const Config& config);

}  // namespace tnt::detail

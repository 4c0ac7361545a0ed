// The thread rule; see thread_rule.h.
#include "rank/thread_rule.h"

#include <algorithm>

#include <tarantella/base/env_contract.h>

namespace tnt::cli {

int threads_per_rank(int cores_on_node, int ranks_on_node) {
  return env::threads_per_rank(cores_on_node, ranks_on_node);
}

}  // namespace tnt::cli

// The thread rule; see thread_rule.h.
#include "thread_rule.h"

#include <algorithm>

namespace tnt::cli {

int threads_per_rank(int cores_on_node, int ranks_on_node) {
  if (ranks_on_node < 1) ranks_on_node = 1;
  return std::max(1, cores_on_node / ranks_on_node);
}

}  // namespace tnt::cli

// Error construction. The rank prefix comes from the logging state, which the
// runtime fills in at start-up (base/ knows nothing of communicators).
#include <tarantella/base/error.h>

#include <tarantella/base/logging.h>

namespace tnt {

Error::Error(const std::string& message) : std::runtime_error(message) {}

namespace detail {
void throw_error(const std::string& message) {
  const int rank = log::process_rank();
  if (rank >= 0) throw Error(concat("[tarantella rank ", rank, "] ", message));
  throw Error("[tarantella] " + message);
}
}  // namespace detail
}  // namespace tnt

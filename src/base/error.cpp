// Error construction. The rank prefix comes from the logging state, which the
// runtime fills in at start-up (base/ knows nothing of communicators).
#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>

#include <tarantella/base/logging.h>

namespace tnt {

Error::Error(const std::string& message) : std::runtime_error(message) {}

namespace detail {
namespace {
std::string with_rank(const std::string& message) {
  const int rank = log::process_rank();
  if (rank >= 0) return concat("[tarantella rank ", rank, "] ", message);
  return "[tarantella] " + message;
}
}  // namespace

void throw_error(const std::string& message) { throw Error(with_rank(message)); }

void throw_argument_error(const std::string& message) { throw ArgumentError(with_rank(message)); }
}  // namespace detail
}  // namespace tnt

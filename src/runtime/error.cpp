#include <tarantella/runtime/error.h>

#include "runtime/state.h"

namespace tnt {

Error::Error(const std::string& message) : std::runtime_error(message) {}

namespace detail {
void throw_error(const std::string& message) {
  if (const RuntimeView* view = runtime_view()) {
    throw Error(concat("[tarantella rank ", view->rank, "] ", message));
  }
  throw Error("[tarantella] " + message);
}
}  // namespace detail
}  // namespace tnt

#include "io/master_checked.h"

#include <tarantella/base/error.h>

namespace tnt {

void run_on_master_checked(const comm::ProcessGroup& group, const std::function<void()>& action) {
  std::string error;
  if (group.is_master()) {
    try {
      action();
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "unknown error";
    }
  }
  const std::string message = group.broadcast_string(error);
  if (message.empty()) return;
  if (group.is_master()) throw Error(message);
  detail::throw_error("the master rank failed: " + message);
}

}  // namespace tnt

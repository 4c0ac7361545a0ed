#include "runtime/default_group.h"

#include <tarantella/comm/in_process.h>
#include <tarantella/runtime/runtime.h>

namespace tnt {

comm::ProcessGroup default_group(const comm::ProcessGroup& given) {
  if (given.valid()) return given;
  if (is_initialized()) return world();
  return comm::make_in_process_group(1).front();
}

}  // namespace tnt

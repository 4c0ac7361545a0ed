// Private: file work done by a group's master on behalf of every rank, with
// the master's failure raised on every rank (no rank waits for a file that
// will never come, and every log says why).
#pragma once

#include <functional>

#include <tarantella/comm/process_group.h>

namespace tnt {

/// Runs `action` on the group's master only; if it throws, every rank
/// throws the master's message. Collective. Used for file writes and reads.
void run_on_master_checked(const comm::ProcessGroup& group, const std::function<void()>& action);

}  // namespace tnt

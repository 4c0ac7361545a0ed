// Private: the training loop's reads of device values on the host, in one
// place. Reading a tensor that lives on a GPU makes the host wait for every
// kernel queued before it (a host synchronisation): the step then stops
// running ahead of the device, and the GPU idles while the host queues the
// next kernels. So the step keeps its loss and metric state on the device,
// and these functions are the only way the loop reads device values
// (scripts/check_host_sync.py keeps it so). Each read is counted, so that a
// test can assert how many a step makes (tests/unit/host_sync_test.cpp):
// none at the defaults, one per drawn progress bar, one for the loss
// scaler's verdict, one per epoch for its logs.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace tnt::train {

/// The values of a float64 state tensor (any device), on the host.
std::vector<double> read_state(const torch::Tensor& state);
/// Whether a one-element tensor (any device) is non-zero.
bool read_flag(const torch::Tensor& flag);
/// How many reads the two functions above made in this process so far.
std::int64_t host_reads();

}  // namespace tnt::train

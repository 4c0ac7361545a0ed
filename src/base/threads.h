// Private: the intra-op thread count of a rank and the BLAS check. Debian's
// LibTorch starts with one thread and calls whichever libblas.so.3 the system
// alternatives point at; both silently cost an order of magnitude in speed.
#pragma once

#include <string>

#include <c10/core/Device.h>

#include <tarantella/base/config.h>

namespace tnt::detail {

/// Cores this process may run on (its CPU affinity mask), at least 1.
int available_cores();

/// The thread rule: the configured count if set, else cores / local ranks,
/// at least 1.
int decide_num_threads(const Config& config, int cores, int local_size);

struct BlasInfo {
  std::string library;     ///< resolved path of the library providing sgemm_
  bool is_reference = false;  ///< the slow netlib reference implementation
};
/// Finds the BLAS library LibTorch resolved `sgemm_` to.
BlasInfo detect_blas();

/// Names the calling thread (at most 15 characters are kept), so that
/// `top -H`, `ps -L` and /proc/PID/task/TID/comm tell the library's
/// threads apart: tnt-comm, tnt-watchdog, tnt-timeline, tnt-events.
void name_this_thread(const char* name);

/// Makes `device` the calling thread's current device for good; nothing for
/// a CPU device. For threads the library starts (the comm engine, the
/// prefetch thread, the stage link's driver, the checkpoint writer) before
/// their first CUDA call on a rank whose GPU is not cuda:0. A new thread's
/// current device is 0, and a guard (c10::Event's record, block and
/// destruction use one) restores it with a real cudaSetDevice(0), which
/// creates a context of about 0.5 GiB on GPU 0 per rank: rank 0's GPU runs
/// out of memory on a full node. Not a guard, so nothing restores 0 later.
void adopt_device(const c10::Device& device);

}  // namespace tnt::detail

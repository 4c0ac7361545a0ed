#include "base/threads.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <tarantella/base/env_contract.h>

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <thread>

namespace tnt::detail {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    return std::max(1, CPU_COUNT(&set));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

int decide_num_threads(const Config& config, int cores, int local_size) {
  if (config.num_threads) return std::max(1, *config.num_threads);
  return env::threads_per_rank(cores, local_size);
}

BlasInfo detect_blas() {
  BlasInfo info;
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info where{};
  if (sgemm == nullptr || dladdr(sgemm, &where) == 0 || where.dli_fname == nullptr) {
    return info;
  }
  char resolved[PATH_MAX];
  info.library = realpath(where.dli_fname, resolved) ? resolved : where.dli_fname;
  // OpenBLAS, BLIS and MKL export entry points of their own from the same
  // library that provides sgemm_. Look only inside that library: LibTorch may
  // also link libopenblas directly while sgemm_ still resolves to netlib's
  // reference BLAS (Debian installs it as .../blas/libblas.so.3).
  bool optimized = false;
  if (void* lib = dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) {
    for (const char* marker : {"openblas_get_config", "bli_info_get_version_str",
                               "mkl_get_version"}) {
      optimized = optimized || dlsym(lib, marker) != nullptr;
    }
    dlclose(lib);
  }
  info.is_reference = !optimized && info.library.find("/blas/libblas.so") != std::string::npos;
  return info;
}

void name_this_thread(const char* name) {
  char truncated[16] = {};
  for (int i = 0; i < 15 && name[i] != '\0'; ++i) truncated[i] = name[i];
  pthread_setname_np(pthread_self(), truncated);  // a failure only loses the name
}

void adopt_device(const c10::Device& device) {
  if (device.is_cpu() || !device.has_index()) return;
  const c10::impl::DeviceGuardImplInterface* impl = c10::impl::getDeviceGuardImpl(device.type());
  if (impl->getDevice() != device) impl->setDevice(device);
}

}  // namespace tnt::detail

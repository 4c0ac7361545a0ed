#include "base/malloc_tuning.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <tarantella/base/error.h>

namespace tnt::detail {

std::string tune_malloc(bool enabled,
                        const std::function<std::optional<std::string>(const char*)>& lookup,
                        const MalloptFn& set) {
  if (!enabled) return "malloc left as it is (TNT_MALLOC_TUNING=false)";
  for (const char* name : kGlibcMallocVariables) {
    if (lookup(name)) return concat("malloc left as it is (", name, " is set)");
  }
#if defined(__GLIBC__)
  // Both at once: setting either one turns off glibc's dynamic mmap
  // threshold, and either alone measured slower than glibc's default.
  const MalloptFn apply = set ? set : [](int param, int value) { return mallopt(param, value); };
  if (apply(M_MMAP_THRESHOLD, static_cast<int>(kMmapThreshold)) != 1 ||
      apply(M_TRIM_THRESHOLD, static_cast<int>(kTrimThreshold)) != 1) {
    return "malloc left as it is (glibc refused the thresholds)";
  }
  return concat("malloc: blocks above ", kMmapThreshold >> 20,
                " MiB mmapped, up to ", kTrimThreshold >> 20,
                " MiB of free heap kept (TNT_MALLOC_TUNING=false leaves glibc's defaults)");
#else
  return "malloc left as it is (not glibc)";
#endif
}

}  // namespace tnt::detail

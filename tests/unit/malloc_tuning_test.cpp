// The start-up malloc settings (base/malloc_tuning.h). Each test runs in a
// process of its own (EACH_CASE in tests/unit/CMakeLists.txt), so what one
// sets does not leak into the next.
#include <gtest/gtest.h>

#include <malloc.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/malloc_tuning.h"

namespace {

std::optional<std::string> nothing_set(const char*) { return std::nullopt; }

// Whether a fresh block of `bytes` comes from mmap() (a new mapped block
// while it is alive).
bool served_by_mmap(std::size_t bytes) {
  const std::size_t before = mallinfo2().hblks;
  void* p = std::malloc(bytes);
  const bool mapped = mallinfo2().hblks > before;
  std::memset(p, 1, 64);
  std::free(p);
  return mapped;
}

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

TEST(MallocTuning, AStepsWorthOfBlocksIsNotFaultedInAgainEveryStep) {
  const std::string note = tnt::detail::tune_malloc(true, nothing_set);
  ASSERT_NE(note.find("32 MiB"), std::string::npos) << note;
  EXPECT_FALSE(served_by_mmap(1u << 20)) << note;
  EXPECT_FALSE(served_by_mmap(24u << 20)) << "below the threshold, from the heap";
  // Ten "steps", each allocating, touching and freeing 24 MiB of
  // activations in blocks of 8 MiB: after the first, the pages are reused
  // (glibc's default faulted in all of them again whenever it mmapped the
  // blocks or trimmed the heap: ~6,000 faults per step).
  const std::size_t block = 8u << 20;
  const auto step = [&] {
    std::vector<void*> blocks;
    for (int i = 0; i < 3; ++i) {
      blocks.push_back(std::malloc(block));
      std::memset(blocks.back(), i, block);
    }
    for (void* p : blocks) std::free(p);
  };
  step();
  const long before = minor_faults();
  for (int i = 0; i < 10; ++i) step();
  const long faults = minor_faults() - before;
  EXPECT_LT(faults, 1000) << "pages faulted in again: " << faults << " minor faults in 10 steps";
}

TEST(MallocTuning, TheUsersGlibcVariablesWin) {
  for (const char* name : tnt::detail::kGlibcMallocVariables) {
    int calls = 0;
    const std::string note = tnt::detail::tune_malloc(
        true,
        [&](const char* asked) {
          return std::strcmp(asked, name) == 0 ? std::optional<std::string>("1048576")
                                               : std::nullopt;
        },
        [&](int, int) { return ++calls, 1; });
    EXPECT_NE(note.find(std::string(name) + " is set"), std::string::npos) << note;
    EXPECT_EQ(calls, 0) << "malloc was changed although the user set " << name;
  }
}

TEST(MallocTuning, OffWhenDisabledAndSaysSoWhenGlibcRefuses) {
  int calls = 0;
  const auto count = [&](int, int) { return ++calls, 1; };
  const std::string off = tnt::detail::tune_malloc(false, nothing_set, count);
  EXPECT_NE(off.find("TNT_MALLOC_TUNING=false"), std::string::npos) << off;
  EXPECT_EQ(calls, 0);
  std::vector<std::pair<int, int>> asked;
  const std::string on = tnt::detail::tune_malloc(true, nothing_set, [&](int param, int value) {
    asked.emplace_back(param, value);
    return 1;
  });
  EXPECT_EQ(asked, (std::vector<std::pair<int, int>>{{M_MMAP_THRESHOLD, 32 << 20},
                                                     {M_TRIM_THRESHOLD, 128 << 20}}));
  const std::string refused = tnt::detail::tune_malloc(true, nothing_set, [](int, int) { return 0; });
  EXPECT_NE(refused.find("refused"), std::string::npos) << refused;
}

}  // namespace

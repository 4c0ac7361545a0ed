// main() for GoogleTest binaries that run as several ranks under the
// launcher. A failed assertion on any rank prints itself (to stderr, so it
// is seen from every rank) and ends that process at once; the launcher then
// brings the whole job down. The other ranks never wait for a peer that has
// stopped following the test.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include <tarantella/tarantella.h>

namespace {

class FailFast : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d of %d] FAILED at %s:%d\n%s\n", tnt::get_rank(),
                 tnt::get_size(), result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.message());
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(1);
  }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tnt::Runtime runtime(argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(new FailFast);
  return RUN_ALL_TESTS();
}

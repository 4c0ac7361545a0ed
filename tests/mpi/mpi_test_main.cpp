// main() for GoogleTest binaries that run as several ranks under the
// launcher. A failed assertion on any rank prints itself (to stderr, so it
// is seen from every rank) and ends that process at once; the launcher then
// brings the whole job down. The other ranks never wait for a peer that has
// stopped following the test.
//
// On a GPU, float32 is float32 here: TF32 (on by default for cuDNN's
// convolutions) rounds their inputs to 10 bits, far beyond the 1e-5 at
// which the tests compare a model with a plain LibTorch loop.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include <ATen/Context.h>

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
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setAllowTF32CuBLAS(false);
  tnt::Runtime runtime(argc, argv);
  // With peers, a failed check ends the rank at once, so that the others
  // never wait for it in a collective; alone, the program goes on and
  // reports every failure (one device run says as much as it can).
  if (tnt::get_size() > 1) ::testing::UnitTest::GetInstance()->listeners().Append(new FailFast);
  return RUN_ALL_TESTS();
}

// The first program of the installation chapter (docs/guide/installation.md):
// a complete program built against Tarantella, from this tree in CI or from
// an installed package with find_package(Tarantella). CI runs it at 2 ranks.
// [snippet:installation_hello]
#include <iostream>

#include <tarantella/tarantella.h>

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  torch::Tensor ones = torch::ones({4});
  tnt::comm::allreduce(ones);  // every element becomes the number of ranks
  if (tnt::is_master_rank()) {
    std::cout << "tarantella " << tnt::version() << ": " << tnt::get_size() << " rank(s), "
              << "allreduce gave " << ones[0].item<float>() << "\n";
  }
  return ones[0].item<float>() == tnt::get_size() ? 0 : 1;
}
// [end]

// The smallest Tarantella program: start the runtime, ask who we are, and
// sum a tensor over all ranks.
//   tarantella -n 4 -- ./hello
#include <iostream>

#include <tarantella/tarantella.h>

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  torch::Tensor t = torch::full({3}, tnt::get_rank() + 1.0);
  tnt::comm::allreduce(t);  // every rank now holds 1 + 2 + ... + N
  torch::Tensor gathered = tnt::comm::allgather(torch::tensor({tnt::get_rank()}));
  if (tnt::is_master_rank()) {
    std::cout << "tarantella " << tnt::version() << ": " << tnt::get_size() << " ranks\n"
              << "allreduce(sum) of rank+1: " << t[0].item<double>() << " (expected "
              << tnt::get_size() * (tnt::get_size() + 1) / 2 << ")\n"
              << "allgather of ranks: " << gathered << "\n";
  }
  return 0;
}

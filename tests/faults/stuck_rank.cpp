// Rank 1 of 2 gets stuck in its own code (a long sleep in a function of
// its own) before a collective that rank 0 has reached: the timeout report
// must say where rank 1 is (tests/faults/stuck_rank.sh). Built as a user
// would: Release, without -rdynamic, so the function is named from the
// program's .symtab, not from the dynamic symbol table.
#include <tarantella/tarantella.h>

#include <chrono>
#include <cstdio>
#include <thread>

__attribute__((noinline)) void stuck_in_user_code() {
  std::fprintf(stderr, "rank 1 is stuck now\n");
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::hours(1));
}

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  torch::Tensor t = torch::ones({4});
  tnt::comm::allreduce(t, tnt::comm::ReduceOp::Sum);
  if (tnt::get_rank() == 1) stuck_in_user_code();
  tnt::comm::allreduce(t, tnt::comm::ReduceOp::Sum);
  return 0;
}

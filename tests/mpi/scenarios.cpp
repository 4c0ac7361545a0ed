// Failure scenarios that must end the whole job quickly and name the rank;
// run under the launcher by tests/mpi/expect_failure.sh, which checks exit
// status, elapsed time and output. Usage: mpi_scenarios MODE
//   timeout       rank 1 arrives late; the others must fail naming rank 1
//   throw         rank 1 throws; the others wait in an allreduce
//   exit          rank 1 exits with code 3 without shutting down
//   early-return  rank 1 leaves main normally while the others still
//                 call a collective: the shutdown check must catch it
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include <tarantella/tarantella.h>

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  tnt::Runtime runtime(argc, argv);
  const bool culprit = tnt::get_rank() == 1;
  tnt::comm::barrier();
  try {
    if (mode == "timeout") {
      if (culprit) std::this_thread::sleep_for(std::chrono::seconds(30));
      tnt::comm::allreduce(torch::ones({10}));
    } else if (mode == "throw") {
      if (culprit) throw std::runtime_error("rank 1 fails on purpose");
      tnt::comm::allreduce(torch::ones({10}));
    } else if (mode == "exit") {
      if (culprit) std::exit(3);
      tnt::comm::allreduce(torch::ones({10}));
    } else if (mode == "early-return") {
      if (culprit) return 0;
      tnt::comm::allreduce(torch::ones({10}));
    } else {
      std::fprintf(stderr, "unknown mode '%s': use timeout, throw, exit or early-return\n",
                   mode.c_str());
      return 2;
    }
  } catch (const tnt::Error& e) {
    std::fprintf(stderr, "rank %d caught: %s\n", tnt::get_rank(), e.what());
    return 1;
  }
  std::printf("rank %d finished the scenario\n", tnt::get_rank());
  return 0;
}

// A program that spends nearly all its time inside the payload of
// collectives: allreduces of 64 MiB, forever. Stopping one of its ranks
// (SIGSTOP) thus lands inside a payload, after every rank agreed to it, which
// only the payload watchdog can time out (tests/faults/stalled_rank.sh).
#include <cstdio>

#include <tarantella/tarantella.h>

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  torch::Tensor t = torch::ones({16 << 20});
  for (long step = 0;; ++step) {
    tnt::comm::allreduce(t, tnt::comm::ReduceOp::Average);
    if (step == 0 && tnt::is_master_rank()) {
      std::printf("Epoch 1/1 (allreduce of 64 MiB in a loop)\n");
      std::fflush(stdout);
    }
  }
}

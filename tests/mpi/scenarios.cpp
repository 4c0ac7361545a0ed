// Failure scenarios that must end the whole job quickly and name the rank;
// run under the launcher by tests/mpi/expect_failure.sh, which checks exit
// status, elapsed time and output. Usage: mpi_scenarios MODE
//   timeout       rank 1 arrives late; the others must fail naming rank 1
//   throw         rank 1 throws; the others wait in an allreduce
//   exit          rank 1 exits with code 3 without shutting down
//   p2p-exit      rank 1, a pipeline stage, exits with code 3 before it
//                 sends its activations to rank 2; rank 0 waits in a barrier
//   p2p-hang      the same, but rank 1 hangs (sleeps) instead
//   early-return  rank 1 leaves main normally while the others still
//                 call a collective: the shutdown check must catch it
//   library-error rank 2 (its host lacks the data set) gets a tnt::Error
//                 from the library that nobody catches; the others wait
//   library-error-caught  the same, but main catches it, prints it and
//                 returns 1, as a careful user's main does
//   checkpoint-loop DIR    saves a 32 MB model to DIR/ckpt.pt over and over,
//                 generation g with every weight equal to g, until killed
//   checkpoint-verify DIR  loads DIR/ckpt.pt: every weight must be one g
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include <fstream>

#include <unistd.h>

#include <torch/torch.h>

#include <tarantella/tarantella.h>

namespace {

tnt::Model big_model() {
  tnt::Model model{torch::nn::Linear(2048, 4096)};
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.1))
                    .loss(tnt::losses::MeanSquaredError()));
  return model;
}

int checkpoint_loop(const std::string& dir) {
  tnt::Model model = big_model();
  std::ofstream(dir + "/pid.rank" + std::to_string(tnt::get_rank())) << ::getpid();
  for (int g = 1;; ++g) {
    {
      torch::NoGradGuard no_grad;
      for (auto& [name, p] : model.named_parameters()) p.fill_(static_cast<float>(g));
    }
    model.save(dir + "/ckpt.pt");
    if (g == 1 && tnt::is_master_rank()) std::ofstream(dir + "/ready") << "1";
  }
}

// A library error on one rank only: Fashion-MNIST is not where it is looked for.
void load_missing_data() {
  if (tnt::get_rank() == 2) tnt::data::datasets::fashion_mnist("train", "/nonexistent/tnt-data");
}

int checkpoint_verify(const std::string& dir) {
  tnt::Model model = big_model();
  model.load(dir + "/ckpt.pt");
  const float g = model.named_parameters()[0].second.flatten()[0].item<float>();
  for (auto& [name, p] : model.named_parameters()) {
    if (!torch::all(p == g).item<bool>()) {
      std::fprintf(stderr, "checkpoint mixes generations: %s is not all %g\n", name.c_str(), g);
      return 1;
    }
  }
  std::printf("checkpoint intact: generation %g\n", g);
  return g >= 1 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  tnt::Runtime runtime(argc, argv);
  if (mode == "checkpoint-loop" && argc > 2) return checkpoint_loop(argv[2]);
  if (mode == "checkpoint-verify" && argc > 2) return checkpoint_verify(argv[2]);
  const bool culprit = tnt::get_rank() == 1;
  tnt::comm::barrier();
  // The culprit calls mark() just before it fails (or starts to hang):
  // expect_failure.sh counts the time to the job's end from there, not
  // from the launch (start-up on a loaded machine is not what it measures).
  const auto mark = [] {
    if (const char* path = std::getenv("TNT_TEST_MARK")) {
      std::ofstream(path) << std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    }
  };
  if (mode == "library-error") {
    load_missing_data();
    tnt::comm::allreduce(torch::ones({10}));
    return 0;
  }
  try {
    if (mode == "library-error-caught") {
      load_missing_data();
      tnt::comm::allreduce(torch::ones({10}));
    } else if (mode == "timeout" || mode == "timeout-cached") {
      // timeout-cached: every rank has this descriptor cached already.
      if (mode == "timeout-cached") tnt::comm::allreduce(torch::ones({10}));
      if (culprit) {
        mark();
        std::this_thread::sleep_for(std::chrono::seconds(30));
      }
      tnt::comm::allreduce(torch::ones({10}));
    } else if (mode == "throw") {
      if (culprit) {
        mark();
        throw std::runtime_error("rank 1 fails on purpose");
      }
      tnt::comm::allreduce(torch::ones({10}));
    } else if (mode == "exit") {
      if (culprit) {
        mark();
        std::exit(3);
      }
      tnt::comm::allreduce(torch::ones({10}));
    } else if (mode == "p2p-exit" || mode == "p2p-hang") {
      // Rank 2 waits for rank 1's activations, as the next stage does.
      if (culprit) mark();
      if (culprit && mode == "p2p-exit") std::exit(3);
      if (culprit) std::this_thread::sleep_for(std::chrono::seconds(30));
      if (tnt::get_rank() == 2) {
        tnt::world().recv(torch::zeros({4, 8}), 1, 0, "stage 1 activations");
      }
      tnt::comm::barrier();
    } else if (mode == "early-return") {
      if (culprit) {
        mark();
        return 0;
      }
      tnt::comm::allreduce(torch::ones({10}));
    } else {
      std::fprintf(stderr,
                   "unknown mode '%s': use timeout, timeout-cached, throw, exit, p2p-exit, p2p-hang, "
                   "early-return, library-error or library-error-caught\n",
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

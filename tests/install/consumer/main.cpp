// A user's program built against the installed Tarantella package.
#include <cstdio>

#include <tarantella/tarantella.h>

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  torch::Tensor t = torch::ones({4});
  tnt::comm::allreduce(t);
  const bool ok = torch::equal(t, torch::full({4}, float(tnt::get_size())));
  if (tnt::is_master_rank()) {
    std::printf("tarantella %s: %d rank(s), allreduce %s\n", tnt::version(), tnt::get_size(),
                ok ? "ok" : "WRONG");
  }
  return ok ? 0 : 1;
}

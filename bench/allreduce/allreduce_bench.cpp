// Allreduce bus bandwidth of tnt::comm::allreduce (engine thread + handshake
// + MPI) side by side with a raw MPI_Allreduce loop on the same data, and a
// single-thread memcpy as the memory-bandwidth ceiling, all in one run.
// Trials of the two allreduce variants alternate so that machine noise hits
// both alike; each figure is the median of the trials.
//
//   busbw = bytes * 2(N-1)/N / time   (the nccl-tests convention)
//
// Run: tarantella -n 2 -- build/bench/allreduce/bench_allreduce [--max-mib 64]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/tarantella.h>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Iterations per trial so that a trial lasts ~50 ms, agreed across ranks
// (every rank must run the same number of collectives).
int iterations_for(std::size_t bytes) {
  const double estimate_s = 2e-5 + bytes / 2e9;
  return std::clamp(static_cast<int>(0.05 / estimate_s), 3, 2000);
}

double time_tnt(torch::Tensor& t, int iters) {
  tnt::comm::barrier();
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) tnt::comm::allreduce(t);
  return seconds_since(start) / iters;
}

double time_raw(torch::Tensor& t, MPI_Comm comm, int iters) {
  MPI_Barrier(comm);
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) {
    MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()), MPI_FLOAT, MPI_SUM,
                  comm);
  }
  return seconds_since(start) / iters;
}

double time_memcpy(std::size_t bytes, int iters) {
  std::vector<char> a(bytes, 1), b(bytes, 0);
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) {
    std::memcpy(b.data(), a.data(), bytes);
    a[i % bytes] = b[(i * 7) % bytes];  // keep the copies observable
  }
  return seconds_since(start) / iters;
}

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  int max_mib = 64;
  int trials = 7;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--max-mib") max_mib = std::stoi(argv[i + 1]);
    if (std::string(argv[i]) == "--trials") trials = std::stoi(argv[i + 1]);
  }
  const int n = tnt::get_size();
  // A communicator of our own for the raw loop; the engine is idle whenever
  // the main thread calls MPI here (every tnt call is waited for).
  MPI_Comm raw = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw);

  if (tnt::is_master_rank()) {
    fmt::print("allreduce float32 sum, N = {} ranks, median of {} trials\n", n, trials);
    fmt::print("| size | tnt time | raw MPI time | tnt busbw GB/s | raw MPI busbw GB/s | tnt / raw | "
               "memcpy GB/s |\n");
    fmt::print("|---:|---:|---:|---:|---:|---:|---:|\n");
  }
  for (std::size_t bytes = 4096; bytes <= std::size_t(max_mib) << 20; bytes *= 4) {
    torch::Tensor t = torch::ones({static_cast<std::int64_t>(bytes / 4)});
    const int iters = iterations_for(bytes);
    std::vector<double> tnt_s, raw_s;
    time_tnt(t, 2);  // warm-up: buffers, connections
    time_raw(t, raw, 2);
    for (int k = 0; k < trials; ++k) {
      tnt_s.push_back(time_tnt(t, iters));
      raw_s.push_back(time_raw(t, raw, iters));
    }
    const double copy_s = time_memcpy(bytes, std::max(3, iters));
    const double factor = 2.0 * (n - 1) / n;
    const double tnt_bw = bytes * factor / median(tnt_s) / 1e9;
    const double raw_bw = bytes * factor / median(raw_s) / 1e9;
    if (tnt::is_master_rank()) {
      const std::string size = bytes >= (1u << 20) ? fmt::format("{} MiB", bytes >> 20)
                                                   : fmt::format("{} KiB", bytes >> 10);
      fmt::print("| {} | {:.2f} us | {:.2f} us | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", size,
                 median(tnt_s) * 1e6, median(raw_s) * 1e6, tnt_bw, raw_bw, tnt_bw / raw_bw,
                 bytes / copy_s / 1e9);
      std::fflush(stdout);
    }
  }
  MPI_Comm_free(&raw);
  return 0;
}

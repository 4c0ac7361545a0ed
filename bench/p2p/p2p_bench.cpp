// Point-to-point transfers, in one run each:
//
//  pingpong (2 ranks): tnt's send/recv (header, ack, checks, the neighbour
//    wait policy) against raw MPI_Send/MPI_Recv on the same buffers, at
//    8 B to 16 MiB; one-way time (half the round trip) and bandwidth.
//    Trials of the two alternate so that machine noise hits both alike;
//    each figure is the median of the trials.
//
//  oversubscribed (3 ranks on 2 cores): ranks 1 and 2 compute (matrix
//    products on one thread each) while rank 0 waits for a message that
//    rank 2 sends when it is done, as a pipeline stage waits for the one
//    before it. How rank 0 waits: tnt's recv (NeighbourWait: spins 20 us,
//    yields to 200 us, naps up to 500 us), a busy MPI_Test loop (a
//    blocking MPI_Recv spins the same way), the collectives' own policy
//    (wait_on_peers: yields up to 20 ms, naps up to 50 us), and a 5 ms
//    sleep between tests as the idle reference. Figures: the computing
//    ranks' time (the slower of the two) against the idle reference, and
//    the CPU time of the waiting thread.
//
// Run: tarantella -n 2 -- build/bench/p2p/bench_p2p pingpong [--trials 7]
//      tarantella -n 3 -- build/bench/p2p/bench_p2p oversubscribed [--trials 5]
#include <mpi.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/tarantella.h>

#include "comm/poll.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ---- ping-pong ----

int iterations_for(std::size_t bytes) {
  const double estimate_s = 2 * (5e-6 + bytes / 4e9);
  return std::clamp(static_cast<int>(0.05 / estimate_s), 3, 5000);
}

// One-way seconds: half of a round trip, averaged over `iters`.
double time_tnt(torch::Tensor& buf, int iters) {
  const tnt::comm::ProcessGroup& g = tnt::world();
  const int peer = 1 - g.rank();
  g.barrier();
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) {
    if (g.rank() == 0) {
      g.send(buf, peer, 0, "ping");
      g.recv(buf, peer, 0, "pong");
    } else {
      g.recv(buf, peer, 0, "ping");
      g.send(buf, peer, 0, "pong");
    }
  }
  return seconds_since(start) / iters / 2;
}

double time_raw(torch::Tensor& buf, MPI_Comm comm, int iters) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const int peer = 1 - rank;
  const int n = static_cast<int>(buf.nbytes());
  MPI_Barrier(comm);
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      MPI_Send(buf.data_ptr(), n, MPI_BYTE, peer, 0, comm);
      MPI_Recv(buf.data_ptr(), n, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf.data_ptr(), n, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
      MPI_Send(buf.data_ptr(), n, MPI_BYTE, peer, 0, comm);
    }
  }
  return seconds_since(start) / iters / 2;
}

std::string size_text(std::size_t bytes) {
  if (bytes >= (1u << 20)) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

void pingpong(MPI_Comm comm, int trials) {
  if (tnt::get_size() != 2) {
    if (tnt::is_master_rank()) fmt::print("pingpong needs 2 ranks\n");
    return;
  }
  if (tnt::is_master_rank()) {
    fmt::print("| size | tnt one-way | raw MPI one-way | tnt / raw | tnt GB/s | raw GB/s |\n");
    fmt::print("|---:|---:|---:|---:|---:|---:|\n");
  }
  for (std::size_t bytes : {std::size_t{8}, std::size_t{4} << 10, std::size_t{64} << 10,
                            std::size_t{1} << 20, std::size_t{16} << 20}) {
    torch::Tensor buf = torch::ones({static_cast<std::int64_t>(bytes)}, torch::kUInt8);
    const int iters = iterations_for(bytes);
    time_tnt(buf, 2);  // warm: channels, caches
    time_raw(buf, comm, 2);
    std::vector<double> tnt_s, raw_s;
    for (int t = 0; t < trials; ++t) {
      tnt_s.push_back(time_tnt(buf, iters));
      raw_s.push_back(time_raw(buf, comm, iters));
    }
    const double a = median(tnt_s), b = median(raw_s);
    if (tnt::is_master_rank()) {
      fmt::print("| {} | {:.2f} us | {:.2f} us | {:.2f} | {:.2f} | {:.2f} |\n", size_text(bytes),
                 a * 1e6, b * 1e6, a / b, bytes / a / 1e9, bytes / b / 1e9);
    }
  }
}

// ---- oversubscribed: a waiting rank beside computing ones ----

double compute(int products) {
  torch::Tensor a = torch::rand({256, 256});
  const torch::Tensor b = torch::rand({256, 256}) / 256;
  const auto start = Clock::now();
  for (int i = 0; i < products; ++i) a = torch::mm(a, b);
  volatile float sink = a[0][0].item<float>();
  (void)sink;
  return seconds_since(start);
}

enum class Wait { Tnt, BusySpin, CollectivePolicy, Idle };
const char* wait_name(Wait w) {
  switch (w) {
    case Wait::Tnt: return "tnt recv (neighbour wait)";
    case Wait::BusySpin: return "busy MPI_Test loop";
    case Wait::CollectivePolicy: return "collectives' wait policy";
    case Wait::Idle: return "idle reference (5 ms sleeps)";
  }
  return "?";
}

// Rank 0 waits for rank 2's 4 bytes in the way `how` says.
void wait_for_message(Wait how, MPI_Comm comm) {
  torch::Tensor in = torch::zeros({1});
  if (how == Wait::Tnt) {
    tnt::world().recv(in, 2, 0, "stage 2 output");
    return;
  }
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Irecv(in.data_ptr(), 4, MPI_BYTE, 2, 0, comm, &req);
  const auto done = [&] {
    int flag = 0;
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  };
  if (how == Wait::CollectivePolicy) {
    tnt::comm::wait_on_peers(done, tnt::comm::PollClock::time_point::max(),
                             tnt::comm::PollClock::time_point::max(), [] {});
    return;
  }
  while (!done()) {
    if (how == Wait::Idle) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void send_message(Wait how, MPI_Comm comm) {
  torch::Tensor out = torch::ones({1});
  if (how == Wait::Tnt) {
    tnt::world().send(out, 0, 0, "stage 2 output");
  } else {
    MPI_Send(out.data_ptr(), 4, MPI_BYTE, 0, 0, comm);
  }
}

struct Trial {
  double compute_s = 0;     // the slower computing rank
  double wait_cpu_s = 0;    // rank 0's thread
  double wait_wall_s = 0;
};

Trial one_trial(Wait how, int products, MPI_Comm comm) {
  const int rank = tnt::get_rank();
  MPI_Barrier(comm);
  Trial t;
  double mine = 0;
  if (rank == 0) {
    const double cpu = thread_cpu_seconds();
    const auto start = Clock::now();
    wait_for_message(how, comm);
    t.wait_wall_s = seconds_since(start);
    t.wait_cpu_s = thread_cpu_seconds() - cpu;
  } else {
    mine = compute(products);
    if (rank == 2) send_message(how, comm);
  }
  MPI_Reduce(&mine, &t.compute_s, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  return t;
}

void oversubscribed(MPI_Comm comm, int trials, int products) {
  if (tnt::get_size() != 3) {
    if (tnt::is_master_rank()) fmt::print("oversubscribed needs 3 ranks (on 2 cores)\n");
    return;
  }
  const std::vector<Wait> ways = {Wait::Idle, Wait::Tnt, Wait::BusySpin, Wait::CollectivePolicy};
  std::vector<std::vector<Trial>> runs(ways.size());
  for (Wait w : ways) one_trial(w, products / 4, comm);  // warm
  for (int t = 0; t < trials; ++t) {
    for (std::size_t i = 0; i < ways.size(); ++i) runs[i].push_back(one_trial(ways[i], products, comm));
  }
  if (!tnt::is_master_rank()) return;
  std::vector<double> idle;
  for (const Trial& t : runs[0]) idle.push_back(t.compute_s);
  const double reference = median(idle);
  fmt::print("| rank 0 waits with | computing ranks' time | vs idle | waiting thread's CPU | "
             "CPU / wait |\n|---|---:|---:|---:|---:|\n");
  for (std::size_t i = 0; i < ways.size(); ++i) {
    std::vector<double> c, cpu, share;
    for (const Trial& t : runs[i]) {
      c.push_back(t.compute_s);
      cpu.push_back(t.wait_cpu_s);
      share.push_back(t.wait_cpu_s / t.wait_wall_s);
    }
    fmt::print("| {} | {:.0f} ms | {:.2f} | {:.1f} ms | {:.0f} % |\n", wait_name(ways[i]),
               median(c) * 1e3, median(c) / reference, median(cpu) * 1e3, median(share) * 100);
  }
}

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  torch::set_num_threads(1);
  std::string mode = argc > 1 ? argv[1] : "pingpong";
  int trials = mode == "pingpong" ? 7 : 5;
  int products = 400;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--trials") == 0) trials = std::stoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--products") == 0) products = std::stoi(argv[i + 1]);
  }
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (mode == "pingpong") {
    pingpong(comm, trials);
  } else if (mode == "oversubscribed") {
    oversubscribed(comm, trials, products);
  } else if (tnt::is_master_rank()) {
    fmt::print(stderr, "unknown mode '{}': use pingpong or oversubscribed\n", mode);
  }
  MPI_Comm_free(&comm);
  return 0;
}

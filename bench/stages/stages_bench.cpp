// Pipeline stages' throughput, bubble and memory (tarantella -n P --
// bench_stages): a balanced MLP of `layers` Linear+ReLU blocks of `width`.
//
// Throughput, side by side in one job, one thread per rank in all four:
//  1. rank 0 alone, whole batches;
//  2. rank 0 alone, each batch as the same M micro-batches accumulated
//     (what micro-batching alone costs: M smaller GEMMs, M passes over the
//     weight gradients instead of one);
//  3. data parallelism on the P ranks (each rank 1/P of every batch);
//  4. the model cut into P stages over the P ranks, M micro-batches, 1F1B.
// Prints samples per second, the ratios, and the ceiling that the bubble
// leaves: P·M/(M+P-1) over run 2.
//
// The bubble, when the job runs under --timeline FILE: rank 0 reads the
// trace that run 4 wrote last (its timed steps: the last `steps` of each
// stage) and measures, per step, the pipeline's span (from the earliest
// "forward 0" of any stage to the latest end of "backward M-1" or "weights
// M-1") and each stage's busy time in it (its "forward i", "backward i" and
// "weights i" slices, the last stage's loss included; "weights i" is the
// second half of a split backward, on the stages after the first); a
// stage's bubble is 1 - busy / span, the
// GPipe paper's idle share, printed as the mean over stages and steps next
// to the theoretical (P-1)/(M+P-1), and the bubble that 1F1B would leave
// with the measured stage times and instant transfers (Bubble).
//
// --memory: each rank trains its part (P > 1: the stage; P = 1: the whole
// model) for `steps` steps and reports its parameter count, its peak
// resident memory (max RSS; it includes the whole Sequential, built before
// the cut), its resident memory before building the model (LibTorch and
// MPI alone) and after training; run it at -n 4 and -n 1 to compare a
// stage with the unsplit model.
//
//   tarantella -n 2 --timeline /tmp/stages.json -- build/bench/stages/bench_stages
//       --width 1024 --layers 8 --batch 256 --micro-batches 8 --steps 20   (one line)
//   tarantella -n 4 -- build/bench/stages/bench_stages --memory --steps 5
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <tarantella/data/dataset.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/optimizers.h>
#include <tarantella/model/model.h>
#include <tarantella/model/pipeline.h>
#include <tarantella/runtime/runtime.h>

#include "stages/schedule.h"

namespace {

struct Settings {
  int width = 1024;
  int layers = 8;
  int batch = 256;
  int micro_batches = 8;
  int steps = 20;
  int warmup = 3;
  bool memory = false;
};

torch::nn::Sequential mlp(const Settings& s) {
  torch::manual_seed(1);
  torch::nn::Sequential net;
  for (int i = 0; i < s.layers; ++i) {
    net->push_back(torch::nn::Linear(s.width, s.width));
    net->push_back(torch::nn::ReLU());
  }
  return net;
}

tnt::data::Dataset batches(const Settings& s, int count) {
  const auto n = static_cast<std::int64_t>(s.batch) * count;
  return tnt::data::Dataset::from_tensor_slices(
             {torch::randn({n, s.width}), torch::randn({n, s.width})})
      .batch(s.batch);
}

// Samples per second of `steps` steps after `warmup` (two fits: the first
// warms up, the second is timed).
// With `accumulate` > 1, each global batch as that many smaller batches
// whose gradients are accumulated.
double throughput(tnt::Model& model, const Settings& s, int accumulate = 1) {
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.001))
                    .loss(tnt::losses::MeanSquaredError())
                    .aggregation_frequency(accumulate));
  Settings part = s;
  part.batch = s.batch / accumulate;
  model.fit(batches(part, s.warmup * accumulate), tnt::FitOptions().epochs(1).verbose(0));
  model.group().barrier();
  const auto begin = std::chrono::steady_clock::now();
  model.fit(batches(part, s.steps * accumulate), tnt::FitOptions().epochs(1).verbose(0));
  model.group().barrier();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return static_cast<double>(s.batch) * s.steps / seconds;
}

// Resident memory now (VmRSS) and at its peak (max RSS), in MiB.
double rss_now_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

double rss_peak_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

// Every rank's parameters and memory, printed by rank 0.
void report_memory(const Settings& s) {
  const int p = tnt::get_size();
  const double before = rss_now_mib();
  std::int64_t parameters = 0;
  double peak = 0;
  double after = 0;
  {
    torch::nn::Sequential net = mlp(s);
    tnt::Model model = p > 1 ? tnt::Model(net, tnt::PipelineOptions().stages(p).micro_batches(
                                                   s.micro_batches))
                             : tnt::Model(net);
    net = nullptr;  // the model keeps only its stage
    for (const auto& [name, t] : model.named_parameters()) parameters += t.numel();
    model.compile(tnt::CompileOptions()
                      .optimizer(tnt::optimizers::SGD(0.001, 0.9))
                      .loss(tnt::losses::MeanSquaredError()));
    model.fit(batches(s, s.steps), tnt::FitOptions().epochs(1).verbose(0));
    peak = rss_peak_mib();
    after = rss_now_mib();
  }
  const torch::Tensor all = tnt::world().allgather(
      torch::tensor({before, peak, after, static_cast<double>(parameters)}, torch::kFloat64));
  if (tnt::get_rank() != 0) return;
  std::printf("MLP %d x %d, batch %d, %d steps, SGD with momentum, %s\n", s.layers, s.width,
              s.batch, s.steps, p > 1 ? "one stage per rank" : "unsplit on 1 rank");
  for (int r = 0; r < p; ++r) {
    const auto* v = all.data_ptr<double>() + 4 * r;
    std::printf("rank %d: %8.0f parameters, max RSS %6.1f MiB (%6.1f MiB before the model, "
                "%6.1f MiB over it), %6.1f MiB over it after training\n",
                r, v[3], v[1], v[0], v[1] - v[0], v[2] - v[0]);
  }
}

// The bubble of the pipeline's timed steps, from the trace at `path` (the
// header comment says how).
struct Bubble {
  double mean = 0;
  std::vector<double> per_stage;
  int steps = 0;
  /// The bubble that 1F1B leaves with these stages' own compute times
  /// (unequal stages: the slowest sets the pace) and instant transfers:
  /// the schedule (stages::stage_actions) replayed with each stage's mean
  /// forward, backward and weights time per micro-batch (simulate_1f1b).
  double with_stage_times = 0;
};

// The mean bubble of one 1F1B step whose stage s takes t[s] = {forward,
// backward to its input's gradient, weights} per micro-batch, with instant
// transfers: each stage runs its actions in stages::stage_actions' order,
// a forward once the stage before has that micro-batch's output, a
// backward once the stage after has its input's gradient; the weights
// follow their backward on the same stage.
double simulate_1f1b(const std::vector<std::array<double, 3>>& t, int micro_batches) {
  const int stages = static_cast<int>(t.size());
  std::vector<std::vector<tnt::stages::Action>> actions;
  for (int s = 0; s < stages; ++s) {
    actions.push_back(tnt::stages::stage_actions(tnt::stages::Schedule::one_f_one_b, s, stages,
                                                 micro_batches));
  }
  const double never = -1;
  // [stage][micro]: when its forward's output, its input's gradient, are ready.
  std::vector<std::vector<double>> forward_done(stages, std::vector<double>(micro_batches, never));
  std::vector<std::vector<double>> backward_done = forward_done;
  std::vector<std::size_t> next(stages, 0);
  std::vector<double> clock(stages, 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < stages; ++s) {
      while (next[s] < actions[s].size()) {
        const tnt::stages::Action a = actions[s][next[s]];
        const int i = a.micro_batch;
        double ready = clock[s];
        if (a.kind == tnt::stages::Action::forward) {
          if (s > 0 && forward_done[s - 1][i] == never) break;
          if (s > 0) ready = std::max(ready, forward_done[s - 1][i]);
          clock[s] = forward_done[s][i] = ready + t[s][0];
        } else {
          if (s + 1 < stages && backward_done[s + 1][i] == never) break;
          if (s + 1 < stages) ready = std::max(ready, backward_done[s + 1][i]);
          backward_done[s][i] = ready + t[s][1];
          clock[s] = backward_done[s][i] + t[s][2];
        }
        ++next[s];
        moved = true;
      }
    }
  }
  const double span = *std::max_element(clock.begin(), clock.end());
  double bubble = 0;
  for (const auto& u : t) bubble += (1.0 - micro_batches * (u[0] + u[1] + u[2]) / span) / stages;
  return bubble;
}

Bubble measure_bubble(const std::string& path, int stages, int micro_batches, int steps) {
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  struct Slice {
    double begin, end;
  };
  // [stage][name] -> the slices in time order.
  std::vector<std::map<std::string, std::vector<Slice>>> by_stage(stages);
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X" || e.value("tid", -1) != 0) continue;
    const int pid = e["pid"].get<int>();
    if (pid >= stages) continue;  // one pipeline: ranks 0..P-1
    const double b = e["ts"].get<double>();
    by_stage[pid][e["name"].get<std::string>()].push_back({b, b + e["dur"].get<double>()});
  }
  Bubble out;
  out.per_stage.assign(stages, 0);
  // [stage][forward, backward, weights]: summed over the steps.
  std::vector<std::array<double, 3>> unit(stages, {0, 0, 0});
  const auto count = by_stage[0]["forward 0"].size();
  const std::size_t first = count > static_cast<std::size_t>(steps) ? count - steps : 0;
  for (std::size_t k = first; k < count; ++k) {
    double begin = 1e300, end = 0;
    const std::string last = std::to_string(micro_batches - 1);
    for (auto& st : by_stage) {
      begin = std::min(begin, st["forward 0"].at(k).begin);
      end = std::max(end, st["backward " + last].at(k).end);
      // A stage after the first splits its backward: the weights' last.
      if (st.count("weights " + last) != 0) end = std::max(end, st["weights " + last].at(k).end);
    }
    for (int s = 0; s < stages; ++s) {
      double busy = 0;
      for (int i = 0; i < micro_batches; ++i) {
        const char* kinds[] = {"forward ", "backward ", "weights "};
        for (int j = 0; j < 3; ++j) {
          const auto it = by_stage[s].find(kinds[j] + std::to_string(i));
          if (it == by_stage[s].end()) continue;  // no split backward on this stage
          const double d = it->second.at(k).end - it->second.at(k).begin;
          busy += d;
          unit[s][j] += d / micro_batches;
        }
      }
      out.per_stage[s] += 1.0 - busy / (end - begin);
    }
    ++out.steps;
  }
  for (double& b : out.per_stage) {
    b /= std::max(out.steps, 1);
    out.mean += b / stages;
  }
  for (auto& u : unit) {
    for (double& x : u) x /= std::max(out.steps, 1);
  }
  out.with_stage_times = simulate_1f1b(unit, micro_batches);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  CLI::App app{"pipeline stages against one rank"};
  app.add_option("--width", s.width);
  app.add_option("--layers", s.layers);
  app.add_option("--batch", s.batch);
  app.add_option("--micro-batches", s.micro_batches);
  app.add_option("--steps", s.steps);
  app.add_flag("--memory", s.memory, "report each rank's parameters and peak memory instead");
  CLI11_PARSE(app, argc, argv);
  tnt::Runtime runtime(argc, argv);
  torch::set_num_threads(1);
  if (s.memory) {
    report_memory(s);
    return 0;
  }
  const int p = tnt::get_size();
  double alone = 0;
  double micro_batched = 0;
  {
    // Rank 0 alone; the others take part only in the split.
    const tnt::comm::ProcessGroup own = tnt::world().split(tnt::get_rank() == 0 ? 0 : -1);
    if (tnt::get_rank() == 0) {
      tnt::Model model(mlp(s), own);
      alone = throughput(model, s);
      tnt::Model accumulating(mlp(s), own);
      micro_batched = throughput(accumulating, s, s.micro_batches);
    }
    tnt::world().barrier();
  }
  double data_parallel = 0;
  {
    tnt::Model replicas(mlp(s));
    data_parallel = throughput(replicas, s);
  }
  tnt::Model staged(mlp(s), tnt::PipelineOptions().stages(p).micro_batches(s.micro_batches));
  const double pipelined = throughput(staged, s);
  const char* trace = std::getenv("TNT_TIMELINE");
  if (tnt::get_rank() == 0) {
    const double m = s.micro_batches;
    std::printf("MLP %d x %d, batch %d, %d steps, one thread per rank\n", s.layers, s.width,
                s.batch, s.steps);
    std::printf("1 rank, whole batches:          %10.1f samples/s\n", alone);
    std::printf("1 rank, %2d micro-batches:       %10.1f samples/s\n", s.micro_batches,
                micro_batched);
    std::printf("%d ranks, data parallel:         %10.1f samples/s\n", p, data_parallel);
    std::printf("%d stages x %2d micro-batches:   %10.1f samples/s\n", p, s.micro_batches,
                pipelined);
    std::printf("stages over 1 rank's whole batches %.3f, over its same micro-batches %.3f, "
                "over data parallelism %.3f; ceiling P*M/(M+P-1) = %.3f\n",
                pipelined / alone, pipelined / micro_batched, pipelined / data_parallel,
                p * m / (m + p - 1));
    if (trace != nullptr && *trace != 0) {
      const Bubble b = measure_bubble(trace, p, s.micro_batches, s.steps);
      std::printf("bubble over %d steps, from the trace: %.3f (stages:", b.steps, b.mean);
      for (double x : b.per_stage) std::printf(" %.3f", x);
      std::printf("); theory (P-1)/(M+P-1) = %.3f; measured/theory %.2f; with these stages' "
                  "compute times and instant transfers %.3f\n",
                  (p - 1) / (m + p - 1), b.mean / ((p - 1) / (m + p - 1)), b.with_stage_times);
    } else {
      std::printf("bubble: run under --timeline FILE to measure it from the trace; theory "
                  "(P-1)/(M+P-1) = %.3f\n",
                  (p - 1) / (m + p - 1));
    }
  }
  return 0;
}

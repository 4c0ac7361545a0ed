// The conceptual chapters of the user guide (why.md, data_parallelism.md,
// points_to_consider.md, advanced.md) as one program that CI runs at 2
// ranks. Regions between "// [snippet:NAME]" and "// [end]" appear verbatim
// in the guide; tests/docs/check_snippets.py keeps the two equal. The
// program also checks what the text claims: the serial loop and tnt::Model
// give the same weights, and two runs after tnt::set_seed are bitwise equal.
//
// Run it:   tarantella -n 2 -- ./doc_snippet_advanced
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <torch/torch.h>

#include <tarantella/tarantella.h>

namespace {

// [snippet:why_serial]
// Serial LibTorch: one process, the whole batch of 32.
void train_serial(torch::nn::Linear net, torch::Tensor x, torch::Tensor y) {
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.1));
  for (int epoch = 0; epoch < 5; ++epoch) {
    for (std::int64_t start = 0; start < x.size(0); start += 32) {
      torch::Tensor xb = x.slice(0, start, start + 32), yb = y.slice(0, start, start + 32);
      sgd.zero_grad();
      torch::nn::functional::cross_entropy(net->forward(xb), yb).backward();
      sgd.step();
    }
  }
}
// [end]

// [snippet:why_tarantella]
// Tarantella: the same training on every rank of the job, same batch of 32.
void train_tarantella(torch::nn::Linear net, torch::Tensor x, torch::Tensor y) {
  auto train = tnt::data::Dataset::from_tensor_slices({x, y}).batch(32);
  tnt::Model model{net};
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.1))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  model.fit(train, tnt::FitOptions().epochs(5).verbose(0));
}
// [end]

void same_result_at_any_rank_count() {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({100, 8});
  const torch::Tensor y = x.slice(1, 0, 4).argmax(1);
  torch::manual_seed(4);
  torch::nn::Linear serial(8, 4);
  torch::manual_seed(4);
  torch::nn::Linear distributed(8, 4);
  train_serial(serial, x, y);
  train_tarantella(distributed, x, y);
  TNT_CHECK(torch::allclose(serial->weight, distributed->weight, /*rtol=*/1e-4, /*atol=*/1e-6),
            "tnt::Model at ", tnt::get_size(), " ranks differs from the serial loop by ",
            (serial->weight - distributed->weight).abs().max().item<double>());
}

void show_allreduce() {
  // [snippet:data_parallelism_allreduce]
  // The collective behind data parallelism: after it, every rank holds the sum.
  torch::Tensor t = torch::full({3}, double(tnt::get_rank() + 1));
  tnt::comm::allreduce(t);  // ranks 0..N-1: every element is 1 + 2 + ... + N
  // [end]
  const double n = tnt::get_size();
  TNT_CHECK(t[0].item<double>() == n * (n + 1) / 2, "allreduce gave ", t[0].item<double>());
}

void show_ranks() {
  // [snippet:advanced_ranks]
  std::cout << "rank " << tnt::get_rank() << " of " << tnt::get_size()  // global
            << ", local rank " << tnt::get_local_rank() << " of " << tnt::get_local_size()
            << " on this node, master rank " << tnt::get_master_rank() << "\n";
  // [end]
}

void show_master_only(const tnt::callbacks::History& history) {
  // [snippet:points_master_rank]
  // Collective calls (fit, evaluate, predict, save) run on EVERY rank;
  // plain output and files of your own belong on the master rank.
  if (tnt::is_master_rank()) {
    std::ofstream("final_loss.txt") << history.history.at("loss").back() << "\n";
  }
  tnt::log::info("training finished");  // master only, unless TNT_LOG_ON_ALL_DEVICES=true
  // [end]
}

tnt::data::Dataset synthetic(std::int64_t n) {
  torch::Tensor x = torch::randn({n, 8});
  return tnt::data::Dataset::from_tensor_slices({x, x.slice(1, 0, 3).argmax(1)});
}

tnt::callbacks::History show_lr_scaling() {
  const auto samples = synthetic(512);
  // [snippet:points_lr_scaling]
  // Weak scaling: keep 32 samples per rank, so the global batch grows with N,
  // and scale the learning rate with it (linear scaling rule, with warm-up).
  const std::int64_t per_rank = 32;
  auto train = samples.shuffle(512, /*seed=*/42).batch(per_rank * tnt::get_size());

  namespace L = tnt::layers;
  tnt::Model model{L::Sequential({L::Dense(8, 32, "relu"), L::Dense(32, 3)})};
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(tnt::optimizers::SGDOptions(0.05).momentum(0.9)))
                    .schedule(tnt::schedules::LinearScalingWarmUp(
                        /*base_learning_rate=*/0.05, /*num_ranks=*/tnt::get_size(),
                        /*warmup_steps=*/20))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  auto history = model.fit(train, tnt::FitOptions().epochs(3).verbose(0));
  // [end]
  return history;
}

void show_batchnorm() {
  const auto samples = synthetic(256);
  // [snippet:points_batchnorm]
  // BatchNorm normalizes with the statistics of each rank's micro-batch.
  // With a global batch of 64 at 8 ranks that is 8 samples: fit() logs a
  // WARNING below 16 samples per rank. Keep micro-batches at 16 or more.
  namespace L = tnt::layers;
  tnt::Model model{
      L::Sequential({L::Dense(8, 32), L::BatchNorm(32), L::Activation("relu"), L::Dense(32, 3)})};
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.1))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  model.fit(samples.batch(16 * tnt::get_size()), tnt::FitOptions().epochs(1).verbose(0));
  // [end]
}

// [snippet:sync_batchnorm_member]
struct Block : torch::nn::Module {
  Block() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1)));
    bn = register_module("bn", tnt::nn::SyncBatchNorm(8));  // was torch::nn::BatchNorm2d(8)
  }
  torch::Tensor forward(torch::Tensor x) { return torch::relu(bn(conv(x))); }
  torch::nn::Conv2d conv{nullptr};
  tnt::nn::SyncBatchNorm bn{nullptr};  // was torch::nn::BatchNorm2d
};
// [end]

void show_sync_batchnorm() {
  const auto samples = synthetic(256);
  {
    // [snippet:points_sync_batchnorm]
    // SyncBatchNorm normalizes with the statistics of the GLOBAL batch:
    // 16 samples here, however many ranks share them.
    namespace L = tnt::layers;
    tnt::Model model{L::Sequential(
        {L::Dense(8, 32), L::SyncBatchNorm(32), L::Activation("relu"), L::Dense(32, 3)})};
    model.compile(tnt::CompileOptions()
                      .optimizer(tnt::optimizers::SGD(0.1))
                      .loss(tnt::losses::SparseCategoricalCrossentropy()));
    model.fit(samples.batch(16), tnt::FitOptions().epochs(1).verbose(0));
    // [end]
  }
  {
    // [snippet:points_convert_sync_batchnorm]
    // BatchNorm layers inside containers (torch::nn::Sequential, ModuleList,
    // ModuleDict, tnt::layers::Sequential) are replaced in place.
    torch::nn::Sequential net(torch::nn::Linear(8, 32), torch::nn::BatchNorm1d(32),
                              torch::nn::ReLU(), torch::nn::Linear(32, 3));
    tnt::nn::convert_sync_batchnorm(*net);  // before compile(): 1 layer replaced
    tnt::Model model{net};
    // [end]
    model.compile(tnt::CompileOptions()
                      .optimizer(tnt::optimizers::SGD(0.1))
                      .loss(tnt::losses::SparseCategoricalCrossentropy()));
    model.fit(samples.batch(16), tnt::FitOptions().epochs(1).verbose(0));
  }
  tnt::Model member{std::make_shared<Block>()};
  member.forward({torch::randn({2, 8, 4, 4})});
}

void show_fusion_threshold(const tnt::data::Dataset& train) {
  // [snippet:advanced_fusion]
  namespace L = tnt::layers;
  tnt::Model model{L::Sequential({L::Dense(8, 256, "relu"), L::Dense(256, 3)})};
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::Adam(1e-3))
                    .loss(tnt::losses::SparseCategoricalCrossentropy())
                    // buckets of 1 MiB for this model, whatever TNT_FUSION_THRESHOLD says
                    .fusion_threshold_bytes(1 << 20));
  model.fit(train, tnt::FitOptions().epochs(1).verbose(0));
  // [end]
}

std::vector<torch::Tensor> seeded_run() {
  // [snippet:advanced_seed]
  tnt::set_seed(42);  // on every rank, after tnt::Runtime, before models and datasets
  torch::Tensor x = torch::randn({256, 8});  // repeats: LibTorch's generator is seeded
  auto train = tnt::data::Dataset::from_tensor_slices({x, x.slice(1, 0, 3).argmax(1)})
                   .shuffle(256)  // no seed given: uses the one set_seed set
                   .batch(32);
  namespace L = tnt::layers;
  tnt::Model model{L::Sequential({L::Dense(8, 32, "relu"), L::Dropout(0.2), L::Dense(32, 3)})};
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::Adam(1e-2))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  model.fit(train, tnt::FitOptions().epochs(2).verbose(0));
  // [end]
  return model.get_weights();
}

void reproducibility() {
  const auto first = seeded_run();
  const auto second = seeded_run();
  for (std::size_t i = 0; i < first.size(); ++i) {
    TNT_CHECK(torch::equal(first[i], second[i]),
              "two runs after tnt::set_seed(42) differ in weight tensor ", i);
  }
}

void survive_failures() {
  const auto samples = synthetic(256);
  // [snippet:advanced_backup]
  auto train = samples.shuffle(256, /*seed=*/7).batch(32);
  namespace L = tnt::layers;
  tnt::Model model{L::Sequential({L::Dense(8, 32, "relu"), L::Dense(32, 3)})};
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::Adam(1e-2))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  // A backup at every epoch end and every 4 steps. If this run fails, the
  // next one (`tarantella --max-restarts 3` starts it) continues mid-epoch
  // from the last backup, on any number of ranks.
  auto backup = std::make_shared<tnt::callbacks::BackupAndRestore>("backup", 4);
  model.fit(train, tnt::FitOptions().epochs(3).verbose(0).callbacks({backup}));
  // [end]
  TNT_CHECK(!std::filesystem::exists(backup->backup_path()),
            "BackupAndRestore left its backup after training completed");
}

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  same_result_at_any_rank_count();
  show_allreduce();
  show_ranks();
  const auto history = show_lr_scaling();
  show_master_only(history);
  show_batchnorm();
  show_sync_batchnorm();
  show_fusion_threshold(synthetic(128).batch(32));
  reproducibility();
  survive_failures();
  if (tnt::is_master_rank()) std::cout << "advanced snippets ok\n";
  return 0;
}

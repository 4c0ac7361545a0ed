// Shared by the multi-rank model and callback tests: a tiny network, a
// dataset of 50 samples (batch 8: six full batches and a short one of 2,
// fewer samples than ranks at N = 3, 4), and serial training of the same
// network in plain LibTorch as the reference.
//
// On a machine with a GPU a tnt::Model trains on it (cuda:local_rank) unless
// the launcher says --no-gpu. The serial reference then runs on the model's
// device (serial(..., model.device())), so that the comparison is of the
// data-parallel arithmetic, not of two devices' kernels; max_rel_diff
// compares on the CPU, whatever the devices of its arguments.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include <torch/torch.h>

#include <tarantella/data/dataset.h>
#include <tarantella/tarantella.h>

namespace tnt_test {

namespace data = tnt::data;

struct MlpImpl : torch::nn::Module {
  MlpImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(6, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 4));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::tanh(fc1(x))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Mlp);

inline Mlp make_net(int seed = 5) {
  torch::manual_seed(seed);
  return Mlp();
}

inline constexpr std::int64_t kSamples = 50;  // batch 8: 6 full batches and a short one of 2

inline data::Dataset samples() {
  torch::Generator g = at::detail::createCPUGenerator(77);
  return data::Dataset::from_tensor_slices(
      {torch::randn({kSamples, 6}, g), torch::randint(0, 4, {kSamples}, g)});
}

inline data::Dataset train_set(std::int64_t batch, bool shuffle) {
  data::Dataset d = samples();
  if (shuffle) d = d.shuffle(kSamples, 11);
  return d.batch(batch);
}

inline tnt::CompileOptions options() {
  return tnt::CompileOptions()
      .optimizer(tnt::optimizers::SGD(0.1, 0.9))
      .loss(tnt::losses::SparseCategoricalCrossentropy())
      .metrics({tnt::metrics::SparseCategoricalAccuracy()});
}

struct Reference {
  std::vector<torch::Tensor> weights;
  std::vector<double> epoch_loss, epoch_accuracy;
};

// Serial training in plain LibTorch over the dataset's global batches, on
// `device` (the tnt::Model's it is compared with).
inline Reference serial(const data::Dataset& train, int epochs,
                        const std::function<double(int)>& lr_of_epoch = nullptr,
                        torch::Device device = torch::kCPU) {
  Mlp net = make_net();
  net->to(device);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  Reference ref;
  for (int e = 0; e < epochs; ++e) {
    if (lr_of_epoch) {
      for (auto& g : opt.param_groups()) g.options().set_lr(lr_of_epoch(e));
    }
    double loss_sum = 0, correct = 0, count = 0;
    auto it = train.iterate(e);
    while (auto batch = it.next()) {
      const torch::Tensor x = (*batch)[0].to(device), y = (*batch)[1].to(device);
      const torch::Tensor out = net->forward(x);
      const torch::Tensor loss = torch::nn::functional::cross_entropy(out, y);
      loss_sum += loss.item<double>() * y.size(0);
      correct += out.argmax(-1).eq(y).sum().item<double>();
      count += static_cast<double>(y.size(0));
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
    ref.epoch_loss.push_back(loss_sum / count);
    ref.epoch_accuracy.push_back(correct / count);
  }
  ref.weights = net->parameters();
  return ref;
}

inline double max_rel_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const torch::Tensor x = a[i].detach().to(torch::kCPU, torch::kFloat64);
    const torch::Tensor y = b[i].detach().to(torch::kCPU, torch::kFloat64);
    const double scale = std::max(1.0, x.abs().max().item<double>());
    worst = std::max(worst, (x - y).abs().max().item<double>() / scale);
  }
  return worst;
}

inline std::vector<torch::Tensor> params_of(const tnt::Model& m) {
  std::vector<torch::Tensor> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(p.detach());
  return out;
}

// A scratch directory every rank agrees on (named after the master's pid),
// and its removal once every rank is done with it.
inline std::string shared_dir(const std::string& what) {
  torch::Tensor id = torch::tensor({static_cast<std::int64_t>(::getpid())});
  tnt::comm::broadcast(id, 0);
  const std::string dir = "/tmp/tnt_" + what + "_" + std::to_string(id.item<std::int64_t>());
  if (tnt::is_master_rank()) std::filesystem::create_directories(dir);
  tnt::comm::barrier();
  return dir;
}

inline void remove_dir(const std::string& dir) {
  tnt::comm::barrier();
  if (tnt::is_master_rank()) std::filesystem::remove_all(dir);
}

}  // namespace tnt_test

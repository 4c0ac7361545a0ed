// Deterministic mode end to end: trains LeNet-5 and a network
// with BatchNorm and Dropout for 2 epochs on a shuffled Fashion-MNIST subset
// whose last batch is short, in CompileOptions().deterministic(8), then
// evaluates; writes every weight's bytes and every logged value (as
// hexadecimal floats) to OUT. deterministic.sh runs it without MPI and at
// 1, 2 and 4 ranks and compares the files byte for byte.
//
//   deterministic_job OUT [--no-runtime] [--normal]
//     --no-runtime: a single process without MPI (no tnt::Runtime)
//     --normal:     the normal mode instead, for comparison
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include <torch/torch.h>

#include <tarantella/tarantella.h>

#include "lenet5_model.h"

namespace {

struct BatchNormNetImpl : torch::nn::Module {
  BatchNormNetImpl()
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 5).stride(2)))),
        bn(register_module("bn", torch::nn::BatchNorm2d(8))),
        drop(register_module("drop", torch::nn::Dropout(0.25))),
        fc(register_module("fc", torch::nn::Linear(8 * 12 * 12, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    return fc(drop(torch::relu(bn(conv(x))).flatten(1)));
  }
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
  torch::nn::Dropout drop;
  torch::nn::Linear fc;
};
TORCH_MODULE(BatchNormNet);

std::string hex(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", v);
  return text;
}

template <typename Net>
void train(const std::string& name, Net net, bool deterministic, std::ofstream& out) {
  namespace data = tnt::data;
  const data::Dataset file = data::datasets::fashion_mnist("train");
  // 1000 samples in batches of 64: 15 full ones and a short one of 40.
  const data::Dataset train = file.take(1000).shuffle(1000, 5).batch(64);
  const data::Dataset val = file.skip(1000).take(300).batch(64);
  tnt::Model model{net};
  tnt::CompileOptions options;
  options.optimizer(tnt::optimizers::SGD(0.05, 0.9))
      .loss(tnt::losses::SparseCategoricalCrossentropy())
      .metrics({tnt::metrics::SparseCategoricalAccuracy()});
  if (deterministic) options.deterministic(8);
  model.compile(options);
  const auto history =
      model.fit(train, tnt::FitOptions().epochs(2).verbose(0).validation_data(val));
  const auto evaluated = model.evaluate(val);
  if (!model.group().is_master()) return;
  for (const auto& [key, values] : history.history) {
    out << name << " history " << key;
    for (double v : values) out << " " << hex(v);
    out << "\n";
  }
  for (const auto& [key, v] : evaluated) out << name << " evaluate " << key << " " << hex(v) << "\n";
  auto dump = [&](const std::string& what, const std::string& key, const torch::Tensor& t) {
    const torch::Tensor c = t.detach().cpu().contiguous();
    out << name << " " << what << " " << key << " " << c.numel() << " ";
    out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
    out << "\n";
  };
  for (const auto& [key, p] : model.named_parameters()) dump("parameter", key, p);
  for (const auto& [key, b] : model.named_buffers()) dump("buffer", key, b);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: deterministic_job OUT [--no-runtime] [--normal]\n");
    return 2;
  }
  bool runtime_wanted = true, deterministic = true;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-runtime") runtime_wanted = false;
    else if (a == "--normal") deterministic = false;
    else {
      std::fprintf(stderr, "unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  std::optional<tnt::Runtime> runtime;
  if (runtime_wanted) runtime.emplace(argc, argv);
  std::ofstream out;
  if (!runtime || tnt::is_master_rank()) out.open(argv[1], std::ios::binary);
  torch::manual_seed(11);
  train("lenet5", tnt_examples::LeNet5(), deterministic, out);
  torch::manual_seed(12);
  train("batchnorm", BatchNormNet(), deterministic, out);
  return 0;
}

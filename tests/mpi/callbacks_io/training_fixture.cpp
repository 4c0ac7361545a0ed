#include "training_fixture.h"

#include <torch/torch.h>
#include <unistd.h>

namespace tnt_test {
namespace {

tnt::data::Dataset samples(std::uint64_t seed, std::int64_t n) {
  torch::Generator g = at::detail::createCPUGenerator(seed);
  return tnt::data::Dataset::from_tensor_slices(
      {torch::randn({n, 6}, g), torch::randint(0, 4, {n}, g)});
}

}  // namespace

tnt::data::Dataset train_set() { return samples(77, kSamples).shuffle(kSamples, 11).batch(kBatch); }

tnt::data::Dataset validation_set() { return samples(78, 20).batch(16); }

tnt::Model make_model() {
  torch::manual_seed(5);
  tnt::Model model(torch::nn::Linear(6, 4));
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.1, 0.9))
                    .loss(tnt::losses::SparseCategoricalCrossentropy())
                    .metrics({tnt::metrics::SparseCategoricalAccuracy()}));
  return model;
}

void LogRecorder::on_train_batch_end(std::int64_t, const tnt::callbacks::Logs& logs) {
  batch_logs.push_back(logs);
}

void LogRecorder::on_epoch_end(std::int64_t epoch, const tnt::callbacks::Logs& logs) {
  epoch_logs.emplace_back(epoch, logs);
}

std::filesystem::path shared_temp_dir(const std::string& name) {
  torch::Tensor pid = torch::tensor({static_cast<std::int64_t>(::getpid())});
  tnt::comm::broadcast(pid, tnt::get_master_rank());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("tnt_cbio_" + name + "_" + std::to_string(pid.item<std::int64_t>()));
  if (tnt::is_master_rank()) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  tnt::comm::barrier();
  return dir;
}

void remove_shared_dir(const std::filesystem::path& dir) {
  tnt::comm::barrier();
  if (tnt::is_master_rank()) std::filesystem::remove_all(dir);
}

}  // namespace tnt_test

// The distributed-datasets chapter of the user guide
// (docs/guide/datasets.md) and the guide's local-batch-size examples, as one
// program that CI runs at 3 ranks (a rank count that does not divide the
// batch). Regions between "// [snippet:NAME]" and "// [end]" appear verbatim
// in the guide; tests/docs/check_snippets.py keeps the two equal.
//
// Run it:   tarantella -n 3 -- ./doc_snippet_datasets
#include <cstdint>
#include <iostream>

#include <torch/torch.h>

#include <tarantella/tarantella.h>

namespace {

// A small synthetic classification problem: 100 samples, 8 features, 3 classes.
tnt::data::Dataset synthetic_samples() {
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({100, 8});
  torch::Tensor y = x.slice(1, 0, 3).argmax(1);
  return tnt::data::Dataset::from_tensor_slices({x, y});
}

tnt::Model small_model() {
  torch::manual_seed(1);
  namespace L = tnt::layers;
  tnt::Model model{L::Sequential({L::Dense(8, 16, "relu"), L::Dense(16, 3)})};
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.1))
                    .loss(tnt::losses::SparseCategoricalCrossentropy())
                    .metrics({tnt::metrics::SparseCategoricalAccuracy()}));
  return model;
}

void show_micro_batches() {
  // [snippet:datasets_micro_batches]
  // 10 samples in global batches of 4: batches of 4, 4 and a short one of 2.
  auto samples = tnt::data::Dataset::range(10);
  auto batched = samples.batch(4);

  // This rank's share of every global batch (rank and size from tnt::Runtime).
  auto micro = tnt::data::distribute(batched);
  auto it = micro.iterate(/*epoch=*/0);
  while (auto mb = it.next()) {
    std::cout << "rank " << tnt::get_rank() << " step " << mb->step << ": " << mb->local_size
              << " of " << mb->global_size << " samples:";
    for (std::int64_t i = 0; i < mb->local_size; ++i) {
      std::cout << " " << mb->tensors[0][i].item<std::int64_t>();
    }
    std::cout << "\n";
  }
  // [end]

  // [snippet:datasets_micro_batch_range]
  // The split rule: L/N samples per rank, the first L mod N ranks one more.
  auto [lo, hi] = tnt::data::micro_batch_range(/*batch=*/10, /*size=*/4, /*rank=*/1);
  // lo == 3, hi == 6: ranks 0..3 get samples [0,3) [3,6) [6,8) [8,10)
  // [end]
  TNT_CHECK(lo == 3 && hi == 6, "micro_batch_range(10, 4, 1) gave [", lo, ", ", hi, ")");

  // The concatenation of the ranks' micro-batches is the global batch.
  std::int64_t steps = 0;
  auto check = micro.iterate(0);
  while (auto mb = check.next()) {
    torch::Tensor all = tnt::comm::allgatherv(mb->tensors[0].contiguous());
    TNT_CHECK(torch::equal(all, torch::arange(mb->step * 4, mb->step * 4 + mb->global_size)),
              "the micro-batches of step ", mb->step, " do not add up to the global batch");
    ++steps;
  }
  TNT_CHECK(steps == 3, "expected 3 steps, got ", steps);
}

void show_shuffle() {
  // [snippet:datasets_shuffle]
  auto shuffled = tnt::data::Dataset::range(10).shuffle(/*buffer_size=*/10, /*seed=*/7);
  // The order is a pure function of (seed, epoch): the same on every rank,
  // in every run; each epoch is reshuffled.
  auto epoch0 = shuffled.iterate(0);
  auto epoch1 = shuffled.iterate(1);

  // Without a seed, shuffle uses tnt::data::default_shuffle_seed(): a fixed
  // value (tnt::set_seed changes it), never a random one.
  auto also_shuffled = tnt::data::Dataset::range(10).shuffle(10);
  // [end]
  (void)epoch0;
  (void)epoch1;
  (void)also_shuffled;
}

void automatic_distribution(const tnt::data::Dataset& samples) {
  // [snippet:datasets_automatic]
  // Batch with the global batch size; fit() gives each rank its micro-batch.
  auto train = samples.shuffle(100, /*seed=*/42).batch(/*global batch=*/32);
  tnt::Model model = small_model();
  model.fit(train, tnt::FitOptions().epochs(2).verbose(0));
  // [end]
}

void manual_distribution(const tnt::data::Dataset& samples) {
  // [snippet:datasets_manual]
  // Each rank takes every N-th sample and batches its own share.
  auto local = samples.shuffle(100, /*seed=*/42)
                   .shard(tnt::get_size(), tnt::get_rank())
                   .batch(/*local batch=*/8);
  tnt::Model model = small_model();
  model.fit(local, tnt::FitOptions().epochs(2).verbose(0).distribute_dataset(false));
  // [end]
}

void micro_batch_size(const tnt::data::Dataset& samples) {
  // [snippet:datasets_micro_batch_size]
  // An unbatched dataset plus a per-rank size m: global batches of m * N.
  tnt::Model model = small_model();
  model.fit(samples, tnt::FitOptions().epochs(2).verbose(0).micro_batch_size(8));
  // [end]
}

void local_view(const tnt::data::Dataset& samples) {
  // [snippet:datasets_distribute_options]
  namespace data = tnt::data;
  // The same split for any rank and size, e.g. to inspect rank 1 of 4:
  auto rank1 = data::distribute(samples.batch(32), data::DistributeOptions().rank(1).size(4));
  std::cout << rank1.describe() << "\n";  // ... -> micro_batch(32)[rank 1 of 4]
  // [end]
  TNT_CHECK(rank1.global_batch_size() == 32, "global batch size ", rank1.global_batch_size());
}

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  const tnt::data::Dataset samples = synthetic_samples();
  show_micro_batches();
  show_shuffle();
  automatic_distribution(samples);
  manual_distribution(samples);
  micro_batch_size(samples);
  local_view(samples);
  if (tnt::is_master_rank()) std::cout << "datasets snippets ok\n";
  return 0;
}

// The ResNet tutorial: ResNet-50, ResNet-18 or a CIFAR-size ResNet-20,
// trained data-parallel with tnt::Model on an ImageNet-style image folder,
// on Fashion-MNIST resized to the network's input size, or on synthetic
// data for throughput runs.
//
//   tarantella -n 2 -- ./resnet --model cifar --data fashion-mnist --epochs 2
//   tarantella -n 2 -- ./resnet --model resnet50 --data images --batch-size 256
//                               --train-dir imagenet/train --val-dir imagenet/val
//   tarantella -n 2 -- ./resnet --model resnet50 --data synthetic --image-size 224
//   tarantella -n 2 -- ./resnet --model cifar --pipeline-stages 2   # 2 ranks, 1 pipeline
//
// --batch-size is the GLOBAL batch size. --learning-rate is the rate tuned
// for ONE rank; it is scaled linearly with the number of ranks after a
// warm-up (Goyal et al. 2017), then decays. See docs/tutorials/resnet.md.
#include <tarantella/tarantella.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "image_folder.h"
#include "resnet_data.h"
#include "resnet_model.h"

namespace {

using namespace resnet_example;

struct Args {
  std::string model = "cifar";
  DataOptions data;
  std::int64_t batch_size = 64;
  std::int64_t epochs = 3;
  std::int64_t val_freq = 1;
  double learning_rate = 0.05;
  bool no_lr_scaling = false;
  std::string precision = "float32";
  bool sync_bn = false;
  int pipeline_stages = 1;
  int micro_batches = 0;  // 0: the library's default, 4 (P - 1)
  std::string lr_schedule = "piecewise";
  double warmup_epochs = 1;
  double decay_rate = 0.9;
  double decay_epochs = 1;
  std::vector<double> lr_boundaries = {30, 60, 80};
  double lr_decay_factor = 0.1;
  double momentum = 0.9;
  double weight_decay = 1e-4;
  std::string checkpoint_dir;
  bool resume = false;
  std::string tensorboard;
  std::string save_weights;
  std::string make_image_folder;
  int images_per_class = 8;
  std::uint64_t seed = 42;
  int verbose = 1;
};

void add_flags(CLI::App& app, Args& a) {
  app.add_option("--model", a.model, "resnet50 | resnet18 | cifar (ResNet-20)")
      ->check(CLI::IsMember({"resnet50", "resnet18", "cifar"}));
  app.add_option("--data", a.data.source, "fashion-mnist | images | synthetic")
      ->check(CLI::IsMember({"fashion-mnist", "images", "synthetic"}));
  app.add_option("--train-dir", a.data.train_dir, "images: training folder DIR/<class>/<image>");
  app.add_option("--val-dir", a.data.val_dir, "images: validation folder (optional)");
  app.add_option("--data-dir", a.data.fashion_mnist_dir, "fashion-mnist: directory of the files");
  app.add_option("--train-size", a.data.train_size,
                 "fashion-mnist, synthetic: training samples (default all / 1280)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--val-size", a.data.val_size,
                 "fashion-mnist, synthetic: validation samples (default 10000 / 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--image-size", a.data.image_size, "input size S (default 32 cifar, 224 else)")
      ->check(CLI::Range(8, 1024));
  app.add_option("--num-classes", a.data.num_classes,
                 "synthetic: classes (default 1000); --make-image-folder: classes (default 4)")
      ->check(CLI::Range(2, 100000));
  app.add_option("--workers", a.data.workers, "threads per rank that decode/resize samples")
      ->check(CLI::Range(1, 64));
  app.add_option("--batch-size", a.batch_size, "GLOBAL batch size")->check(CLI::PositiveNumber);
  app.add_option("--epochs", a.epochs, "epochs to train")->check(CLI::NonNegativeNumber);
  app.add_option("--val-freq", a.val_freq, "epochs between evaluations (0: only at the end)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--learning-rate", a.learning_rate, "base learning rate, tuned for ONE rank")
      ->check(CLI::PositiveNumber);
  app.add_option("--precision", a.precision,
                 "float32, or bfloat16: mixed precision (forward under autocast, float32 weights)")
      ->check(CLI::IsMember({"float32", "bfloat16"}));
  app.add_flag("--no-lr-scaling", a.no_lr_scaling,
               "keep the base rate at any rank count (no linear scaling, no warm-up)");
  app.add_flag("--sync-bn", a.sync_bn,
               "SyncBatchNorm: normalize with the statistics of the global batch");
  app.add_option("--pipeline-stages", a.pipeline_stages,
                 "P: cut the network (stem, residual blocks, head) into P pipeline stages; the "
                 "ranks run N / P replicas of the pipeline")
      ->check(CLI::PositiveNumber);
  app.add_option("--micro-batches", a.micro_batches,
                 "with --pipeline-stages: micro-batches per replica and step (default 4 (P - 1))")
      ->check(CLI::PositiveNumber);
  app.add_option("--lr-schedule", a.lr_schedule, "exponential | piecewise (both after warm-up)")
      ->check(CLI::IsMember({"exponential", "piecewise"}));
  app.add_option("--warmup-epochs", a.warmup_epochs, "epochs of linear warm-up to the scaled rate")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--decay-rate", a.decay_rate, "exponential: factor per --decay-epochs")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--decay-epochs", a.decay_epochs, "exponential: epochs per decay period")
      ->check(CLI::PositiveNumber);
  app.add_option("--lr-boundaries", a.lr_boundaries, "piecewise: epochs where the rate drops")
      ->delimiter(',');
  app.add_option("--lr-decay-factor", a.lr_decay_factor, "piecewise: factor at each boundary")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--momentum", a.momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0));
  app.add_option("--weight-decay", a.weight_decay, "SGD weight decay (L2)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--checkpoint-dir", a.checkpoint_dir, "save a checkpoint after every epoch here");
  app.add_flag("--resume", a.resume, "continue from the newest checkpoint in --checkpoint-dir");
  app.add_option("--tensorboard", a.tensorboard,
                 "write TensorBoard event files under this directory");
  app.add_option("--save-weights", a.save_weights, "write the trained weights (torch.save format)");
  app.add_option("--make-image-folder", a.make_image_folder,
                 "write a small PNG/JPEG image folder (DIR/train, DIR/val) and exit");
  app.add_option("--images-per-class", a.images_per_class, "--make-image-folder: training images")
      ->check(CLI::Range(1, 10000));
  app.add_option("--seed", a.seed, "seed of weights, shuffling and synthetic data");
  app.add_option("--verbose", a.verbose, "0 silent, 1 progress bar, 2 a line per epoch");
}

// The learning rate per optimizer step: a linear warm-up from the one-rank
// base rate to base x N, then the chosen decay of that scaled rate.
tnt::schedules::Schedule make_schedule(const Args& a, std::int64_t steps_per_epoch, int scale,
                                       std::ostream& description) {
  namespace s = tnt::schedules;
  const auto steps = [&](double epochs) { return std::llround(epochs * steps_per_epoch); };
  s::Schedule decay;  // of the base rate; LinearScalingWarmUp scales it
  description << std::setprecision(4) << "learning rate " << a.learning_rate << " (1 rank) x "
              << scale << " = " << a.learning_rate * scale << ", warm-up " << steps(a.warmup_epochs)
              << " steps";
  if (a.lr_schedule == "exponential") {
    decay = s::ExponentialDecay(a.learning_rate, std::max<std::int64_t>(1, steps(a.decay_epochs)),
                                a.decay_rate);
    description << ", then x" << a.decay_rate << " every " << a.decay_epochs << " epoch(s)";
  } else {
    std::vector<std::int64_t> boundaries;
    std::vector<double> values = {a.learning_rate};
    for (double epoch : a.lr_boundaries) {
      boundaries.push_back(steps(epoch));
      values.push_back(values.back() * a.lr_decay_factor);
    }
    decay = s::PiecewiseConstantDecay(boundaries, values);
    description << ", then x" << a.lr_decay_factor << " at epochs";
    for (double epoch : a.lr_boundaries) description << " " << epoch;
  }
  // [snippet:resnet_linear_scaling]
  // Warm-up from the one-rank rate to base x N, then the decay, scaled by N.
  return s::LinearScalingWarmUp(a.learning_rate, scale, steps(a.warmup_epochs), decay);
  // [end]
}

// Training images per second on the master rank, over all steps but the
// first of each epoch (which includes start-up, allocation and the
// pipeline filling up). Validation between epochs is not counted.
class Throughput : public tnt::callbacks::Callback {
 public:
  Throughput(std::int64_t samples, std::int64_t batch_size)
      : samples_(samples), batch_size_(batch_size) {
    run_on_all_ranks = false;
  }
  void on_epoch_begin(std::int64_t, const tnt::callbacks::Logs&) override { last_.reset(); }
  void on_train_batch_end(std::int64_t batch, const tnt::callbacks::Logs&) override {
    const auto now = Clock::now();
    if (last_) {
      seconds_ += std::chrono::duration<double>(now - *last_).count();
      images_ += std::min(batch_size_, samples_ - batch * batch_size_);
    }
    last_ = now;
  }
  /// "N images/s over M images", or "" before two steps of an epoch ran.
  std::string report() const {
    if (images_ == 0) return "";
    std::ostringstream out;
    out << std::fixed << std::setprecision(1) << images_ / seconds_ << " images/s over " << images_
        << " images";
    return out.str();
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::int64_t samples_, batch_size_;
  std::optional<Clock::time_point> last_;
  double seconds_ = 0;
  std::int64_t images_ = 0;
};

std::vector<tnt::callbacks::CallbackPtr> make_callbacks(const Args& a) {
  std::vector<tnt::callbacks::CallbackPtr> callbacks;
  if (!a.tensorboard.empty()) {
    callbacks.push_back(std::make_shared<tnt::callbacks::TensorBoard>(
        tnt::callbacks::TensorBoardOptions(a.tensorboard)));
  }
  if (!a.checkpoint_dir.empty()) {
    callbacks.push_back(std::make_shared<tnt::callbacks::ModelCheckpoint>(
        tnt::callbacks::ModelCheckpointOptions(a.checkpoint_dir + "/epoch-{epoch:04d}.pt")));
  }
  if (a.verbose >= 2) {  // the learning rate the schedule reached
    auto lr = std::make_shared<tnt::callbacks::LambdaCallback>();
    lr->on_epoch_end([lr_ptr = lr.get()](std::int64_t epoch, const tnt::callbacks::Logs&) {
      const auto& group = lr_ptr->model()->optimizer().param_groups().front();
      std::cout << "epoch " << epoch + 1 << ": learning rate now " << group.options().get_lr()
                << "\n";
    });
    lr->run_on_all_ranks = false;
    callbacks.push_back(lr);
  }
  return callbacks;
}

// Shows that each rank decoded only its own share of the images.
void report_decoded(const Data& data) {
  if (!data.decoded) return;
  const torch::Tensor mine = torch::tensor({data.decoded->load()}, torch::kLong);
  const torch::Tensor all = tnt::comm::allgather(mine);
  if (!tnt::is_master_rank()) return;
  std::cout << "images decoded per rank:";
  for (std::int64_t r = 0; r < all.size(0); ++r) std::cout << " " << all[r].item<std::int64_t>();
  std::cout << " (" << all.sum().item<std::int64_t>() << " in all)\n";
}

std::int64_t count_parameters(const torch::nn::Module& net) {
  std::int64_t n = 0;
  for (const auto& p : net.parameters()) n += p.numel();
  return n;
}

// [snippet:resnet_pipeline]
// Data parallelism: the ResNet on every rank. Pipeline stages: the same
// layers as a Sequential of blocks (stem, residual blocks, head), cut into
// P stages of about equal parameter count; each rank keeps its stage's.
tnt::Model make_model(ResNet net, const Args& a) {
  if (a.pipeline_stages == 1) return tnt::Model(net);
  tnt::PipelineOptions pipeline = tnt::PipelineOptions().stages(a.pipeline_stages);
  if (a.micro_batches > 0) pipeline.micro_batches(a.micro_batches);
  return tnt::Model(net->blocks(), pipeline);
}
// [end]

// "stage 1 of 2 (replica 0 of 1) holds 150794 of 272474 parameters", for
// every rank, in rank order, on the master.
void report_stages(const tnt::Model& model, std::int64_t whole) {
  const std::optional<tnt::PipelinePosition> where = model.pipeline();
  std::int64_t mine = 0;
  for (const auto& [name, p] : model.named_parameters()) mine += p.numel();
  const torch::Tensor all = tnt::comm::allgather(
      torch::tensor({static_cast<std::int64_t>(where->stage), mine}, torch::kLong));
  if (!tnt::is_master_rank()) return;
  for (std::int64_t r = 0; r < all.size(0) / 2; ++r) {
    std::cout << "rank " << r << ": stage " << all[2 * r].item<std::int64_t>() << " of "
              << where->stages << ", " << all[2 * r + 1].item<std::int64_t>() << " of " << whole
              << " parameters\n";
  }
}

// The held-out loss and accuracy after training: from the last epoch's
// validation if fit() ran one, else from an evaluation now.
void print_final_evaluation(tnt::Model& model, const tnt::data::Dataset& val,
                            const tnt::callbacks::History& history, const Args& a) {
  double loss = 0, accuracy = 0;
  const bool validated_last_epoch = a.epochs > 0 && a.val_freq > 0 && a.epochs % a.val_freq == 0;
  if (validated_last_epoch) {
    loss = history.history.at("val_loss").back();
    accuracy = history.history.at("val_sparse_categorical_accuracy").back();
  } else {
    const auto results = model.evaluate(val);
    loss = results.at("loss");
    accuracy = results.at("sparse_categorical_accuracy");
  }
  if (tnt::is_master_rank()) {
    std::cout << "test loss: " << loss << "  test accuracy: " << accuracy << " ("
              << val.cardinality() << " batches of held-out data)\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);

  Args a;
  a.data.fashion_mnist_dir = tnt::data::datasets::kFashionMnistDir;
  CLI::App app{"ResNet data-parallel with Tarantella (docs/tutorials/resnet.md)"};
  add_flags(app, a);
  CLI11_PARSE(app, argc, argv);
  const bool image_size_given = app.count("--image-size") > 0;
  const bool classes_given = app.count("--num-classes") > 0;

  tnt::set_seed(a.seed);  // weights, default shuffle seed, deterministic kernels
  if (!a.make_image_folder.empty()) {
    if (tnt::is_master_rank()) {
      make_image_folder(a.make_image_folder, classes_given ? a.data.num_classes : 4,
                        a.images_per_class, a.seed);
      std::cout << "wrote " << a.make_image_folder << "/train and " << a.make_image_folder
                << "/val\n";
    }
    return 0;
  }
  if (!image_size_given) a.data.image_size = default_image_size(a.model);
  a.data.seed = a.seed;

  const Data data = load_data(a.data);
  const std::int64_t train_samples = data.train.cardinality();
  // [snippet:resnet_global_batch]
  // Shuffle and batch with the GLOBAL batch size: fit() distributes.
  const tnt::data::Dataset train = data.train.shuffle(train_samples).batch(a.batch_size);
  // [end]
  const std::int64_t steps_per_epoch = train.cardinality();

  const ResNet net = make_resnet(a.model, data.num_classes, a.sync_bn);
  const std::int64_t parameters = count_parameters(*net);
  tnt::Model model = make_model(net, a);
  // [snippet:resnet_compile]
  // The data-parallel replicas: every rank, or N / P with pipeline stages.
  const int replicas = tnt::get_size() / a.pipeline_stages;
  const int scale = a.no_lr_scaling ? 1 : replicas;
  std::ostringstream lr_text;
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(tnt::optimizers::SGDOptions(a.learning_rate)
                                                        .momentum(a.momentum)
                                                        .weight_decay(a.weight_decay)))
                    .schedule(make_schedule(a, steps_per_epoch, scale, lr_text))
                    .loss(tnt::losses::SparseCategoricalCrossentropy())
                    .metrics({tnt::metrics::SparseCategoricalAccuracy()})
                    .mixed_precision(a.precision == "bfloat16" ? tnt::MixedPrecision::BFloat16
                                                               : tnt::MixedPrecision::None));
  // [end]
  if (a.verbose > 0 && tnt::is_master_rank()) {
    std::cout << a.model << ": " << parameters << " parameters, input 3x"
              << a.data.image_size << "x" << a.data.image_size << ", " << data.num_classes
              << " classes\n"
              << "data: " << data.description << "\n"
              << tnt::get_size() << " ranks";
    if (a.pipeline_stages > 1) {
      std::cout << " (" << replicas << " replica(s) of " << a.pipeline_stages << " pipeline stages)";
    }
    std::cout << ", global batch " << a.batch_size << " ("
              << steps_per_epoch << " steps per epoch), " << lr_text.str() << "\n"
              << "BatchNorm statistics: "
              << (a.sync_bn ? "global batch (SyncBatchNorm)" : "each rank's micro-batch") << "\n";
  }

  if (a.pipeline_stages > 1 && a.verbose > 0) report_stages(model, parameters);

  auto throughput = std::make_shared<Throughput>(train_samples, a.batch_size);
  std::vector<tnt::callbacks::CallbackPtr> callbacks = make_callbacks(a);
  callbacks.push_back(throughput);
  tnt::FitOptions fit;
  fit.epochs(a.epochs).verbose(a.verbose).callbacks(callbacks);
  std::optional<tnt::data::Dataset> val;
  if (data.val) val = data.val->batch(a.batch_size);
  if (val && a.val_freq > 0) fit.validation_data(*val).validation_freq(a.val_freq);
  if (a.resume && !a.checkpoint_dir.empty()) {
    // Collective: the newest checkpoint that loads (a damaged one is passed
    // over with a warning naming it and the older file tried next).
    const std::string loaded = tnt::load_latest_checkpoint(model, a.checkpoint_dir);
    if (!loaded.empty()) {
      fit.initial_epoch(model.epochs_done());
      if (tnt::is_master_rank()) std::cout << "resuming from " << loaded << "\n";
    }
  }
  tnt::callbacks::History history;
  if (a.epochs > fit.initial_epoch()) history = model.fit(train, fit);

  const std::string speed = throughput->report();
  if (tnt::is_master_rank() && !speed.empty())
    std::cout << "training throughput: " << speed << "\n";
  if (val) print_final_evaluation(model, *val, history, a);
  report_decoded(data);
  if (!a.save_weights.empty()) model.save_weights(a.save_weights);
  return 0;
}

#include <tarantella/base/error.h>
#include <tarantella/keras/losses.h>
#include <torch/torch.h>

#include <atomic>
#include <memory>
#include <utility>

#include "keras/describe.h"
#include "keras/registry.h"

namespace tnt::losses {
namespace F = torch::nn::functional;

namespace {
void check_same_shape(const char* loss, const torch::Tensor& p, const torch::Tensor& t) {
  TNT_CHECK(p.sizes() == t.sizes(), loss, ": predictions ", p.sizes(), " and targets ", t.sizes(),
            " must have the same shape");
}
Loss described(Loss loss, std::string config) {
  loss.config = std::move(config);
  return loss;
}

// Rounding slack of the range checks below.
constexpr double kRangeTolerance = 1e-6;

// On a GPU, a value check reads the batch on the host: the host waits for
// the GPU, once per step (train/observe/host_reads.h). There the checks run on the
// first few batches that each loss object sees (each call of
// tnt::losses::X() counts its own, so a second model in the process, with
// its own loss, is checked as the first was), so that a wrong dataset or
// model still shows at once with the messages below; a bad label later
// makes LibTorch's own device-side assertion fail (an error, never a silent
// one). On the CPU they cost nothing of the kind and run on every batch.
constexpr int kDeviceChecks = 2;
struct DeviceChecks {
  std::atomic<int> labels{0};
  std::atomic<int> values{0};
};
using Checks = std::shared_ptr<DeviceChecks>;
Checks new_checks() { return std::make_shared<DeviceChecks>(); }
bool check_now(const torch::Tensor& t, std::atomic<int>& checked) {
  return t.device().is_cpu() || checked.fetch_add(1) < kDeviceChecks;
}

// The smallest and largest value of `p` (one device-to-host copy). NaN
// propagates, so a diverged model (NaN outputs) passes the checks below: that
// is TerminateOnNaN's business, not a wrong input.
std::pair<double, double> value_range(const torch::Tensor& p) {
  const torch::Tensor d = p.detach();
  const torch::Tensor r = torch::stack({d.min(), d.max()}).to(torch::kCPU, torch::kDouble);  // host-sync: check_now
  return {r[0].item<double>(), r[1].item<double>()};  // host-only: copied above
}

// from_logits(false): the input must be probabilities. Taking the log of a
// negative value (e.g. log_softmax outputs) would silently train nothing.
void check_probabilities(DeviceChecks& checks, const char* loss, const torch::Tensor& p,
                         const char* fix) {
  if (p.numel() == 0 || !check_now(p, checks.values)) return;  // an empty batch: nothing to check
  const auto [lo, hi] = value_range(p);
  TNT_CHECK(!(lo < -kRangeTolerance || hi > 1 + kRangeTolerance), loss, " got values in [", lo,
            ", ", hi, "], which are not probabilities: ", fix);
}
// A label outside [0, C) makes LibTorch's nll_loss fail with a bare
// "Target 12 is out of bounds"; say which label and how many classes.
void check_labels(DeviceChecks& checks, const char* loss, const torch::Tensor& labels,
                  std::int64_t classes) {
  if (labels.numel() == 0 || !check_now(labels, checks.labels)) return;
  const std::int64_t lo = labels.min().item<std::int64_t>();  // host-sync: check_now
  const std::int64_t hi = labels.max().item<std::int64_t>();  // host-sync: check_now
  TNT_CHECK(lo >= 0 && hi < classes, loss, ": a label of this batch is ", lo < 0 ? lo : hi,
            ", outside the model's ", classes, " classes (0..", classes - 1,
            "): check the dataset's labels or the size of the model's last layer");
}
}  // namespace

Loss SparseCategoricalCrossentropy(LossOptions o) {
  return described(
      Loss{"sparse_categorical_crossentropy",
           [o, checks = new_checks()](const torch::Tensor& p, const torch::Tensor& t) {
             TNT_CHECK(p.dim() == t.dim() + 1, "sparse_categorical_crossentropy: predictions ",
                       p.sizes(), " need one dimension more than the integer targets ", t.sizes(),
                       " (scores [B, C], labels [B])");
             const torch::Tensor labels = t.to(torch::kLong);
             check_labels(*checks, "sparse_categorical_crossentropy", labels, p.size(1));
             if (o.from_logits()) return F::cross_entropy(p, labels);
             check_probabilities(
                 *checks, "SparseCategoricalCrossentropy(from_logits=false)", p,
                 "for log_softmax outputs use tnt::losses::NLLLoss() (or "
                 "from_logits(true), which gives the same loss on log-probabilities), "
                 "for raw scores use from_logits(true), the default");
             return F::nll_loss(p.clamp_min(1e-7).log(), labels);
           }},
      describe("SparseCategoricalCrossentropy", {{"from_logits", o.from_logits()}}));
}

Loss CategoricalCrossentropy(LossOptions o) {
  return described(Loss{"categorical_crossentropy",
                        [o, checks = new_checks()](const torch::Tensor& p, const torch::Tensor& t) {
                          check_same_shape("categorical_crossentropy", p, t);
                          if (!o.from_logits()) {
                            check_probabilities(
                                *checks, "CategoricalCrossentropy(from_logits=false)", p,
                                "for raw scores or log_softmax outputs use from_logits(true), the "
                                "default (log_softmax leaves log-probabilities unchanged)");
                          }
                          const torch::Tensor log_p =
                              o.from_logits() ? torch::log_softmax(p, -1) : p.clamp_min(1e-7).log();
                          return -(t * log_p).sum(-1).mean();
                        }},
                   describe("CategoricalCrossentropy", {{"from_logits", o.from_logits()}}));
}

Loss BinaryCrossentropy(LossOptions o) {
  Loss loss = described(Loss{"binary_crossentropy",
                        [o, checks = new_checks()](const torch::Tensor& p, const torch::Tensor& t) {
                          check_same_shape("binary_crossentropy", p, t);
                          const torch::Tensor target = t.to(p.scalar_type());
                          if (o.from_logits())
                            return F::binary_cross_entropy_with_logits(p, target);
                          check_probabilities(*checks, "BinaryCrossentropy(from_logits=false)", p,
                                              "for raw scores use from_logits(true), the default; "
                                              "for probabilities apply sigmoid in forward()");
                          return F::binary_cross_entropy(p.clamp(1e-7, 1 - 1e-7), target);
                        }},
                   describe("BinaryCrossentropy", {{"from_logits", o.from_logits()}}));
  loss.binary_threshold = o.from_logits() ? 0.0 : 0.5;
  return loss;
}

Loss NLLLoss() {
  return described(Loss{"nll_loss",
                        [checks = new_checks()](const torch::Tensor& p, const torch::Tensor& t) {
                          TNT_CHECK(p.dim() == t.dim() + 1, "NLLLoss: predictions ", p.sizes(),
                                    " need one dimension more than the integer targets ", t.sizes(),
                                    " (log-probabilities [B, C], labels [B])");
                          if (p.numel() > 0 && check_now(p, checks->values)) {
                            const double hi = value_range(p).second;
                            TNT_CHECK(
                                !(hi > kRangeTolerance), "NLLLoss got values up to ", hi,
                                ", which are not log-probabilities (those are <= 0): end forward() "
                                "with torch::log_softmax(x, 1), or for raw scores use "
                                "tnt::losses::SparseCategoricalCrossentropy()");
                          }
                          const torch::Tensor labels = t.to(torch::kLong);
                          check_labels(*checks, "NLLLoss", labels, p.size(1));
                          return F::nll_loss(p, labels);
                        }},
                   describe("NLLLoss", nlohmann::json::object()));
}

Loss MeanSquaredError() {
  return described(Loss{"mean_squared_error",
                        [](const torch::Tensor& p, const torch::Tensor& t) {
                          check_same_shape("mean_squared_error", p, t);
                          return F::mse_loss(p, t.to(p.scalar_type()));
                        }},
                   describe("MeanSquaredError", nlohmann::json::object()));
}

Loss MeanAbsoluteError() {
  return described(Loss{"mean_absolute_error",
                        [](const torch::Tensor& p, const torch::Tensor& t) {
                          check_same_shape("mean_absolute_error", p, t);
                          return F::l1_loss(p, t.to(p.scalar_type()));
                        }},
                   describe("MeanAbsoluteError", nlohmann::json::object()));
}

Loss Huber(LossOptions o) {
  return described(Loss{"huber",
                        [o](const torch::Tensor& p, const torch::Tensor& t) {
                          check_same_shape("huber", p, t);
                          return F::huber_loss(p, t.to(p.scalar_type()),
                                               F::HuberLossFuncOptions().delta(o.delta()));
                        }},
                   describe("Huber", {{"delta", o.delta()}}));
}

namespace {
using json = nlohmann::json;

// LossOptions with every field the config has; the rest keep their defaults.
LossOptions options_from(const char* name, const json& config) {
  const std::string where = std::string("loss ") + name;
  LossOptions o;
  keras::read_field(where, config, "from_logits", o.from_logits());
  keras::read_field(where, config, "delta", o.delta());
  return o;
}

keras::Registry<Loss>::Reader reader(const char* name, Loss (*make)(LossOptions)) {
  return [name, make](const json& config) { return make(options_from(name, config)); };
}
keras::Registry<Loss>::Reader reader(Loss (*make)()) {
  return [make](const json&) { return make(); };
}

const keras::Registry<Loss>& registry() {
  static const auto* r = new keras::Registry<Loss>(  // never destroyed, as the layers'
      "loss", keras::compile_part_fix("a loss"),
      {{"SparseCategoricalCrossentropy",
        reader("SparseCategoricalCrossentropy", SparseCategoricalCrossentropy)},
       {"CategoricalCrossentropy", reader("CategoricalCrossentropy", CategoricalCrossentropy)},
       {"BinaryCrossentropy", reader("BinaryCrossentropy", BinaryCrossentropy)},
       {"Huber", reader("Huber", Huber)},
       {"NLLLoss", reader(NLLLoss)},
       {"MeanSquaredError", reader(MeanSquaredError)},
       {"MeanAbsoluteError", reader(MeanAbsoluteError)}},
      // Keras's names (and Loss::name), each with the class's defaults.
      {{"sparse_categorical_crossentropy", {{"class_name", "SparseCategoricalCrossentropy"}}},
       {"categorical_crossentropy", {{"class_name", "CategoricalCrossentropy"}}},
       {"binary_crossentropy", {{"class_name", "BinaryCrossentropy"}}},
       {"mean_squared_error", {{"class_name", "MeanSquaredError"}}},
       {"mse", {{"class_name", "MeanSquaredError"}}},
       {"mean_absolute_error", {{"class_name", "MeanAbsoluteError"}}},
       {"mae", {{"class_name", "MeanAbsoluteError"}}},
       {"huber", {{"class_name", "Huber"}}},
       {"nll_loss", {{"class_name", "NLLLoss"}}}});
  return *r;
}
}  // namespace

Loss from_config(const json& description) { return registry().read(description); }

Loss get(const std::string& name) { return registry().get(name); }

}  // namespace tnt::losses

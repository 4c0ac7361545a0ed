#include <tarantella/keras/metrics.h>
#include <tarantella/base/error.h>
#include <torch/torch.h>

#include "keras/describe.h"
#include "keras/registry.h"

namespace tnt::metrics {
namespace {

// State {numerator, count}; value numerator / count (0 when empty).
double ratio(const std::vector<double>& s) { return s[1] > 0 ? s[0] / s[1] : 0.0; }

// On the numerator's device: stack() takes no host scalar beside a GPU
// tensor, and the state stays on the device (no host synchronisation).
torch::Tensor pair(const torch::Tensor& numerator, double count) {
  const torch::Tensor sum = numerator.to(torch::kFloat64).sum();
  return torch::stack({sum, torch::full({}, count, sum.options())});
}

Metric ratio_metric(std::string name, Metric::Update update) {
  return Metric{std::move(name), 2, std::move(update), ratio, {}};
}

torch::Tensor sparse_hits(const torch::Tensor& p, const torch::Tensor& t) {
  return p.argmax(-1).eq(t.to(torch::kLong).reshape(p.argmax(-1).sizes()));
}

Metric described(Metric metric, std::string config) {
  metric.config = std::move(config);
  return metric;
}

}  // namespace

Metric Metric::mean_of(std::string name,
                       std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> f) {
  return ratio_metric(std::move(name), [f](const torch::Tensor& p, const torch::Tensor& t) {
    const torch::Tensor values = f(p, t);
    return pair(values, static_cast<double>(values.numel()));
  });
}

Metric SparseCategoricalAccuracy() {
  return described(ratio_metric("sparse_categorical_accuracy",
                                [](const torch::Tensor& p, const torch::Tensor& t) {
                                  return pair(sparse_hits(p, t), static_cast<double>(t.numel()));
                                }),
                   describe("SparseCategoricalAccuracy", nlohmann::json::object()));
}

Metric CategoricalAccuracy() {
  return described(ratio_metric("categorical_accuracy",
                                [](const torch::Tensor& p, const torch::Tensor& t) {
                                  const torch::Tensor hits = p.argmax(-1).eq(t.argmax(-1));
                                  return pair(hits, static_cast<double>(hits.numel()));
                                }),
                   describe("CategoricalAccuracy", nlohmann::json::object()));
}

namespace {
// Prediction > `at` counts as 1, the target as 1 above 0.5.
Metric binary_hits(std::string name, double at) {
  return ratio_metric(std::move(name), [at](const torch::Tensor& p, const torch::Tensor& t) {
    const torch::Tensor hits = p.gt(at).eq(t.to(torch::kFloat64).gt(0.5));
    return pair(hits, static_cast<double>(hits.numel()));
  });
}

// `from_loss`: no threshold was given, compile() sets the loss's; the
// description has none either, so that load_model's recompile does again.
Metric binary_accuracy_at(double at, bool from_loss) {
  Metric m = described(binary_hits("binary_accuracy", at),
                       from_loss ? describe("BinaryAccuracy", nlohmann::json::object())
                                 : describe("BinaryAccuracy", {{"threshold", at}}));
  if (from_loss) m.at_threshold = [](double t) { return binary_accuracy_at(t, true); };
  return m;
}

// Accuracy compiled with a binary loss is binary accuracy at the loss's
// threshold, whatever the shapes (Keras: multi-label outputs too).
Metric accuracy_of_binary_loss(double at) {
  Metric m = described(binary_hits("accuracy", at), describe("Accuracy", nlohmann::json::object()));
  m.at_threshold = accuracy_of_binary_loss;
  return m;
}
}  // namespace

Metric BinaryAccuracy(std::optional<double> threshold) {
  return binary_accuracy_at(threshold.value_or(0.5), !threshold.has_value());
}

Metric Accuracy() {
  Metric m = described(ratio_metric("accuracy",
                                    [](const torch::Tensor& p, const torch::Tensor& t) {
                                      torch::Tensor hits;
                                      if (p.dim() == t.dim() + 1) {
                                        hits = sparse_hits(p, t);
                                      } else if (p.dim() > 1 && p.size(-1) > 1) {
                                        hits = p.argmax(-1).eq(t.argmax(-1));
                                      } else {  // one value per sample: [B] or [B, 1]
                                        hits = p.gt(0.5).eq(t.to(torch::kFloat64).gt(0.5));
                                      }
                                      return pair(hits, static_cast<double>(hits.numel()));
                                    }),
                       describe("Accuracy", nlohmann::json::object()));
  m.at_threshold = accuracy_of_binary_loss;
  return m;
}

Metric TopKCategoricalAccuracy(int k) {
  TNT_CHECK(k >= 1, "top-k accuracy needs k >= 1, got ", k);
  return described(ratio_metric("top_" + std::to_string(k) + "_accuracy",
                                [k](const torch::Tensor& p, const torch::Tensor& t) {
                                  const torch::Tensor labels =
                                      p.dim() == t.dim() + 1 ? t.to(torch::kLong) : t.argmax(-1);
                                  const int kk =
                                      static_cast<int>(std::min<std::int64_t>(k, p.size(-1)));
                                  const torch::Tensor top = std::get<1>(p.topk(kk, -1));
                                  const torch::Tensor hits = top.eq(labels.unsqueeze(-1)).any(-1);
                                  return pair(hits, static_cast<double>(hits.numel()));
                                }),
                   describe("TopKCategoricalAccuracy", {{"k", k}}));
}

Metric MeanSquaredError() {
  return described(Metric::mean_of("mean_squared_error",
                                   [](const torch::Tensor& p, const torch::Tensor& t) {
                                     return (p - t.to(p.scalar_type())).pow(2);
                                   }),
                   describe("MeanSquaredError", nlohmann::json::object()));
}

Metric MeanAbsoluteError() {
  return described(Metric::mean_of("mean_absolute_error",
                                   [](const torch::Tensor& p, const torch::Tensor& t) {
                                     return (p - t.to(p.scalar_type())).abs();
                                   }),
                   describe("MeanAbsoluteError", nlohmann::json::object()));
}

namespace {
using json = nlohmann::json;

keras::Registry<Metric>::Reader reader(Metric (*make)()) {
  return [make](const json&) { return make(); };
}

const keras::Registry<Metric>& registry() {
  static const auto* r = new keras::Registry<Metric>(  // never destroyed, as the layers'
      "metric", keras::compile_part_fix("a metric"),
      {{"Accuracy", reader(Accuracy)},
       {"SparseCategoricalAccuracy", reader(SparseCategoricalAccuracy)},
       {"CategoricalAccuracy", reader(CategoricalAccuracy)},
       {"BinaryAccuracy",
        [](const json& c) {
          return keras::with_or_without<double>("metric BinaryAccuracy", c, "threshold",
                                                [](auto... t) { return BinaryAccuracy(t...); });
        }},
       {"TopKCategoricalAccuracy",
        [](const json& c) {
          return keras::with_or_without<int>(
              "metric TopKCategoricalAccuracy", c, "k",
              [](auto... k) { return TopKCategoricalAccuracy(k...); });
        }},
       {"MeanSquaredError", reader(MeanSquaredError)},
       {"MeanAbsoluteError", reader(MeanAbsoluteError)}},
      // Keras's names, each with the class's defaults.
      {{"accuracy", {{"class_name", "Accuracy"}}},
       {"acc", {{"class_name", "Accuracy"}}},
       {"sparse_categorical_accuracy", {{"class_name", "SparseCategoricalAccuracy"}}},
       {"categorical_accuracy", {{"class_name", "CategoricalAccuracy"}}},
       {"binary_accuracy", {{"class_name", "BinaryAccuracy"}}},
       {"top_k_categorical_accuracy", {{"class_name", "TopKCategoricalAccuracy"}}},
       {"mean_squared_error", {{"class_name", "MeanSquaredError"}}},
       {"mse", {{"class_name", "MeanSquaredError"}}},
       {"mean_absolute_error", {{"class_name", "MeanAbsoluteError"}}},
       {"mae", {{"class_name", "MeanAbsoluteError"}}}});
  return *r;
}
}  // namespace

Metric from_config(const json& description) { return registry().read(description); }

Metric get(const std::string& name) { return registry().get(name); }

}  // namespace tnt::metrics

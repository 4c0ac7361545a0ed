#include <tarantella/keras/layers.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/keras/sync_batchnorm.h>

#include "keras/registry.h"

namespace tnt::layers {

// Each options struct's fields under their config names: get_config writes
// them and from_config reads them (keras::fields_to_config / options_from find
// these by argument-dependent lookup, so they live in this namespace).
template <typename Visit>
static void fields(DenseOptions& o, Visit&& v) {
  v("in_features", o.in_features());
  v("units", o.units());
  v("activation", o.activation());
  v("use_bias", o.use_bias());
}
template <typename Visit>
static void fields(Conv2DOptions& o, Visit&& v) {
  v("in_channels", o.in_channels());
  v("filters", o.filters());
  v("kernel_size", o.kernel_size());
  v("strides", o.strides());
  v("padding", o.padding());
  v("activation", o.activation());
  v("use_bias", o.use_bias());
}
template <typename Visit>
static void fields(Pool2DOptions& o, Visit&& v) {
  v("pool_size", o.pool_size());
  v("strides", o.strides());
}
template <typename Visit>
static void fields(BatchNormOptions& o, Visit&& v) {
  v("num_features", o.num_features());
  v("momentum", o.momentum());
  v("epsilon", o.epsilon());
}
template <typename Visit>
static void fields(LayerNormOptions& o, Visit&& v) {
  v("normalized_shape", o.normalized_shape());
  v("epsilon", o.epsilon());
}

namespace {

using json = nlohmann::json;
using keras::field;
using I = std::int64_t;

// ---- activations ----------------------------------------------------------

using ActivationFn = torch::Tensor (*)(const torch::Tensor&);

const std::map<std::string, ActivationFn>& activations() {
  static const std::map<std::string, ActivationFn> table = {
      {"linear", [](const torch::Tensor& x) { return x; }},
      {"relu", [](const torch::Tensor& x) { return torch::relu(x); }},
      {"sigmoid", [](const torch::Tensor& x) { return torch::sigmoid(x); }},
      {"tanh", [](const torch::Tensor& x) { return torch::tanh(x); }},
      {"softmax", [](const torch::Tensor& x) { return torch::softmax(x, -1); }},
      {"log_softmax", [](const torch::Tensor& x) { return torch::log_softmax(x, -1); }},
      {"gelu", [](const torch::Tensor& x) { return torch::gelu(x); }},
      {"elu", [](const torch::Tensor& x) { return torch::elu(x); }},
      {"selu", [](const torch::Tensor& x) { return torch::selu(x); }},
      {"leaky_relu", [](const torch::Tensor& x) { return torch::leaky_relu(x, 0.3); }},
      {"softplus", [](const torch::Tensor& x) { return torch::softplus(x); }},
      {"silu", [](const torch::Tensor& x) { return torch::silu(x); }},
      {"swish", [](const torch::Tensor& x) { return torch::silu(x); }},
  };
  return table;
}

ActivationFn activation_or_throw(const std::string& layer, const std::string& name) {
  const auto it = activations().find(name);
  if (it == activations().end()) {
    std::string known;
    for (const auto& [n, f] : activations()) known += (known.empty() ? "" : ", ") + n;
    throw Error(detail::concat(layer, ": unknown activation '", name, "'; use one of: ", known));
  }
  return it->second;
}

void check_positive(const char* layer, const char* field, std::int64_t value) {
  TNT_CHECK(value > 0, layer, " needs ", field, " > 0, got ", value);
}

// PyTorch's default initialization of Linear / Conv2d (kaiming uniform with
// a = sqrt(5), bias uniform in +-1/sqrt(fan_in)), so networks built here
// start like their PyTorch twins.
void init_like_pytorch(torch::Tensor& weight, torch::Tensor& bias, std::int64_t fan_in) {
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    bias.uniform_(-bound, bound);
  }
}

// ---- the layers -------------------------------------------------------------

class DenseLayer : public LayerImpl {
 public:
  explicit DenseLayer(DenseOptions o) : LayerImpl("Dense"), o_(std::move(o)) {
    check_positive("Dense", "in_features", o_.in_features());
    check_positive("Dense", "units", o_.units());
    activation_ = activation_or_throw("Dense", o_.activation());
    weight_ = register_parameter("weight", torch::empty({o_.units(), o_.in_features()}));
    if (o_.use_bias()) bias_ = register_parameter("bias", torch::empty({o_.units()}));
    init_like_pytorch(weight_, bias_, o_.in_features());
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    const std::int64_t in = o_.in_features();
    TNT_CHECK(x.dim() >= 1 && x.size(-1) == in, "Dense(in_features=", in,
              ") got an input of shape ", x.sizes(), ": its last dimension must be ", in);
    return activation_(torch::linear(x, weight_, bias_));
  }
  json get_config() const override { return keras::fields_to_config(o_); }
  static Layer from_config(const json& c) {
    const char* where = "layer Dense";
    return Dense(keras::options_from(
        where, c, DenseOptions(field<I>(where, c, "in_features"), field<I>(where, c, "units"))));
  }

 private:
  DenseOptions o_;
  ActivationFn activation_;
  torch::Tensor weight_, bias_;
};

class Conv2DLayer : public LayerImpl {
 public:
  explicit Conv2DLayer(Conv2DOptions o) : LayerImpl("Conv2D"), o_(std::move(o)) {
    check_positive("Conv2D", "in_channels", o_.in_channels());
    check_positive("Conv2D", "filters", o_.filters());
    check_positive("Conv2D", "kernel_size", o_.kernel_size());
    check_positive("Conv2D", "strides", o_.strides());
    TNT_CHECK(o_.padding() == "valid" || o_.padding() == "same",
              "Conv2D: padding must be \"valid\" or \"same\", got \"", o_.padding(), "\"");
    activation_ = activation_or_throw("Conv2D", o_.activation());
    const std::int64_t k = o_.kernel_size();
    weight_ = register_parameter("weight", torch::empty({o_.filters(), o_.in_channels(), k, k}));
    if (o_.use_bias()) bias_ = register_parameter("bias", torch::empty({o_.filters()}));
    init_like_pytorch(weight_, bias_, o_.in_channels() * k * k);
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    const std::int64_t in = o_.in_channels(), s = o_.strides();
    TNT_CHECK(x.dim() == 4 && x.size(1) == in, "Conv2D(in_channels=", in,
              ") needs inputs [batch, ", in, ", height, width], got ", x.sizes());
    const torch::Tensor input = o_.padding() == "same" ? pad_same(x) : x;
    return activation_(torch::conv2d(input, weight_, bias_, {s, s}));
  }
  json get_config() const override { return keras::fields_to_config(o_); }
  static Layer from_config(const json& c) {
    const char* where = "layer Conv2D";
    return Conv2D(keras::options_from(
        where, c,
        Conv2DOptions(field<I>(where, c, "in_channels"), field<I>(where, c, "filters"),
                      field<I>(where, c, "kernel_size"))));
  }

 private:
  // Keras's "same": output = ceil(input / strides); extra padding on the
  // bottom/right when the total is odd.
  torch::Tensor pad_same(const torch::Tensor& x) const {
    const std::int64_t s = o_.strides(), k = o_.kernel_size();
    std::vector<std::int64_t> pad;  // F.pad order: left, right, top, bottom
    for (int dim : {3, 2}) {
      const std::int64_t size = x.size(dim);
      const std::int64_t out = (size + s - 1) / s;
      const std::int64_t total = std::max<std::int64_t>((out - 1) * s + k - size, 0);
      pad.push_back(total / 2);
      pad.push_back(total - total / 2);
    }
    return torch::constant_pad_nd(x, pad, 0);
  }

  Conv2DOptions o_;
  ActivationFn activation_;
  torch::Tensor weight_, bias_;
};

class Pool2DLayer : public LayerImpl {
 public:
  Pool2DLayer(bool max, Pool2DOptions o)
      : LayerImpl(max ? "MaxPool2D" : "AvgPool2D"), max_(max), o_(o) {
    check_positive(max ? "MaxPool2D" : "AvgPool2D", "pool_size", o_.pool_size());
    TNT_CHECK(o_.strides() >= 0, name(), " needs strides >= 0 (0 = pool_size), got ",
              o_.strides());
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    TNT_CHECK(x.dim() == 4, name(), " needs inputs [batch, channels, height, width], got ",
              x.sizes());
    const std::int64_t p = o_.pool_size();
    const std::int64_t s = o_.strides() > 0 ? o_.strides() : p;
    return max_ ? torch::max_pool2d(x, {p, p}, {s, s}) : torch::avg_pool2d(x, {p, p}, {s, s});
  }
  json get_config() const override { return keras::fields_to_config(o_); }
  template <bool kMax>
  static Layer from_config(const json& c) {
    const auto o = keras::options_from(kMax ? "layer MaxPool2D" : "layer AvgPool2D", c,
                                       Pool2DOptions());
    return kMax ? MaxPool2D(o) : AvgPool2D(o);
  }

 private:
  bool max_;
  Pool2DOptions o_;
};

class FlattenLayer : public LayerImpl {
 public:
  FlattenLayer() : LayerImpl("Flatten") {}
  torch::Tensor forward(const torch::Tensor& x) override { return x.flatten(1); }
  json get_config() const override { return json::object(); }
  static Layer from_config(const json&) { return Flatten(); }
};

class DropoutLayer : public LayerImpl {
 public:
  explicit DropoutLayer(double rate) : LayerImpl("Dropout"), rate_(rate) {
    TNT_CHECK(rate >= 0 && rate < 1, "Dropout needs 0 <= rate < 1, got ", rate);
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return torch::dropout(x, rate_, is_training());
  }
  json get_config() const override { return {{"rate", rate_}}; }
  static Layer from_config(const json& c) {
    return Dropout(field<double>("layer Dropout", c, "rate"));
  }

 private:
  double rate_;
};

// BatchNorm and SyncBatchNorm: the same arguments, parameters and buffers
// (PyTorch's names); they differ in whose statistics normalize.
class BatchNormLayer : public LayerImpl {
 public:
  explicit BatchNormLayer(BatchNormOptions o, const char* class_name = "BatchNorm")
      : LayerImpl(class_name), o_(o) {
    const std::int64_t features = o_.num_features();
    check_positive(class_name, "num_features", features);
    TNT_CHECK(o_.momentum() >= 0 && o_.momentum() <= 1, class_name,
              " needs 0 <= momentum <= 1, got ", o_.momentum());
    TNT_CHECK(o_.epsilon() > 0, class_name, " needs epsilon > 0, got ", o_.epsilon());
    weight_ = register_parameter("weight", torch::ones({features}));
    bias_ = register_parameter("bias", torch::zeros({features}));
    running_mean_ = register_buffer("running_mean", torch::zeros({features}));
    running_var_ = register_buffer("running_var", torch::ones({features}));
    num_batches_ = register_buffer("num_batches_tracked", torch::zeros({}, torch::kLong));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    begin_batch(x);
    // PyTorch's momentum is the weight of the new batch: Keras's 1 - momentum.
    return torch::batch_norm(x, weight_, bias_, running_mean_, running_var_, is_training(),
                             1.0 - o_.momentum(), o_.epsilon(), /*cudnn_enabled=*/true);
  }
  json get_config() const override { return keras::fields_to_config(o_); }
  template <bool kSync>
  static Layer from_config(const json& c) {
    const char* where = kSync ? "layer SyncBatchNorm" : "layer BatchNorm";
    const auto o = keras::options_from(
        where, c, BatchNormOptions(field<I>(where, c, "num_features")));
    return kSync ? SyncBatchNorm(o) : BatchNorm(o);
  }

 protected:
  void begin_batch(const torch::Tensor& x) {
    const std::int64_t features = o_.num_features();
    TNT_CHECK(x.dim() >= 2 && x.size(1) == features, name(), "(num_features=", features,
              ") needs inputs [batch, ", features, ", ...], got ", x.sizes());
    if (is_training()) {
      torch::NoGradGuard no_grad;
      num_batches_.add_(1);
    }
  }

  BatchNormOptions o_;
  torch::Tensor weight_, bias_, running_mean_, running_var_, num_batches_;
};

class SyncBatchNormLayer : public BatchNormLayer, public nn::CollectiveModule {
 public:
  explicit SyncBatchNormLayer(BatchNormOptions o) : BatchNormLayer(o, "SyncBatchNorm") {}
  torch::Tensor forward(const torch::Tensor& x) override {
    begin_batch(x);
    return nn::sync_batch_norm(x, weight_, bias_, running_mean_, running_var_, is_training(),
                               1.0 - o_.momentum(), o_.epsilon(), process_group());
  }
};

class LayerNormLayer : public LayerImpl {
 public:
  explicit LayerNormLayer(LayerNormOptions o) : LayerImpl("LayerNorm"), o_(std::move(o)) {
    const auto& shape = o_.normalized_shape();
    TNT_CHECK(!shape.empty(), "LayerNorm needs a non-empty normalized_shape");
    for (auto d : shape) check_positive("LayerNorm", "normalized_shape entries", d);
    TNT_CHECK(o_.epsilon() > 0, "LayerNorm needs epsilon > 0, got ", o_.epsilon());
    weight_ = register_parameter("weight", torch::ones(shape));
    bias_ = register_parameter("bias", torch::zeros(shape));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return torch::layer_norm(x, o_.normalized_shape(), weight_, bias_, o_.epsilon());
  }
  json get_config() const override { return keras::fields_to_config(o_); }
  static Layer from_config(const json& c) {
    const char* where = "layer LayerNorm";
    return LayerNorm(keras::options_from(
        where, c, LayerNormOptions(field<std::vector<I>>(where, c, "normalized_shape"))));
  }

 private:
  LayerNormOptions o_;
  torch::Tensor weight_, bias_;
};

class EmbeddingLayer : public LayerImpl {
 public:
  EmbeddingLayer(std::int64_t input_dim, std::int64_t output_dim)
      : LayerImpl("Embedding"), input_dim_(input_dim), output_dim_(output_dim) {
    check_positive("Embedding", "input_dim", input_dim);
    check_positive("Embedding", "output_dim", output_dim);
    weight_ = register_parameter("weight", torch::randn({input_dim, output_dim}));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    TNT_CHECK(!x.is_floating_point(), "Embedding needs integer indices, got a ", x.scalar_type(),
              " tensor");
    return torch::embedding(weight_, x.to(torch::kLong));
  }
  json get_config() const override {
    return {{"input_dim", input_dim_}, {"output_dim", output_dim_}};
  }
  static Layer from_config(const json& c) {
    const char* where = "layer Embedding";
    return Embedding(field<I>(where, c, "input_dim"), field<I>(where, c, "output_dim"));
  }

 private:
  std::int64_t input_dim_, output_dim_;
  torch::Tensor weight_;
};

class ActivationLayer : public LayerImpl {
 public:
  explicit ActivationLayer(std::string activation)
      : LayerImpl("Activation"),
        activation_name_(std::move(activation)),
        activation_(activation_or_throw("Activation", activation_name_)) {}
  torch::Tensor forward(const torch::Tensor& x) override { return activation_(x); }
  json get_config() const override { return {{"activation", activation_name_}}; }
  static Layer from_config(const json& c) {
    return Activation(field<std::string>("layer Activation", c, "activation"));
  }

 private:
  std::string activation_name_;
  ActivationFn activation_;
};

// ---- the registry -----------------------------------------------------------

// The built-in layers' readers (each class's from_config, beside its
// get_config); register_layer adds the user's.
std::map<std::string, LayerFactory> builtin_readers() {
  return {{"Dense", DenseLayer::from_config},
          {"Conv2D", Conv2DLayer::from_config},
          {"MaxPool2D", Pool2DLayer::from_config<true>},
          {"AvgPool2D", Pool2DLayer::from_config<false>},
          {"Flatten", FlattenLayer::from_config},
          {"Dropout", DropoutLayer::from_config},
          {"BatchNorm", BatchNormLayer::from_config<false>},
          {"SyncBatchNorm", BatchNormLayer::from_config<true>},
          {"LayerNorm", LayerNormLayer::from_config},
          {"Embedding", EmbeddingLayer::from_config},
          {"Activation", ActivationLayer::from_config}};
}

keras::Registry<Layer>& registry() {
  // Never destroyed: usable from static destructors.
  static auto* r = new keras::Registry<Layer>(
      "layer", "register it with tnt::layers::register_layer", builtin_readers());
  return *r;
}

}  // namespace

std::vector<std::string> activation_names() {
  std::vector<std::string> names;
  for (const auto& [name, f] : activations()) names.push_back(name);
  return names;
}

Layer Dense(DenseOptions options) { return std::make_shared<DenseLayer>(std::move(options)); }
Layer Conv2D(Conv2DOptions options) { return std::make_shared<Conv2DLayer>(std::move(options)); }
Layer MaxPool2D(Pool2DOptions options) { return std::make_shared<Pool2DLayer>(true, options); }
Layer AvgPool2D(Pool2DOptions options) { return std::make_shared<Pool2DLayer>(false, options); }
Layer BatchNorm(BatchNormOptions options) { return std::make_shared<BatchNormLayer>(options); }
Layer SyncBatchNorm(BatchNormOptions options) {
  return std::make_shared<SyncBatchNormLayer>(options);
}
Layer LayerNorm(LayerNormOptions options) {
  return std::make_shared<LayerNormLayer>(std::move(options));
}

Layer Dense(std::int64_t in, std::int64_t units, std::string activation, bool use_bias) {
  return Dense(DenseOptions(in, units).activation(std::move(activation)).use_bias(use_bias));
}
Layer Conv2D(std::int64_t in, std::int64_t filters, std::int64_t kernel, std::int64_t strides,
             std::string padding, std::string activation, bool use_bias) {
  return Conv2D(Conv2DOptions(in, filters, kernel)
                    .strides(strides)
                    .padding(std::move(padding))
                    .activation(std::move(activation))
                    .use_bias(use_bias));
}
Layer MaxPool2D(std::int64_t pool, std::int64_t strides) {
  return MaxPool2D(Pool2DOptions().pool_size(pool).strides(strides));
}
Layer AvgPool2D(std::int64_t pool, std::int64_t strides) {
  return AvgPool2D(Pool2DOptions().pool_size(pool).strides(strides));
}
Layer BatchNorm(std::int64_t features, double momentum, double epsilon) {
  return BatchNorm(BatchNormOptions(features).momentum(momentum).epsilon(epsilon));
}
Layer SyncBatchNorm(std::int64_t features, double momentum, double epsilon) {
  return SyncBatchNorm(BatchNormOptions(features).momentum(momentum).epsilon(epsilon));
}
Layer LayerNorm(std::vector<std::int64_t> shape, double epsilon) {
  return LayerNorm(LayerNormOptions(std::move(shape)).epsilon(epsilon));
}
Layer Flatten() { return std::make_shared<FlattenLayer>(); }
Layer Dropout(double rate) { return std::make_shared<DropoutLayer>(rate); }
Layer Embedding(std::int64_t input_dim, std::int64_t output_dim) {
  return std::make_shared<EmbeddingLayer>(input_dim, output_dim);
}
Layer Activation(std::string name) { return std::make_shared<ActivationLayer>(std::move(name)); }

void register_layer(const std::string& class_name, LayerFactory factory) {
  registry().add(class_name, std::move(factory));
}

std::vector<std::string> registered_layers() { return registry().names(); }

Layer layer_from_config(const json& description) {
  Layer layer = registry().read(description);
  TNT_CHECK(layer != nullptr, "the factory of layer class ", description["class_name"].dump(),
            " returned no layer");
  return layer;
}

SequentialImpl::SequentialImpl(std::vector<Layer> layers, std::string name)
    : torch::nn::Module("Sequential"), sequential_name_(std::move(name)) {
  for (auto& layer : layers) add(std::move(layer));
}

void SequentialImpl::add(Layer layer) {
  TNT_CHECK(layer != nullptr, "Sequential::add got no layer (a null Layer)");
  register_module(std::to_string(layers_.size()), layer);
  layers_.push_back(std::move(layer));
}

void SequentialImpl::replace(std::size_t index, Layer layer) {
  TNT_CHECK(index < layers_.size(), "Sequential::replace: no layer ", index,
            " (the Sequential has ", layers_.size(), ")");
  TNT_CHECK(layer != nullptr, "Sequential::replace got no layer (a null Layer)");
  replace_module(std::to_string(index), layer);
  layers_[index] = std::move(layer);
}

torch::Tensor SequentialImpl::forward(const torch::Tensor& x) {
  TNT_CHECK(!layers_.empty(), "Sequential '", sequential_name_, "' has no layers");
  torch::Tensor y = x;
  for (auto& layer : layers_) y = layer->forward(y);
  return y;
}

json SequentialImpl::get_config() const {
  json layers = json::array();
  for (const auto& layer : layers_) {
    layers.push_back({{"class_name", layer->class_name()}, {"config", layer->get_config()}});
  }
  return {{"class_name", "Sequential"},
          {"config", {{"name", sequential_name_}, {"layers", std::move(layers)}}}};
}

std::string SequentialImpl::config_json() const { return get_config().dump(); }

std::shared_ptr<SequentialImpl> SequentialImpl::from_config(const json& config) {
  TNT_CHECK(config.is_object() && config.value("class_name", "") == "Sequential" &&
                config.contains("config") && config["config"].is_object(),
            "not a Sequential architecture (expected {\"class_name\": \"Sequential\", \"config\": "
            "{\"layers\": [...]}}): ",
            config.dump().substr(0, 200));
  const json& body = config["config"];
  TNT_CHECK(body.contains("layers") && body["layers"].is_array(),
            "the Sequential config has no \"layers\" array: ", body.dump().substr(0, 200));
  auto net = std::make_shared<SequentialImpl>(std::vector<Layer>{},
                                              body.value("name", std::string("sequential")));
  std::size_t index = 0;
  for (const json& layer : body["layers"]) {
    try {
      net->add(layer_from_config(layer));
    } catch (const Error& e) {
      throw Error(detail::concat("layer ", index, " of the Sequential: ", e.what()));
    }
    ++index;
  }
  return net;
}

}  // namespace tnt::layers

// The layer registry: Keras-style layers that describe themselves, and a
// Sequential of them whose architecture round-trips through JSON
// (Model::get_config / to_json, tnt::models::model_from_config /
// model_from_json / clone_model / load_model).
//
// Parameter names follow PyTorch's nn.Sequential ("0.weight", "0.bias",
// "2.running_mean", ...), so the weights of the same network built in Python
// load with Model::load_weights.
//
// Example:
//   namespace L = tnt::layers;
//   tnt::Model model(L::Sequential({L::Conv2D(1, 6, 5, 1, "same", "relu"), L::MaxPool2D(2),
//                                   L::Flatten(), L::Dense(6 * 14 * 14, 10)}));
//   std::string json = model.to_json();
//   tnt::Model copy = tnt::models::model_from_json(json);  // fresh weights
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <tarantella/base/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace tnt::layers {

/// A layer of the registry: a module from one tensor to one tensor that can
/// describe itself. Derive from it (and register_layer) for your own layers.
class LayerImpl : public torch::nn::Module {
 public:
  /// `class_name` is the registry name, e.g. "Dense".
  explicit LayerImpl(std::string class_name) : torch::nn::Module(std::move(class_name)) {}
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  /// The registry name, e.g. "Dense".
  std::string class_name() const { return name(); }
  /// The arguments that rebuild this layer (Keras's get_config), e.g.
  /// {"in_features": 784, "units": 10, "activation": "linear", "use_bias": true}.
  virtual nlohmann::json get_config() const = 0;
};
using Layer = std::shared_ptr<LayerImpl>;

/// The activations that Dense, Conv2D and Activation accept: linear, relu,
/// sigmoid, tanh, softmax, log_softmax, gelu, elu, selu, leaky_relu,
/// softplus, silu (alias swish).
std::vector<std::string> activation_names();

/// Dense's arguments: y = activation(x W^T + b); x is [..., in_features].
/// Example: tnt::layers::Dense(tnt::layers::DenseOptions(784, 10).activation("relu"))
struct DenseOptions {
  DenseOptions(std::int64_t in_features, std::int64_t units)
      : in_features_(in_features), units_(units) {}
  TNT_ARG(std::int64_t, in_features);
  TNT_ARG(std::int64_t, units);
  TNT_ARG(std::string, activation) = "linear";
  TNT_ARG(bool, use_bias) = true;
};

/// Conv2D's arguments: a 2-d convolution over [B, C, H, W] with a square
/// kernel; padding "valid" (none) or "same" (output size ceil(input /
/// strides), as Keras).
/// Example: tnt::layers::Conv2D(tnt::layers::Conv2DOptions(1, 6, 5).padding("same"))
struct Conv2DOptions {
  Conv2DOptions(std::int64_t in_channels, std::int64_t filters, std::int64_t kernel_size)
      : in_channels_(in_channels), filters_(filters), kernel_size_(kernel_size) {}
  TNT_ARG(std::int64_t, in_channels);
  TNT_ARG(std::int64_t, filters);
  TNT_ARG(std::int64_t, kernel_size);
  TNT_ARG(std::int64_t, strides) = 1;
  TNT_ARG(std::string, padding) = "valid";
  TNT_ARG(std::string, activation) = "linear";
  TNT_ARG(bool, use_bias) = true;
};

/// MaxPool2D's and AvgPool2D's arguments: square windows; strides 0 means
/// pool_size.
struct Pool2DOptions {
  TNT_ARG(std::int64_t, pool_size) = 2;
  TNT_ARG(std::int64_t, strides) = 0;
};

/// BatchNorm's and SyncBatchNorm's arguments. Keras's momentum convention
/// (running = momentum * running + (1 - momentum) * batch).
struct BatchNormOptions {
  explicit BatchNormOptions(std::int64_t num_features) : num_features_(num_features) {}
  TNT_ARG(std::int64_t, num_features);
  TNT_ARG(double, momentum) = 0.99;
  TNT_ARG(double, epsilon) = 1e-3;
};

/// LayerNorm's arguments: normalization over the trailing
/// `normalized_shape` dimensions.
struct LayerNormOptions {
  explicit LayerNormOptions(std::vector<std::int64_t> normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}
  TNT_ARG(std::vector<std::int64_t>, normalized_shape);
  TNT_ARG(double, epsilon) = 1e-3;
};

Layer Dense(DenseOptions options);
Layer Conv2D(Conv2DOptions options);
Layer MaxPool2D(Pool2DOptions options);
Layer AvgPool2D(Pool2DOptions options);
/// Batch normalization over channel dimension 1 of [B, C] or [B, C, ...]
/// inputs. Uses each rank's local batch statistics.
Layer BatchNorm(BatchNormOptions options);
/// BatchNorm with the statistics of the GLOBAL batch (all ranks'
/// micro-batches; sync_batchnorm.h): same arguments, parameters and
/// buffers. In a tnt::Model it normalizes over the model's group.
Layer SyncBatchNorm(BatchNormOptions options);
Layer LayerNorm(LayerNormOptions options);

// The positional forms: each forwards to the options form, and an argument
// left out takes the options struct's default.
Layer Dense(std::int64_t in_features, std::int64_t units,
            std::string activation = DenseOptions(1, 1).activation(),
            bool use_bias = DenseOptions(1, 1).use_bias());
Layer Conv2D(std::int64_t in_channels, std::int64_t filters, std::int64_t kernel_size,
             std::int64_t strides = Conv2DOptions(1, 1, 1).strides(),
             std::string padding = Conv2DOptions(1, 1, 1).padding(),
             std::string activation = Conv2DOptions(1, 1, 1).activation(),
             bool use_bias = Conv2DOptions(1, 1, 1).use_bias());
Layer MaxPool2D(std::int64_t pool_size = Pool2DOptions().pool_size(),
                std::int64_t strides = Pool2DOptions().strides());
Layer AvgPool2D(std::int64_t pool_size = Pool2DOptions().pool_size(),
                std::int64_t strides = Pool2DOptions().strides());
Layer BatchNorm(std::int64_t num_features, double momentum = BatchNormOptions(1).momentum(),
                double epsilon = BatchNormOptions(1).epsilon());
Layer SyncBatchNorm(std::int64_t num_features, double momentum = BatchNormOptions(1).momentum(),
                    double epsilon = BatchNormOptions(1).epsilon());
Layer LayerNorm(std::vector<std::int64_t> normalized_shape,
                double epsilon = LayerNormOptions({1}).epsilon());
/// [B, d1, d2, ...] -> [B, d1 * d2 * ...].
Layer Flatten();
/// Zeroes a fraction `rate` of the inputs in training (scaled by 1/(1-rate)).
Layer Dropout(double rate);
/// Integer indices [..] -> vectors [.., output_dim].
Layer Embedding(std::int64_t input_dim, std::int64_t output_dim);
/// An activation by name (see activation_names()).
Layer Activation(std::string name);

/// Builds a layer from its config. Register your own layer classes to make
/// Sequentials that use them loadable and clonable.
using LayerFactory = std::function<Layer(const nlohmann::json& config)>;
/// Adds (or replaces) a layer class in the registry.
/// Example: tnt::layers::register_layer("Scale", [](const nlohmann::json& c) {
///            return std::make_shared<ScaleImpl>(c.at("factor").get<double>()); });
void register_layer(const std::string& class_name, LayerFactory factory);
/// The registered class names, sorted.
std::vector<std::string> registered_layers();
/// Builds a layer from {"class_name": ..., "config": {...}}; an unknown
/// class or a bad argument is an Error naming the layer and the field.
Layer layer_from_config(const nlohmann::json& description);

/// Layers applied in order. Its config is
///   {"class_name": "Sequential", "config": {"name": ..., "layers": [
///       {"class_name": "Dense", "config": {...}}, ...]}}
class SequentialImpl : public torch::nn::Module {
 public:
  explicit SequentialImpl(std::vector<Layer> layers = {}, std::string name = "sequential");
  /// Appends a layer (registered as submodule "<index>").
  void add(Layer layer);
  /// Puts `layer` in place of layer `index` (same name "<index>"); used by
  /// tnt::nn::convert_sync_batchnorm.
  void replace(std::size_t index, Layer layer);
  torch::Tensor forward(const torch::Tensor& x);
  const std::vector<Layer>& layers() const { return layers_; }
  std::size_t size() const { return layers_.size(); }
  /// The whole architecture (see above).
  nlohmann::json get_config() const;
  /// get_config() as JSON text; tnt::Model uses it to save the architecture.
  std::string config_json() const;
  /// Builds a Sequential (fresh weights) from get_config()'s output.
  static std::shared_ptr<SequentialImpl> from_config(const nlohmann::json& config);

 private:
  std::vector<Layer> layers_;
  std::string sequential_name_;
};

/// The module holder: tnt::layers::Sequential net({Dense(4, 8, "relu"), Dense(8, 1)});
class Sequential : public torch::nn::ModuleHolder<SequentialImpl> {
 public:
  using torch::nn::ModuleHolder<SequentialImpl>::ModuleHolder;
  Sequential(std::initializer_list<Layer> layers)
      : ModuleHolder(std::make_shared<SequentialImpl>(std::vector<Layer>(layers))) {}
  explicit Sequential(std::vector<Layer> layers, std::string name = "sequential")
      : ModuleHolder(std::make_shared<SequentialImpl>(std::move(layers), std::move(name))) {}
};

}  // namespace tnt::layers

// The inference model: greedy decoding with the SAME module object that
// tnt::Model trains. tnt::Model holds a pointer to the module, not a copy, so
// after every fit() this translator sees the trained weights, which fit()
// keeps bitwise identical on every rank. Decoding here is purely local (no
// collective), so it may run on one rank alone, e.g. only on the master.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "transformer_model.h"

namespace tnt_examples {

class GreedyTranslator {
 public:
  GreedyTranslator(Seq2SeqTransformer net, std::int64_t max_output_length)
      : net_(std::move(net)), max_output_length_(max_output_length) {}

  /// Source tokens [N, S] (padded with kPad, each ending in kEos) -> for each
  /// sentence the generated words, without BOS/EOS.
  std::vector<std::vector<std::int64_t>> translate(const torch::Tensor& source) {
    torch::NoGradGuard no_grad;
    const bool was_training = net_->is_training();
    net_->eval();  // no dropout; restored below for the next fit()
    const torch::Device device = net_->parameters().front().device();
    const torch::Tensor src = source.to(device);
    const std::int64_t n = src.size(0);
    const torch::Tensor memory = net_->encode(src);
    torch::Tensor tokens = torch::full({n, 1}, kBos, torch::dtype(torch::kLong).device(device));
    torch::Tensor done = torch::zeros({n}, torch::dtype(torch::kBool).device(device));
    // One decoder pass per token: each step re-reads the whole prefix. Fine
    // for short sentences; a production decoder would cache the keys/values.
    for (std::int64_t t = 0; t < max_output_length_ && !done.all().item<bool>(); ++t) {
      const torch::Tensor logits = net_->decode(tokens, memory, src);
      torch::Tensor next = logits.select(1, -1).argmax(-1);
      next = torch::where(done, torch::full_like(next, kPad), next);
      done = done.logical_or(next.eq(kEos));
      tokens = torch::cat({tokens, next.unsqueeze(1)}, 1);
    }
    net_->train(was_training);
    return words_of(tokens.slice(1, 1).cpu());
  }

 private:
  static std::vector<std::vector<std::int64_t>> words_of(const torch::Tensor& tokens) {
    std::vector<std::vector<std::int64_t>> sentences(static_cast<std::size_t>(tokens.size(0)));
    const auto a = tokens.accessor<std::int64_t, 2>();
    for (std::int64_t i = 0; i < tokens.size(0); ++i) {
      for (std::int64_t j = 0; j < tokens.size(1) && a[i][j] != kEos && a[i][j] != kPad; ++j) {
        sentences[static_cast<std::size_t>(i)].push_back(a[i][j]);
      }
    }
    return sentences;
  }

  Seq2SeqTransformer net_;
  std::int64_t max_output_length_;
};

}  // namespace tnt_examples

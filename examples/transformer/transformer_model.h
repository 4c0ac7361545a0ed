// An encoder-decoder Transformer (Vaswani et al., 2017) as a LibTorch module:
// token embeddings scaled by sqrt(d_model) plus sinusoidal positional
// encodings, LibTorch's TransformerEncoder/TransformerDecoder stacks (post-norm
// layers with a final LayerNorm, as torch::nn::Transformer), and a linear
// projection to the target vocabulary.
//
// forward(source, decoder_input) takes batch-first token tensors [N, S] and
// [N, T] and returns logits [N, T, target_vocab] (teacher forcing: position t
// sees decoder inputs 0..t only). encode() and decode() are public so that
// an inference loop can run the encoder once per sentence and the decoder
// once per generated token (translator.h).
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "translation_task.h"

namespace tnt_examples {

/// The size of a Transformer. base and big are the paper's configurations.
struct TransformerParams {
  std::string name;
  std::int64_t d_model, heads, d_ff, encoder_layers, decoder_layers;
  double dropout;

  static TransformerParams named(const std::string& name) {
    if (name == "tiny") return {name, 64, 4, 128, 2, 2, 0.0};
    if (name == "base") return {name, 512, 8, 2048, 6, 6, 0.1};
    if (name == "big") return {name, 1024, 16, 4096, 6, 6, 0.3};
    throw std::invalid_argument("unknown parameter set '" + name +
                                "': use --params tiny, base or big");
  }
};

struct Seq2SeqTransformerImpl : torch::nn::Module {
  Seq2SeqTransformerImpl(const TransformerParams& p, std::int64_t source_vocab,
                         std::int64_t target_vocab, std::int64_t max_length)
      : d_model(p.d_model),
        source_embedding(
            register_module("source_embedding", torch::nn::Embedding(source_vocab, p.d_model))),
        target_embedding(
            register_module("target_embedding", torch::nn::Embedding(target_vocab, p.d_model))),
        encoder(register_module(
            "encoder", torch::nn::TransformerEncoder(
                           torch::nn::TransformerEncoderOptions(
                               torch::nn::TransformerEncoderLayerOptions(p.d_model, p.heads)
                                   .dim_feedforward(p.d_ff)
                                   .dropout(p.dropout),
                               p.encoder_layers)
                               .norm(torch::nn::AnyModule(torch::nn::LayerNorm(
                                   torch::nn::LayerNormOptions({p.d_model}))))))),
        decoder(register_module(
            "decoder", torch::nn::TransformerDecoder(
                           torch::nn::TransformerDecoderOptions(
                               torch::nn::TransformerDecoderLayerOptions(p.d_model, p.heads)
                                   .dim_feedforward(p.d_ff)
                                   .dropout(p.dropout),
                               p.decoder_layers)
                               .norm(torch::nn::AnyModule(torch::nn::LayerNorm(
                                   torch::nn::LayerNormOptions({p.d_model}))))))),
        dropout(register_module("dropout", torch::nn::Dropout(p.dropout))),
        output(register_module("output", torch::nn::Linear(p.d_model, target_vocab))) {
    // Sinusoidal encodings, a buffer: it moves with the module and is part
    // of its saved state, but is not trained.
    const torch::Tensor position = torch::arange(max_length, torch::kFloat).unsqueeze(1);
    const torch::Tensor frequency = torch::exp(torch::arange(0, p.d_model, 2, torch::kFloat) *
                                               (-std::log(10000.0) / p.d_model));
    torch::Tensor pe = torch::zeros({max_length, p.d_model});
    pe.slice(1, 0, p.d_model, 2) = torch::sin(position * frequency);
    pe.slice(1, 1, p.d_model, 2) = torch::cos(position * frequency);
    positional_encoding = register_buffer("positional_encoding", pe);
  }

  /// Source tokens [N, S] -> memory [S, N, d_model] (LibTorch's layers are
  /// sequence-first).
  torch::Tensor encode(const torch::Tensor& source) {
    return encoder->forward(embed(source_embedding, source), /*src_mask=*/torch::Tensor(),
                            /*src_key_padding_mask=*/source.eq(kPad));
  }

  /// Decoder inputs [N, T] attending to `memory` of `source` -> logits
  /// [N, T, target_vocab].
  torch::Tensor decode(const torch::Tensor& decoder_input, const torch::Tensor& memory,
                       const torch::Tensor& source) {
    const std::int64_t t = decoder_input.size(1);
    const torch::Tensor causal =
        torch::nn::TransformerImpl::generate_square_subsequent_mask(t).to(memory.device());
    const torch::Tensor h = decoder->forward(
        embed(target_embedding, decoder_input), memory, /*tgt_mask=*/causal,
        /*memory_mask=*/torch::Tensor(), /*tgt_key_padding_mask=*/decoder_input.eq(kPad),
        /*memory_key_padding_mask=*/source.eq(kPad));
    return output(h.transpose(0, 1));
  }

  torch::Tensor forward(torch::Tensor source, torch::Tensor decoder_input) {
    return decode(decoder_input, encode(source), source);
  }

 private:
  // [N, L] tokens -> [L, N, d_model] embeddings with positions.
  torch::Tensor embed(torch::nn::Embedding& table, const torch::Tensor& tokens) {
    TORCH_CHECK(tokens.size(1) <= positional_encoding.size(0), "a sequence of ", tokens.size(1),
                " tokens is longer than the model's ", positional_encoding.size(0),
                " positions: raise --max-length");
    const torch::Tensor x = table(tokens) * std::sqrt(static_cast<double>(d_model)) +
                            positional_encoding.slice(0, 0, tokens.size(1));
    return dropout(x).transpose(0, 1);
  }

  std::int64_t d_model;
  torch::nn::Embedding source_embedding, target_embedding;
  torch::nn::TransformerEncoder encoder;
  torch::nn::TransformerDecoder decoder;
  torch::nn::Dropout dropout;
  torch::nn::Linear output;
  torch::Tensor positional_encoding;
};
TORCH_MODULE(Seq2SeqTransformer);

}  // namespace tnt_examples

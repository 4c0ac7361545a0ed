// A synthetic "translation" task that a small Transformer learns in minutes
// but cannot solve by copying: a source sentence is a random sequence of
// words; its translation maps every word through a fixed dictionary (a
// permutation of the target vocabulary) and then reverses the word order.
//
//   source  [ 17  5 30  9 ]  EOS
//   target  BOS [ d(9) d(30) d(5) d(17) ]   ->   [ d(9) d(30) d(5) d(17) ] EOS
//
// Sentences are a pure function of (seed, stream, index), so every rank can
// generate any sentence without communication, and the training and test
// sets (streams 0 and 1) are the same at any rank count. A dataset element is
// (source, decoder input, decoder target), each a 1-D int64 tensor of the
// sentence's own length; padded_batch pads them to the longest in the batch.
#pragma once

#include <tarantella/data/dataset.h>
#include <torch/torch.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace tnt_examples {

/// Special tokens, shared by both vocabularies.
constexpr std::int64_t kPad = 0;
constexpr std::int64_t kBos = 1;
constexpr std::int64_t kEos = 2;
constexpr std::int64_t kFirstWord = 3;

struct TaskOptions {
  std::int64_t words = 32;      ///< words per language (without the special tokens)
  std::int64_t min_length = 4;  ///< words per sentence, inclusive bounds
  std::int64_t max_length = 10;
  std::uint64_t seed = 42;  ///< which sentences are drawn (the dictionary is fixed)
};

class TranslationTask {
 public:
  explicit TranslationTask(TaskOptions options) : options_(options) {
    // The dictionary is the same in every run: it is the "language pair".
    // Fisher-Yates with explicit modulo, so that it does not depend on the
    // standard library's distributions.
    dictionary_.resize(static_cast<std::size_t>(options_.words));
    std::iota(dictionary_.begin(), dictionary_.end(), kFirstWord);
    std::mt19937_64 rng(20240601);
    for (std::size_t i = dictionary_.size() - 1; i > 0; --i) {
      std::swap(dictionary_[i], dictionary_[rng() % (i + 1)]);
    }
  }

  std::int64_t source_vocab_size() const { return kFirstWord + options_.words; }
  std::int64_t target_vocab_size() const { return kFirstWord + options_.words; }
  /// Expected target tokens per sentence (words plus EOS).
  double mean_target_tokens() const {
    return 0.5 * static_cast<double>(options_.min_length + options_.max_length) + 1.0;
  }
  /// Longest source or decoder sequence (words plus BOS/EOS).
  std::int64_t max_sequence_length() const { return options_.max_length + 1; }

  /// The words of source sentence `index` of `stream`.
  std::vector<std::int64_t> source_words(std::uint64_t stream, std::int64_t index) const {
    std::mt19937_64 rng(mix(options_.seed, stream, static_cast<std::uint64_t>(index)));
    const auto span = static_cast<std::uint64_t>(options_.max_length - options_.min_length + 1);
    const auto length = options_.min_length + static_cast<std::int64_t>(rng() % span);
    std::vector<std::int64_t> words(static_cast<std::size_t>(length));
    for (auto& w : words) w = kFirstWord + static_cast<std::int64_t>(rng() % options_.words);
    return words;
  }

  /// The reference translation of `source` (words only, no BOS/EOS).
  std::vector<std::int64_t> translate(const std::vector<std::int64_t>& source) const {
    std::vector<std::int64_t> target;
    for (auto it = source.rbegin(); it != source.rend(); ++it) {
      target.push_back(dictionary_[static_cast<std::size_t>(*it - kFirstWord)]);
    }
    return target;
  }

  /// Element (source + EOS, BOS + target, target + EOS).
  tnt::data::Element element(std::uint64_t stream, std::int64_t index) const {
    std::vector<std::int64_t> src = source_words(stream, index);
    const std::vector<std::int64_t> tgt = translate(src);
    src.push_back(kEos);
    std::vector<std::int64_t> tgt_in{kBos}, tgt_out = tgt;
    tgt_in.insert(tgt_in.end(), tgt.begin(), tgt.end());
    tgt_out.push_back(kEos);
    return {torch::tensor(src), torch::tensor(tgt_in), torch::tensor(tgt_out)};
  }

  /// `size` sentences of `stream` (0: training, 1: test), unbatched.
  tnt::data::Dataset dataset(std::uint64_t stream, std::int64_t size) const {
    TranslationTask task = *this;  // the generator owns a copy
    return tnt::data::Dataset::from_generator(
        [task, stream](std::int64_t i) { return task.element(stream, i); }, size);
  }

 private:
  static std::uint64_t mix(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    // splitmix64 over the three words: nearby indices give unrelated streams.
    std::uint64_t z = a * 0x9e3779b97f4a7c15ULL ^
                      (b + 0x632be59bd9b4e019ULL) * 0xbf58476d1ce4e5b9ULL ^
                      (c + 1) * 0x94d049bb133111ebULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  TaskOptions options_;
  std::vector<std::int64_t> dictionary_;  // source word - kFirstWord -> target word
};

/// Pads every component with kPad to the longest sentence of the batch.
inline tnt::data::PaddingOptions sentence_padding(bool drop_remainder = false) {
  return tnt::data::PaddingOptions()
      .padding_values({kPad, kPad, kPad})
      .drop_remainder(drop_remainder);
}

}  // namespace tnt_examples

// Sentence-level scores of a set of translations against references:
// exact match (the fraction of sentences translated without any error) and
// corpus BLEU-4 (Papineni et al., 2002): the geometric mean of the clipped
// 1..4-gram precisions over the whole corpus, times the brevity penalty
// exp(1 - r/c) when the candidates are shorter (c) than the references (r).
// Reported in percent, as is customary; 100 means every sentence is right.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace tnt_examples {

using Sentence = std::vector<std::int64_t>;

struct Scores {
  double exact_match = 0.0;  ///< fraction in [0, 1]
  double bleu = 0.0;         ///< percent
  std::int64_t sentences = 0;
};

namespace detail {

inline std::map<Sentence, std::int64_t> ngram_counts(const Sentence& s, std::size_t n) {
  std::map<Sentence, std::int64_t> counts;
  for (std::size_t i = 0; i + n <= s.size(); ++i)
    ++counts[Sentence(s.begin() + i, s.begin() + i + n)];
  return counts;
}

}  // namespace detail

inline Scores score(const std::vector<Sentence>& candidates,
                    const std::vector<Sentence>& references) {
  constexpr std::size_t kMaxN = 4;
  Scores s;
  s.sentences = static_cast<std::int64_t>(candidates.size());
  if (candidates.empty()) return s;
  std::int64_t exact = 0, candidate_length = 0, reference_length = 0;
  std::vector<double> matches(kMaxN, 0.0), totals(kMaxN, 0.0);
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    const Sentence& c = candidates[k];
    const Sentence& r = references[k];
    exact += c == r ? 1 : 0;
    candidate_length += static_cast<std::int64_t>(c.size());
    reference_length += static_cast<std::int64_t>(r.size());
    for (std::size_t n = 1; n <= kMaxN; ++n) {
      const auto ref = detail::ngram_counts(r, n);
      for (const auto& [gram, count] : detail::ngram_counts(c, n)) {
        const auto it = ref.find(gram);
        matches[n - 1] += static_cast<double>(it == ref.end() ? 0 : std::min(count, it->second));
        totals[n - 1] += static_cast<double>(count);
      }
    }
  }
  s.exact_match = static_cast<double>(exact) / static_cast<double>(candidates.size());
  double log_precision = 0.0;
  for (std::size_t n = 0; n < kMaxN; ++n) {
    if (matches[n] == 0.0 || totals[n] == 0.0) return s;  // BLEU is 0
    log_precision += std::log(matches[n] / totals[n]) / kMaxN;
  }
  const double brevity = candidate_length >= reference_length
                             ? 1.0
                             : std::exp(1.0 - static_cast<double>(reference_length) /
                                                  std::max<double>(1.0, candidate_length));
  s.bleu = 100.0 * brevity * std::exp(log_precision);
  return s;
}

}  // namespace tnt_examples

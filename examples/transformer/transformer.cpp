// An encoder-decoder Transformer trained data-parallel on a synthetic
// translation task (translation_task.h), the Tarantella manual's advanced
// tutorial in C++:
//
//   tarantella -n 2 -- ./transformer --params tiny
//
// What it shows beyond examples/lenet5:
//  * variable-length data under automatic distribution: the pipeline is
//    written as for one process (shuffle, padded_batch with the GLOBAL batch
//    size); fit() gives each rank its micro-batch, padded to the longest
//    sentence of the micro-batch. --sharding manual runs the same training
//    with the data sharded by hand (shard(get_size(), get_rank()), per-rank
//    batch size, distribute_dataset(false)): the results agree within
//    rounding (tests/examples/transformer_sharding.sh);
//  * a model with two inputs, forward(source, decoder_input), a user loss
//    (cross-entropy that ignores padding) and user metrics with summable
//    state (token and sentence accuracy that ignore padding);
//  * fit() in rounds (initial_epoch / epochs) with, in between, greedy
//    decoding by an inference model that shares the trained module, on the
//    master rank only, scored by exact match and BLEU computed in C++;
//  * rank-specific behaviour: only the master rank logs and decodes.
#include <tarantella/tarantella.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "scores.h"
#include "transformer_model.h"
#include "translation_task.h"
#include "translator.h"

namespace {

using namespace tnt_examples;

struct Args {
  std::string params = "tiny";
  std::int64_t epochs = 12;
  std::int64_t epochs_per_round = 3;
  std::int64_t batch_size = 64;
  double learning_rate = 0.0;  // 0: the parameter set's default
  std::int64_t warmup_steps = 200;
  double clip_norm = 1.0;
  std::int64_t train_size = 8192;
  std::int64_t test_size = 1000;
  std::int64_t words = 32;
  std::int64_t min_length = 4;
  std::int64_t max_length = 10;
  std::uint64_t seed = 42;
  std::int64_t examples = 3;
  std::string save_weights;
  std::string sharding = "auto";
  bool summary = false;
  int verbose = 2;
};

double default_learning_rate(const std::string& params) {
  return params == "tiny" ? 2e-3 : params == "base" ? 5e-4 : 3e-4;
}

// Cross-entropy summed over the non-padding target tokens, divided by
// (sentences x `tokens_per_sentence`, a constant). tnt::Model weights each
// rank's loss by its share of the global batch in SAMPLES (sentences), so a
// loss must be a mean over sentences to give the same gradient at any rank
// count: the usual mean over the rank's own tokens would weight tokens of
// short-sentence micro-batches more at 2 ranks than at 1.
tnt::losses::Loss masked_cross_entropy(double tokens_per_sentence) {
  return tnt::losses::Loss(
      "masked_cross_entropy",
      [tokens_per_sentence](const torch::Tensor& logits, const torch::Tensor& target) {
        namespace F = torch::nn::functional;
        const torch::Tensor sum = F::cross_entropy(
            logits.reshape({-1, logits.size(-1)}), target.reshape(-1),
            F::CrossEntropyFuncOptions().ignore_index(kPad).reduction(torch::kSum));
        return sum / (static_cast<double>(target.size(0)) * tokens_per_sentence);
      });
}

// Metrics keep a state that is SUMMED over steps and ranks; the value is
// computed from the global sums, so it is exact at any rank count.
tnt::metrics::Metric ratio_metric(std::string name,
                                  std::function<std::pair<torch::Tensor, torch::Tensor>(
                                      const torch::Tensor& hits, const torch::Tensor& real)>
                                      count) {
  tnt::metrics::Metric metric;  // fields by name: the struct may grow
  metric.name = std::move(name);
  metric.state_size = 2;
  metric.update = [count](const torch::Tensor& logits, const torch::Tensor& target) {
    const torch::Tensor real = target.ne(kPad);
    const torch::Tensor hits = logits.argmax(-1).eq(target).logical_and(real);
    const auto [numerator, denominator] = count(hits, real);
    return torch::stack(
        {numerator.sum().to(torch::kFloat64), denominator.sum().to(torch::kFloat64)});
  };
  metric.result = [](const std::vector<double>& s) { return s[1] > 0 ? s[0] / s[1] : 0.0; };
  return metric;
}

// Correct target tokens / target tokens (teacher forcing).
tnt::metrics::Metric token_accuracy() {
  return ratio_metric("token_accuracy", [](const torch::Tensor& hits, const torch::Tensor& real) {
    return std::make_pair(hits, real);
  });
}

// Sentences with every token correct / sentences (teacher forcing).
tnt::metrics::Metric sentence_accuracy() {
  return ratio_metric(
      "sentence_accuracy", [](const torch::Tensor& hits, const torch::Tensor& real) {
        // On the model's device, as hits (a GPU's, in training).
        return std::make_pair(hits.sum(1).eq(real.sum(1)),
                              torch::ones({hits.size(0)}, hits.options().dtype(torch::kFloat)));
      });
}

// The paper's schedule, normalized to a peak of `peak`: linear warm-up over
// `warmup` optimizer steps, then decay with the inverse square root of the
// step. A schedule is a plain function of the global optimizer step, which
// tnt::Model keeps counting across fit() calls.
tnt::schedules::Schedule inverse_sqrt_warmup(double peak, std::int64_t warmup) {
  return [peak, warmup](std::int64_t step) {
    const double s = static_cast<double>(step + 1),
                 w = static_cast<double>(std::max<std::int64_t>(1, warmup));
    return peak * std::min(s / w, std::sqrt(w / s));
  };
}

// A sentence as text, for the examples the master prints.
std::string text(const Sentence& s) {
  std::ostringstream out;
  for (std::size_t i = 0; i < s.size(); ++i) out << (i ? " " : "") << s[i];
  return out.str();
}

// Greedy-decodes the first `size` test sentences with the inference model and
// scores them. Local work only: call it on one rank.
Scores decode_and_score(GreedyTranslator& translator, const TranslationTask& task,
                        std::int64_t size, std::int64_t examples) {
  std::vector<Sentence> candidates, references;
  for (const tnt::data::Element& batch :
       task.dataset(1, size).padded_batch(256, sentence_padding())) {
    for (auto& sentence : translator.translate(batch[0])) candidates.push_back(std::move(sentence));
  }
  for (std::int64_t i = 0; i < size; ++i)
    references.push_back(task.translate(task.source_words(1, i)));
  for (std::int64_t i = 0; i < std::min(examples, size); ++i) {
    std::cout << "  source " << text(task.source_words(1, i)) << "\n    reference   "
              << text(references[static_cast<std::size_t>(i)]) << "\n    translation "
              << text(candidates[static_cast<std::size_t>(i)]) << "\n";
  }
  return score(candidates, references);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void add_flags(CLI::App& app, Args& a) {
  app.add_option("--params", a.params, "model size")->check(CLI::IsMember({"tiny", "base", "big"}));
  app.add_option("--epochs", a.epochs, "epochs to train in all")->check(CLI::PositiveNumber);
  app.add_option("--epochs-per-round", a.epochs_per_round,
                 "epochs per fit() call; the master decodes the test set after each")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch-size", a.batch_size,
                 "GLOBAL batch size (sentences), a multiple of the ranks")
      ->check(CLI::PositiveNumber);
  app.add_option("--learning-rate", a.learning_rate,
                 "peak Adam learning rate (default: 2e-3 tiny, 5e-4 base, 3e-4 big)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--warmup-steps", a.warmup_steps, "optimizer steps of linear warm-up")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--clip-norm", a.clip_norm, "clip the gradient norm to this (0: off)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--train-size", a.train_size, "training sentences per epoch")
      ->check(CLI::PositiveNumber);
  app.add_option("--test-size", a.test_size, "test sentences (evaluated and decoded)")
      ->check(CLI::PositiveNumber);
  app.add_option("--words", a.words, "words per language")->check(CLI::Range(2, 100000));
  app.add_option("--min-length", a.min_length, "shortest sentence (words)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-length", a.max_length, "longest sentence (words)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", a.seed, "seed of weights, data and shuffling (tnt::set_seed)");
  app.add_option("--examples", a.examples, "translations the master prints after each round")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--save-weights", a.save_weights, "write the trained weights (torch.save format)");
  app.add_option("--sharding", a.sharding,
                 "auto: fit() splits each global batch into micro-batches; manual: every rank "
                 "shards and batches its own data")
      ->check(CLI::IsMember({"auto", "manual"}));
  app.add_flag("--summary", a.summary, "print the model's layers and parameter counts");
  app.add_option("--verbose", a.verbose, "0 silent, 1 progress bar, 2 a line per epoch");
}

// What is wrong with the flags at `ranks` ranks ("" if nothing).
std::string check_flags(const Args& a, int ranks) {
  const auto str = [](auto v) { return std::to_string(v); };
  if (a.min_length > a.max_length) {
    return "--min-length " + str(a.min_length) + " exceeds --max-length " + str(a.max_length) +
           ": lower it";
  }
  // Manual distribution: every rank batches B / N of its own sentences, so B
  // must split evenly (the automatic split also takes B mod N != 0).
  if (a.sharding == "manual" && a.batch_size % ranks != 0) {
    return "--batch-size " + str(a.batch_size) + " is not a multiple of the " + str(ranks) +
           " ranks: --sharding manual gives every rank batch-size / ranks sentences; use a " +
           "multiple of " + str(ranks) + ", or --sharding auto";
  }
  if (a.batch_size < ranks) {
    return "--batch-size " + str(a.batch_size) + " is smaller than the " + str(ranks) +
           " ranks: use at least " + str(ranks);
  }
  if (a.train_size < a.batch_size) {
    return "--train-size " + str(a.train_size) + " is smaller than --batch-size " +
           str(a.batch_size) + ": raise it";
  }
  return "";
}

// The training and test sets as fit() gets them: global batches that fit()
// splits (auto), or this rank's shards batched with the per-rank batch size
// (manual). Both train on the same global batches.
struct RankData {
  tnt::data::Dataset train, test;
  bool distribute;  // fit()/evaluate() split the batches (auto)
  std::int64_t local_batch, steps_per_epoch;
};

RankData auto_data(const TranslationTask& task, const Args& a) {
  const std::int64_t steps = a.train_size / a.batch_size;
  // [snippet:transformer_auto]
  // Written as for one process: shuffle the whole training set, pad global
  // batches of B sentences (drop_remainder: whole global batches only). fit()
  // gives each rank its share of every global batch; the rank generates and
  // pads only its own sentences, to the longest sentence of its share.
  const tnt::data::Dataset train = task.dataset(/*stream=*/0, a.train_size)
                                       .shuffle(a.train_size, a.seed)
                                       .padded_batch(a.batch_size, sentence_padding(true));
  const tnt::data::Dataset test =
      task.dataset(/*stream=*/1, a.test_size).padded_batch(a.batch_size, sentence_padding());
  // [end]
  return {train, test, true, a.batch_size, steps};
}

RankData manual_data(const TranslationTask& task, const Args& a) {
  const int ranks = tnt::get_size(), rank = tnt::get_rank();
  const std::int64_t local_batch = a.batch_size / ranks;
  const std::int64_t steps = a.train_size / a.batch_size;
  // [snippet:transformer_shard]
  // Every rank shuffles the whole training set with the same seed (the order
  // is a function of seed and epoch), keeps whole global batches only, and
  // takes every N-th sentence from its rank on: disjoint shards of equal size,
  // hence the same number of steps on every rank. Only this rank's sentences
  // are ever generated and padded (to the longest in its micro-batch).
  const tnt::data::Dataset train = task.dataset(/*stream=*/0, a.train_size)
                                       .shuffle(a.train_size, a.seed)
                                       .take(steps * a.batch_size)
                                       .shard(ranks, rank)
                                       .padded_batch(local_batch, sentence_padding(true));
  // The test set is sharded too; evaluate() sums the ranks' loss and metric
  // state, so its results are exact even when the shards differ in size.
  const tnt::data::Dataset test = task.dataset(/*stream=*/1, a.test_size)
                                      .shard(ranks, rank)
                                      .padded_batch(local_batch, sentence_padding());
  // [end]
  return {train, test, false, local_batch, steps};
}

// After a round: the master greedy-decodes the test set and prints scores.
Scores report_round(GreedyTranslator& translator, const TranslationTask& task, const Args& a,
                    std::int64_t epochs_done, std::chrono::steady_clock::time_point start) {
  const auto decode_start = std::chrono::steady_clock::now();
  if (a.verbose > 0) std::cout << "round after epoch " << epochs_done << ":\n";
  const Scores s = decode_and_score(translator, task, a.test_size, a.verbose > 0 ? a.examples : 0);
  std::cout << std::fixed << std::setprecision(3) << "epoch " << epochs_done << "/" << a.epochs
            << ": exact match " << s.exact_match << ", BLEU " << std::setprecision(1) << s.bleu
            << " (" << s.sentences << " test sentences, greedy decoding "
            << seconds_since(decode_start) << " s, " << seconds_since(start) << " s in all)"
            << std::endl
            << std::defaultfloat;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);
  const auto start = std::chrono::steady_clock::now();
  const int ranks = tnt::get_size();
  const bool master = tnt::is_master_rank();

  Args a;
  CLI::App app{"A Transformer on a synthetic translation task, data-parallel with Tarantella"};
  add_flags(app, a);
  CLI11_PARSE(app, argc, argv);
  if (const std::string problem = check_flags(a, ranks); !problem.empty()) {
    if (master) std::cerr << problem << "\n";
    return 2;
  }
  if (a.learning_rate == 0.0) a.learning_rate = default_learning_rate(a.params);

  // One call seeds LibTorch (weights, dropout), the default shuffle seed and
  // rand(), and turns on deterministic algorithms: reruns are bitwise equal.
  tnt::set_seed(a.seed);
  const TranslationTask task(TaskOptions{a.words, a.min_length, a.max_length, a.seed});
  const RankData data = a.sharding == "manual" ? manual_data(task, a) : auto_data(task, a);

  // [snippet:transformer_model]
  const TransformerParams params = TransformerParams::named(a.params);
  // One position more than the longest sentence: greedy decoding may run
  // past the reference's length before it gives up.
  const std::int64_t positions = task.max_sequence_length() + 1;
  Seq2SeqTransformer net(params, task.source_vocab_size(), task.target_vocab_size(), positions);
  tnt::Model model{net};  // holds the same module object: no copy
  tnt::CompileOptions options =
      tnt::CompileOptions()
          .num_inputs(2)  // forward(source, decoder_input); then the target
          .optimizer(tnt::optimizers::Adam(tnt::optimizers::AdamOptions()
                                               .learning_rate(a.learning_rate)
                                               .beta2(0.98)
                                               .epsilon(1e-9)))
          .schedule(inverse_sqrt_warmup(a.learning_rate, a.warmup_steps))
          .loss(masked_cross_entropy(task.mean_target_tokens()))
          .metrics({token_accuracy(), sentence_accuracy()});
  // Clip the norm of the global (allreduced) gradient before every step.
  if (a.clip_norm > 0) options.clip_norm(a.clip_norm);
  model.compile(options);
  // The inference model shares every parameter with the trained one.
  GreedyTranslator translator(net, positions);
  // [end]
  if (a.summary) model.summary();
  if (master && a.verbose > 0) {
    std::cout << "Transformer '" << params.name << "' on " << ranks << " rank(s): global batch "
              << a.batch_size << " sentences"
              << (data.distribute ? " split by fit()"
                                  : " = " + std::to_string(ranks) + " x " +
                                        std::to_string(data.local_batch) + " sharded by hand")
              << ", " << data.steps_per_epoch << " steps per epoch, " << a.epochs
              << " epochs in rounds of " << a.epochs_per_round << "\n";
  }

  // [snippet:transformer_rounds]
  Scores scores;
  tnt::callbacks::History history;
  for (std::int64_t first = 0; first < a.epochs; first += a.epochs_per_round) {
    const std::int64_t last = std::min(a.epochs, first + a.epochs_per_round);
    history =
        model.fit(data.train, tnt::FitOptions()
                                  .initial_epoch(first)
                                  .epochs(last)
                                  .distribute_dataset(data.distribute)  // manual: this rank's shard
                                  .validation_data(data.test)
                                  .distribute_validation_dataset(data.distribute)
                                  .verbose(a.verbose));
    // Rank-specific: only the master decodes and prints. The other ranks go
    // on to the next fit(), whose first collective waits for the master.
    if (master) scores = report_round(translator, task, a, last, start);
  }
  // [end]

  if (!a.save_weights.empty()) model.save_weights(a.save_weights);  // collective
  if (master) {
    // The last epoch's global loss and metrics in full (a test compares runs).
    std::cout << "final logs:" << std::setprecision(9);
    for (const auto& [name, values] : history.history)
      std::cout << " " << name << " " << values.back();
    std::cout << "\n";
    std::cout << std::fixed << std::setprecision(3) << "final exact match: " << scores.exact_match
              << "  BLEU: " << std::setprecision(1) << scores.bleu << "  (" << ranks
              << (ranks == 1 ? " rank" : " ranks") << ", global batch " << a.batch_size << ", "
              << a.epochs << " epochs, " << std::setprecision(0) << seconds_since(start) << " s)\n";
  }
  return 0;
}

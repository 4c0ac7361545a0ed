// Fault tolerance: crafted or damaged weights and checkpoint
// files. Every bad file must end in a tnt::Error that names the file and what
// is wrong: never a crash, an assertion from LibTorch, a hang or unbounded
// memory. The files are built here, through the public API only: a zip
// written by LibTorch's own PyTorchStreamWriter around a hand-written
// data.pkl, or a good file from save_weights/save that is cut or re-pickled
// with one entry changed. ctest runs this suite a second time under
// `ulimit -v` (see CMakeLists.txt), so an unbounded allocation fails there.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <caffe2/serialize/inline_container.h>
#include <torch/torch.h>

#include <tarantella/tarantella.h>

// Named, so that the unity batch does not mix these helpers with other files'.
namespace crafted_files {
namespace {

struct Net : torch::nn::Module {
  Net() : fc(register_module("fc", torch::nn::Linear(4, 3))) {}
  torch::Tensor forward(torch::Tensor x) { return torch::log_softmax(fc(x), 1); }
  torch::nn::Linear fc;
};

// ---- files ----

class CraftedFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tnt-crafted-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary).write(bytes.data(), bytes.size());
    return path(name);
  }

  std::filesystem::path dir_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A zip as torch.save writes it (archive/<name>, archive/version).
std::string zip_of(const std::vector<std::pair<std::string, std::string>>& records) {
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, std::size_t n) {
    out.append(static_cast<const char*>(data), n);
    return n;
  });
  for (const auto& [name, bytes] : records) writer.writeRecord(name, bytes.data(), bytes.size());
  writer.writeEndOfFile();
  return out;
}

std::string zip_with_pickle(const std::string& pickle) { return zip_of({{"data.pkl", pickle}}); }

// ---- pickle pieces (protocol 2, as Python's torch.save writes them) ----

std::string le(std::uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

template <std::size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

std::string str(const std::string& s) { return "X" + le(s.size(), 4) + s; }
std::string int32(std::int64_t v) { return "J" + le(static_cast<std::uint64_t>(v), 4); }
std::string ints(const std::vector<std::int64_t>& v) {
  std::string s = "(";
  for (auto x : v) s += int32(x);
  return s + "t";
}

struct TensorSpec {
  std::string key = "0";
  std::string storage = "FloatStorage";
  std::int64_t numel = 0;
  std::int64_t offset = 0;
  std::vector<std::int64_t> sizes, strides;
};

std::string tensor(const TensorSpec& t) {
  return "ctorch._utils\n_rebuild_tensor_v2\n(" + std::string("(") + str("storage") + "ctorch\n" +
         t.storage + "\n" + str(t.key) + str("cpu") + int32(t.numel) + "tQ" + int32(t.offset) +
         ints(t.sizes) + ints(t.strides) + "\x89" + "ccollections\nOrderedDict\n)R" + "tR";
}

std::string floats(int n, float first) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = first + static_cast<float>(i);
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// A state_dict for Net as Python writes it: an OrderedDict of two tensors.
std::string state_dict_file(const TensorSpec& weight, const TensorSpec& bias,
                            const std::string& weight_bytes = floats(12, 0)) {
  const std::string pickle =
      "\x80\x02"
      "ccollections\nOrderedDict\n)R(" +
      str("fc.weight") + tensor(weight) + str("fc.bias") + tensor(bias) + "u.";
  return zip_of({{"data.pkl", pickle}, {"data/0", weight_bytes}, {"data/1", floats(3, 100)}});
}

TensorSpec good_weight() { return {"0", "FloatStorage", 12, 0, {3, 4}, {4, 1}}; }
TensorSpec good_bias() { return {"1", "FloatStorage", 3, 0, {3}, {1}}; }

// ---- what a good error looks like ----

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tnt::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a tnt::Error: ") + e.what();
  }
  return "no error";
}

// The message names the file and `what`, and carries none of LibTorch's
// internals (assertions, C++ backtraces).
void expect_clear_error(const std::string& message, const std::string& file,
                        const std::string& what) {
  EXPECT_NE(message.find(file), std::string::npos) << message;
  EXPECT_NE(message.find(what), std::string::npos) << "expected '" << what << "' in: " << message;
  for (const char* internal : {"INTERNAL ASSERT", "report a bug", "Exception raised from",
                               "frame #", "not a tnt::Error", "no error"}) {
    EXPECT_EQ(message.find(internal), std::string::npos) << message;
  }
}

void expect_weights_error(const std::string& file, const std::string& what) {
  tnt::Model model{Net()};
  expect_clear_error(message_of([&] { model.load_weights(file); }), file, what);
}

// ---- the good files still load ----

TEST_F(CraftedFiles, AHandWrittenStateDictLoads) {
  const std::string file = write("good.pt", state_dict_file(good_weight(), good_bias()));
  tnt::Model model{Net()};
  model.load_weights(file);
  const auto params = model.named_parameters();
  ASSERT_EQ(params[0].first, "fc.weight");
  // On the CPU: the model's own tensors are on its device (a GPU where there is one).
  EXPECT_TRUE(
      torch::equal(params[0].second.cpu(), torch::arange(12, torch::kFloat32).reshape({3, 4})));
  EXPECT_TRUE(torch::equal(params[1].second.cpu(), torch::arange(100, 103, torch::kFloat32)));
}

TEST_F(CraftedFiles, WeightsAndCheckpointsRoundTrip) {
  torch::manual_seed(1);
  tnt::Model a{Net()};
  a.compile(
      tnt::CompileOptions().optimizer(tnt::optimizers::SGD(0.1)).loss(tnt::losses::NLLLoss()));
  a.save_weights(path("w.pt"));
  a.save(path("ckpt.pt"));
  tnt::Model b{Net()};
  b.compile(
      tnt::CompileOptions().optimizer(tnt::optimizers::SGD(0.1)).loss(tnt::losses::NLLLoss()));
  b.load_weights(path("w.pt"));
  EXPECT_TRUE(torch::equal(a.named_parameters()[0].second, b.named_parameters()[0].second));
  EXPECT_EQ(b.load(path("ckpt.pt")), 0);
}

// ---- the stack underflow that reached LibTorch ----

TEST_F(CraftedFiles, ReduceOnAnEmptyStackIsAnErrorNotACrash) {
  const std::string file = write("reduce.pt", zip_with_pickle(bytes("\x80\x02R.")));
  expect_weights_error(file, "REDUCE");
  // --resume reaches the same reader through Model::load.
  tnt::Model model{Net()};
  model.compile(
      tnt::CompileOptions().optimizer(tnt::optimizers::SGD(0.1)).loss(tnt::losses::NLLLoss()));
  expect_clear_error(message_of([&] { model.load(file); }), file, "REDUCE");
  expect_clear_error(message_of([&] { tnt::models::load_model(file); }), file, "REDUCE");
}

TEST_F(CraftedFiles, StructurallyWrongPicklesAreRejected) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {bytes("\x80\x02}"), "STOP"},          // STOP missing
      {bytes("\x80\x02}N."), "STOP"},        // two values left at STOP
      {bytes("\x80\x02}.}"), "after STOP"},  // trailing bytes
      {bytes("\x80\x02}(X\x01\x00\x00\x00"
             "au."),
       "odd"},                               // SETITEMS without a value
      {bytes("\x80\x02u."), "MARK"},         // SETITEMS without a MARK
      {bytes("\x80\x02KaKbR."), "REDUCE"},   // REDUCE of an int
      {bytes("\x80\x02h\x05."), "memo"},     // BINGET of an empty slot
      {bytes("\x80\x02}(]K\x01u."), "key"},  // a list as a dict key
      {bytes("\x80\x02\xff."), "opcode"},    // not an opcode
      {bytes("\x80\x04}."), "protocol"},     // not protocol 2
      {bytes("}."), "PROTO"},                // no PROTO
      {bytes("\x80\x02"
             "cos\nsystem\n(X\x02\x00\x00\x00lstR."),
       "os.system"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const std::string file =
        write("case" + std::to_string(i) + ".pt", zip_with_pickle(cases[i].first));
    expect_weights_error(file, cases[i].second);
  }
}

// ---- lengths that point past the end ----

TEST_F(CraftedFiles, HugeDeclaredLengthsAreRejectedAtOnce) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\x80\x02\x8e" + le(0xfffffffffffffff7ull, 8) + "N.", "BINBYTES8"},  // the issue's file
      {"\x80\x02\x8d" + le(0xfffffffffffffff7ull, 8) + "N.", "BINUNICODE8"},
      {"\x80\x02\x8b" + le(0xfffffff0ull, 4) + "N.", "LONG4"},
      {"\x80\x02\x8a\xff"
       "abc.",
       "LONG1"},
      {"\x80\x02"
       "B" +
           le(0xffffffffull, 4) + "N.",
       "BINBYTES"},
      {"\x80\x02"
       "X" +
           le(0xfffffff0ull, 4) + "N.",
       "BINUNICODE"},
      {"\x80\x02"
       "T" +
           le(0x7ffffff0ull, 4) + "N.",
       "BINSTRING"},
      {"\x80\x02\x8c\xf0"
       "N.",
       "SHORT_BINUNICODE"},
      {"\x80\x02"
       "J\x01\x02",
       "BININT"},  // a fixed-size argument cut short
      {"\x80\x02"
       "ctorch\n_utils",
       "GLOBAL"},  // a line without its newline
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].second);
    const auto start = std::chrono::steady_clock::now();
    const std::string file =
        write("len" + std::to_string(i) + ".pt", zip_with_pickle(cases[i].first));
    expect_weights_error(file, cases[i].second);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
}

// A memo index is not a size: LONG_BINPUT 2^32-1 must not allocate 2^32 slots.
TEST_F(CraftedFiles, AHugeMemoIndexAllocatesNothing) {
  const std::string file = write("memo.pt", zip_with_pickle("\x80\x02}r" + le(0xffffffffull, 4) +
                                                            "0j" + le(0xffffffffull, 4) + "."));
  expect_weights_error(file, "has no entry 'fc.weight'");
}

// Bounded recursion: a million nested lists (or tuples) would overflow the
// C++ stack when the value is destroyed; they are refused at a fixed depth.
TEST_F(CraftedFiles, DeepNestingIsRefused) {
  const int n = 1000000;
  const std::string lists = "\x80\x02" + std::string(n, ']') + std::string(n - 1, 'a') + ".";
  expect_weights_error(write("lists.pt", zip_with_pickle(lists)), "nested deeper than");
  const std::string tuples = "\x80\x02]" + std::string(n, '\x85') + ".";
  expect_weights_error(write("tuples.pt", zip_with_pickle(tuples)), "nested deeper than");
}

// A list may not be changed once it is inside another value: no cycles, and
// the nesting depth stays what was counted.
TEST_F(CraftedFiles, ContainersCannotBeChangedOnceShared) {
  const std::string cycle = bytes(
      "\x80\x02]q\x00h\x00"
      "a.");  // l.append(l)
  expect_weights_error(write("cycle.pt", zip_with_pickle(cycle)), "already");
}

// ---- tensors must lie inside their storage, storages inside their record ----

TEST_F(CraftedFiles, TensorsOutsideTheirBytesAreRejected) {
  TensorSpec big_storage = good_weight();
  big_storage.numel = 1000000;  // the record holds 12 floats
  expect_weights_error(write("storage.pt", state_dict_file(big_storage, good_bias())), "data/0");

  TensorSpec past_end = good_weight();
  past_end.offset = 100;
  expect_weights_error(write("offset.pt", state_dict_file(past_end, good_bias())), "outside");

  TensorSpec strided = good_weight();
  strided.strides = {400, 1};
  expect_weights_error(write("stride.pt", state_dict_file(strided, good_bias())), "outside");

  TensorSpec negative = good_weight();
  negative.strides = {-4, 1};
  expect_weights_error(write("negative.pt", state_dict_file(negative, good_bias())), "negative");

  TensorSpec huge = good_weight();  // (2^31-1)^3 elements: more than 64 bits can count
  huge.sizes = {0x7fffffff, 0x7fffffff, 0x7fffffff};
  huge.strides = {0, 0, 0};
  expect_weights_error(write("huge.pt", state_dict_file(huge, good_bias())), "elements");

  TensorSpec missing = good_weight();
  missing.key = "7";
  expect_weights_error(write("missing.pt", state_dict_file(missing, good_bias())), "data/7");

  TensorSpec unknown = good_weight();
  unknown.storage = "QInt8Storage";
  expect_weights_error(write("dtype.pt", state_dict_file(unknown, good_bias())), "QInt8Storage");
}

// ---- the zip around the pickle ----

TEST_F(CraftedFiles, EmptyTruncatedAndForeignFilesAreNamed) {
  expect_weights_error(write("empty.pt", ""), "is empty");
  expect_weights_error(write("text.pt", "hello\n"), "not a zip archive");
  expect_weights_error(write("nopkl.pt", zip_of({{"other.txt", "x"}})), "has no data.pkl");

  tnt::Model model{Net()};
  model.save_weights(path("good.pt"));
  const std::string good = read_file(path("good.pt"));
  for (std::size_t cut : {good.size() / 2, good.size() - 10, std::size_t{30}}) {
    SCOPED_TRACE(cut);
    expect_weights_error(write("cut.pt", good.substr(0, cut)), "truncated");
  }
}

// ---- entries of the wrong type ----

// A checkpoint written by save(), read back, one entry replaced, re-pickled.
class CraftedCheckpoints : public CraftedFiles {
 protected:
  static tnt::Model compiled() {
    tnt::Model model{Net()};
    model.compile(
        tnt::CompileOptions().optimizer(tnt::optimizers::SGD(0.1)).loss(tnt::losses::NLLLoss()));
    return model;
  }

  std::string with_entry(const std::string& key, const c10::IValue& value) {
    compiled().save(path("good.pt"));
    const std::string good = read_file(path("good.pt"));
    auto dict = torch::pickle_load(std::vector<char>(good.begin(), good.end())).toGenericDict();
    dict.insert_or_assign(key, value);
    const auto out = torch::pickle_save(dict);
    return write(key + ".pt", std::string(out.begin(), out.end()));
  }
};

TEST_F(CraftedCheckpoints, AnEntryOfTheWrongTypeIsNamed) {
  struct Case {
    std::string key;
    c10::IValue value;
    std::string what;
  };
  const std::vector<Case> cases = {
      {"epochs_done", torch::ones({2}), "entry 'epochs_done' is a Tensor, expected an int"},
      {"optimizer_steps", std::string("7"), "entry 'optimizer_steps' is a str, expected an int"},
      {"format", std::int64_t{1}, "entry 'format' is an int, expected a str"},
      {"weights", torch::ones({2}), "entry 'weights' is a Tensor, expected a dict"},
      {"optimizer", torch::ones({2}),
       "entry 'optimizer' is a Float tensor, expected a uint8 tensor"},
      {"rng_state", torch::ones({2}, torch::kUInt8), "entry 'rng_state'"},
      {"gpu_rng_state", torch::ones({16}),
       "entry 'gpu_rng_state' is a Float tensor, expected a uint8 tensor"},
      {"epochs_done", std::int64_t{-3}, "entry 'epochs_done' is -3"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string file = with_entry(c.key, c.value);
    tnt::Model model = compiled();
    expect_clear_error(message_of([&] { model.load(file); }), file, c.what);
  }
}

// A checkpoint from a model on a GPU holds that GPU's generator state too; a
// model on the CPU loads it and leaves its generators but the CPU's alone.
TEST_F(CraftedCheckpoints, AFileFromAGpuModelLoadsOnTheCpu) {
  const std::string file = with_entry("gpu_rng_state", torch::zeros({16}, torch::kUInt8));
  tnt::Model model = compiled();
  EXPECT_EQ(model.load(file), 0);
}

// Every entry is checked before any is copied: a weight of the wrong shape
// after a good one leaves the model as it was.
TEST_F(CraftedCheckpoints, ARefusedFileLeavesTheModelAsItWas) {
  c10::impl::GenericDict weights(c10::StringType::get(), c10::AnyType::get());
  weights.insert("fc.weight", torch::full({3, 4}, 7.0f));
  weights.insert("fc.bias", torch::zeros({5}));
  const std::string file = with_entry("weights", weights);
  tnt::Model model = compiled();
  const torch::Tensor before = model.named_parameters()[0].second.clone();
  expect_clear_error(message_of([&] { model.load(file); }), file, "has shape [5]");
  EXPECT_TRUE(torch::equal(model.named_parameters()[0].second, before));
}

TEST_F(CraftedCheckpoints, LoadModelChecksItsEntriesToo) {
  const std::string architecture = with_entry("architecture", std::int64_t{3});
  expect_clear_error(message_of([&] { tnt::models::load_model(architecture); }), architecture,
                     "entry 'architecture' is an int, expected a str");
  const std::string torchscript = with_entry("torchscript", std::string("abc"));
  expect_clear_error(message_of([&] { tnt::models::load_model(torchscript); }), torchscript,
                     "entry 'torchscript' is a str, expected a uint8 tensor");
}

TEST_F(CraftedCheckpoints, AWeightOfTheWrongTypeIsNamed) {
  c10::impl::GenericDict weights(c10::StringType::get(), c10::AnyType::get());
  weights.insert("fc.weight", std::int64_t{1});
  weights.insert("fc.bias", torch::zeros({3}));
  const std::string file = with_entry("weights", weights);
  tnt::Model model = compiled();
  expect_clear_error(message_of([&] { model.load(file); }), file,
                     "entry 'fc.weight' is an int, expected a tensor");
}

}  // namespace
}  // namespace crafted_files

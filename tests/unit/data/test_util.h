// Helpers for the data pipeline tests: collecting a pass, comparing elements
// with messages that say what differed, and expecting errors by message.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <tarantella/tarantella.h>

namespace tnt_test {

using tnt::data::Dataset;
using tnt::data::Element;

inline std::vector<Element> collect(const Dataset& ds, std::int64_t epoch = 0) {
  std::vector<Element> out;
  auto it = ds.iterate(epoch);
  while (auto e = it.next()) out.push_back(std::move(*e));
  return out;
}

/// The first tensor of every element, as int64 scalars.
inline std::vector<std::int64_t> ints(const Dataset& ds, std::int64_t epoch = 0) {
  std::vector<std::int64_t> out;
  for (const auto& e : collect(ds, epoch)) out.push_back(e.at(0).item<std::int64_t>());
  return out;
}

inline std::string describe_tensor(const torch::Tensor& t) {
  std::ostringstream out;
  out << "dtype " << t.dtype() << " shape " << t.sizes();
  if (t.numel() <= 24) out << " values " << t.flatten().to(torch::kDouble);
  return out.str();
}

/// Empty if equal (same count, shapes, dtypes and values), else what differs.
inline std::string element_difference(const Element& actual, const Element& expected) {
  if (actual.size() != expected.size()) {
    return "element has " + std::to_string(actual.size()) + " tensors, expected " +
           std::to_string(expected.size());
  }
  for (std::size_t c = 0; c < actual.size(); ++c) {
    const auto& a = actual[c];
    const auto& e = expected[c];
    if (a.dtype() != e.dtype() || a.sizes() != e.sizes() || !torch::equal(a, e)) {
      return "tensor " + std::to_string(c) + ": got " + describe_tensor(a) + ", expected " +
             describe_tensor(e);
    }
  }
  return "";
}

#define EXPECT_ELEMENT_EQ(actual, expected)                                        \
  do {                                                                             \
    const std::string tnt_diff = ::tnt_test::element_difference(actual, expected); \
    EXPECT_TRUE(tnt_diff.empty()) << tnt_diff;                                     \
  } while (false)

/// Runs `fn`, expects a tnt::Error whose message contains every part.
template <typename Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected a tnt::Error mentioning '" << parts.front() << "', got none";
  } catch (const tnt::Error& e) {
    const std::string message = e.what();
    for (const auto& p : parts) {
      EXPECT_NE(message.find(p), std::string::npos) << "message lacks '" << p << "': " << message;
    }
  }
}

}  // namespace tnt_test

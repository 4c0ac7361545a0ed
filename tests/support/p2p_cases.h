// Point-to-point cases that hold on any ProcessGroup of two or more ranks,
// whatever its backend: the in-process unit tests (tests/unit/p2p_test.cpp)
// and the MPI tests under the launcher (tests/mpi/p2p_test.cpp) run the
// same cases, so both backends are held to one contract. Every rank of the
// group calls each case; ranks beyond those a case needs just return.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/comm/process_group.h>

namespace tnt::test::p2p {

using tnt::comm::Handle;
using tnt::comm::ProcessGroup;

/// A tensor of `dtype` whose values depend on `seed` (bool: alternating).
inline torch::Tensor sample(torch::ScalarType dtype, int seed, std::vector<std::int64_t> shape) {
  const torch::Tensor base = torch::arange(1, 1 + torch::tensor(shape).prod().item<std::int64_t>(),
                                           torch::kFloat64)
                                 .reshape(shape);
  if (dtype == torch::kBool) return ((base + seed).remainder(2) == 0);
  return (base + 10 * seed).remainder(120).to(dtype);  // exact in every dtype
}

inline std::vector<torch::ScalarType> every_dtype() {
  return {torch::kFloat32, torch::kFloat64, torch::kFloat16, torch::kBFloat16,
          torch::kInt32,   torch::kInt64,   torch::kUInt8,   torch::kBool};
}

/// Text of the exception `fn` throws as type E; fails when it throws none.
template <typename E, typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

/// Each rank sends every dtype to the next rank and receives from the
/// previous one (a ring: all sends posted before any wait).
inline void ring_of_every_dtype(const ProcessGroup& g) {
  const int n = g.size(), r = g.rank();
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  std::vector<Handle> sends, recvs;
  std::vector<torch::Tensor> into;
  for (torch::ScalarType dtype : every_dtype()) {
    sends.push_back(g.isend(sample(dtype, r, {3, 5}), next, 0, "ring"));
    into.push_back(torch::zeros({3, 5}, dtype));
    recvs.push_back(g.irecv(into.back(), prev, 0, "ring"));
  }
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    const torch::Tensor got = recvs[i].wait();
    EXPECT_TRUE(torch::equal(got, sample(every_dtype()[i], prev, {3, 5})))
        << "dtype " << every_dtype()[i] << " from rank " << prev;
  }
  for (auto& h : sends) h.wait();
}

/// Rank 0 sends 1, 2, 3 on tag 0 and 10, 20 on tag 1; rank 1 posts its
/// receives tag 1 first: each tag still delivers in its own order.
inline void tags_keep_order(const ProcessGroup& g) {
  if (g.rank() == 0) {
    std::vector<Handle> hs;
    for (float v : {1.0f, 2.0f, 3.0f}) hs.push_back(g.isend(torch::full({4}, v), 1, 0, "tag 0"));
    for (float v : {10.0f, 20.0f}) hs.push_back(g.isend(torch::full({4}, v), 1, 1, "tag 1"));
    for (auto& h : hs) h.wait();
  } else if (g.rank() == 1) {
    std::vector<torch::Tensor> t1 = {torch::zeros({4}), torch::zeros({4})};
    std::vector<torch::Tensor> t0 = {torch::zeros({4}), torch::zeros({4}), torch::zeros({4})};
    std::vector<Handle> h1, h0;
    for (auto& t : t1) h1.push_back(g.irecv(t, 0, 1, "tag 1"));
    for (auto& t : t0) h0.push_back(g.irecv(t, 0, 0, "tag 0"));
    // Waited last first: the order of waits does not change the matching.
    for (int i = 2; i >= 0; --i) EXPECT_EQ(h0[i].wait()[0].item<float>(), (i + 1) * 1.0f);
    for (int i = 1; i >= 0; --i) EXPECT_EQ(h1[i].wait()[0].item<float>(), (i + 1) * 10.0f);
  }
}

/// Ranks 0 and 1 swap tensors, each waiting on its own send before its
/// recv: a waiting rank still takes its peer's data, so neither hangs.
inline void swap_waiting_on_send_first(const ProcessGroup& g) {
  if (g.rank() > 1) return;
  const int peer = 1 - g.rank();
  torch::Tensor in = torch::zeros({1000});
  Handle s = g.isend(torch::full({1000}, g.rank() + 1.0f), peer, 7, "swap");
  Handle r = g.irecv(in, peer, 7, "swap");
  s.wait();
  EXPECT_TRUE(s.ready());
  r.wait();
  EXPECT_EQ(in[999].item<float>(), peer + 1.0f);
}

/// 3.5 MiB and an empty tensor from rank 0 to rank 1, blocking calls.
inline void large_and_empty(const ProcessGroup& g) {
  const std::int64_t n = 7 * 128 * 1024 + 3;  // pieces of 1 MiB and a remainder
  if (g.rank() == 0) {
    g.send(torch::arange(n, torch::kInt32), 1, 2, "large");
    g.send(torch::zeros({0, 4}), 1, 2, "empty");
  } else if (g.rank() == 1) {
    const torch::Tensor got = g.recv(torch::zeros({n}, torch::kInt32), 0, 2, "large");
    EXPECT_TRUE(torch::equal(got, torch::arange(n, torch::kInt32)));
    EXPECT_EQ(g.recv(torch::ones({0, 4}), 0, 2, "empty").numel(), 0);
  }
}

/// A shape, then a dtype mismatch: both ranks raise the same MismatchError
/// naming both ranks, both shapes and the label; the tag works afterwards.
inline void mismatch_names_both(const ProcessGroup& g) {
  if (g.rank() > 1) return;
  const auto both = [&](torch::Tensor mine, const char* sent, const char* expected) {
    const std::string text = error_of<tnt::MismatchError>([&] {
      if (g.rank() == 0) g.send(mine, 1, 3, "stage 1 activations");
      else g.recv(mine, 0, 3, "stage 1 activations");
    });
    EXPECT_NE(text.find("'stage 1 activations'"), std::string::npos) << text;
    EXPECT_NE(text.find(std::string("rank 0 sent ") + sent), std::string::npos) << text;
    EXPECT_NE(text.find(std::string("rank 1 expected ") + expected), std::string::npos) << text;
  };
  both(g.rank() == 0 ? torch::ones({2, 3}) : torch::zeros({3, 2}), "float32 [2, 3]",
       "float32 [3, 2]");
  both(g.rank() == 0 ? torch::ones({4}) : torch::zeros({4}, torch::kFloat64), "float32 [4]",
       "float64 [4]");
  if (g.rank() == 0) {
    g.send(torch::full({2}, 5.0f), 1, 3, "after");
  } else {
    EXPECT_EQ(g.recv(torch::zeros({2}), 0, 3, "after")[1].item<float>(), 5.0f);
  }
}

/// Bad arguments throw at once, naming the value and the fix.
inline void bad_arguments(const ProcessGroup& g) {
  const int n = g.size(), r = g.rank();
  const int other = (r + 1) % n;
  const auto text = [](auto fn) { return error_of<tnt::Error>(fn); };
  std::string t = text([&] { g.send(torch::ones({2}), n + 3, 0, "x"); });
  EXPECT_NE(t.find("peer " + std::to_string(n + 3) + " is not a rank of this group"),
            std::string::npos) << t;
  t = text([&] { g.recv(torch::ones({2}), r, 0, "x"); });
  EXPECT_NE(t.find("is this rank itself"), std::string::npos) << t;
  t = text([&] { g.send(torch::ones({2}), other, -1, "x"); });
  EXPECT_NE(t.find("tag -1 is out of range"), std::string::npos) << t;
  t = text([&] { g.recv(torch::Tensor(), other, 0, "x"); });
  EXPECT_NE(t.find("undefined tensor"), std::string::npos) << t;
  t = text([&] { g.recv(torch::zeros({4, 4}).t(), other, 0, "weights"); });
  EXPECT_NE(t.find("recv of 'weights' needs a contiguous tensor"), std::string::npos) << t;
  EXPECT_NE(t.find("receive into a contiguous tensor"), std::string::npos) << t;
}

/// A send whose tensor is rejected tells its receiver, which fails at
/// once (not after the timeout) naming the sender.
inline void sender_rejects_its_tensor(const ProcessGroup& g) {
  if (g.rank() == 0) {
    const std::string t = error_of<tnt::Error>([&] { g.send(torch::Tensor(), 1, 4, "bad"); });
    EXPECT_NE(t.find("undefined tensor"), std::string::npos) << t;
  } else if (g.rank() == 1) {
    const std::string t = error_of<tnt::Error>([&] { g.recv(torch::zeros({2}), 0, 4, "bad"); });
    EXPECT_NE(t.find("rank 0 rejected its own arguments"), std::string::npos) << t;
  }
}

/// A transfer does not wait behind a collective queued on the engine: rank
/// 0 queues an allreduce that rank 1 joins only after the transfer.
inline void not_behind_queued_collectives(const ProcessGroup& g) {
  torch::Tensor sum = torch::ones({8});
  if (g.rank() == 0) {
    Handle h = g.allreduce_async(sum);
    g.send(torch::full({3}, 9.0f), 1, 5, "ahead of the allreduce");
    h.wait();
  } else {
    if (g.rank() == 1) {
      EXPECT_EQ(g.recv(torch::zeros({3}), 0, 5, "ahead of the allreduce")[0].item<float>(), 9.0f);
    }
    g.allreduce(sum);
  }
  EXPECT_EQ(sum[0].item<float>(), static_cast<float>(g.size()));
}

}  // namespace tnt::test::p2p

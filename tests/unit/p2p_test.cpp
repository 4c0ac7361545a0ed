// Point-to-point transfers on the in-process backend (threads as ranks):
// the cases every backend must pass (tests/support/p2p_cases.h) at 2 and 3
// ranks, then what only a fake clock-free group can show cheaply: a peer
// that never sends times out within a short timeout, naming the peer and
// the label, and the Handle's ready() before and after.
#include <gtest/gtest.h>

#include <chrono>

#include <tarantella/comm/in_process.h>

#include "../support/p2p_cases.h"

namespace {

using tnt::comm::ProcessGroup;
using tnt::comm::run_in_process;
namespace cases = tnt::test::p2p;

class P2pCases : public ::testing::TestWithParam<int> {};

TEST_P(P2pCases, RingOfEveryDtype) { run_in_process(GetParam(), cases::ring_of_every_dtype); }
TEST_P(P2pCases, TagsKeepOrder) { run_in_process(GetParam(), cases::tags_keep_order); }
TEST_P(P2pCases, SwapWaitingOnSendFirst) {
  run_in_process(GetParam(), cases::swap_waiting_on_send_first);
}
TEST_P(P2pCases, LargeAndEmpty) { run_in_process(GetParam(), cases::large_and_empty); }
TEST_P(P2pCases, MismatchNamesBoth) { run_in_process(GetParam(), cases::mismatch_names_both); }
TEST_P(P2pCases, BadArguments) { run_in_process(GetParam(), cases::bad_arguments); }
TEST_P(P2pCases, SenderRejectsItsTensor) {
  run_in_process(GetParam(), cases::sender_rejects_its_tensor);
}
TEST_P(P2pCases, NotBehindQueuedCollectives) {
  run_in_process(GetParam(), cases::not_behind_queued_collectives);
}
INSTANTIATE_TEST_SUITE_P(Ranks, P2pCases, ::testing::Values(2, 3));

TEST(P2pTimeout, APeerThatNeverSendsIsNamed) {
  auto ranks = tnt::comm::make_in_process_group(2, /*timeout_seconds=*/0.3);
  const auto start = std::chrono::steady_clock::now();
  const std::string text = cases::error_of<tnt::TimeoutError>(
      [&] { ranks[1].recv(torch::zeros({8, 16}), 0, 1, "stage 0 activations"); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_NE(text.find("recv of 'stage 0 activations' (float32 [8, 16], tag 1) from rank 0"),
            std::string::npos) << text;
  EXPECT_NE(text.find("rank 0 of the in-process group did not send it"), std::string::npos)
      << text;
  EXPECT_TRUE(ranks[1].broken());
  // Afterwards the group refuses new transfers instead of hanging on them.
  const std::string again = cases::error_of<tnt::Error>(
      [&] { ranks[0].send(torch::zeros({2}), 1, 0, "next"); });
  EXPECT_NE(again.find("unusable"), std::string::npos) << again;
}

TEST(P2pTimeout, AReceiverThatNeverComesIsNamed) {
  auto ranks = tnt::comm::make_in_process_group(2, 0.3);
  const std::string text = cases::error_of<tnt::TimeoutError>(
      [&] { ranks[0].send(torch::zeros({3}), 1, 0, "stage 0 gradients"); });
  EXPECT_NE(text.find("send of 'stage 0 gradients'"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1 of the in-process group did not receive it"), std::string::npos)
      << text;
}

TEST(P2pHandle, ReadyOnceBothSidesAreIn) {
  auto ranks = tnt::comm::make_in_process_group(2, 10.0);
  torch::Tensor into = torch::zeros({2});
  tnt::comm::Handle r = ranks[1].irecv(into, 0, 0, "x");
  EXPECT_FALSE(r.ready());
  EXPECT_TRUE(r.started().has_value());
  EXPECT_FALSE(r.finished().has_value());
  tnt::comm::Handle s = ranks[0].isend(torch::full({2}, 4.0f), 1, 0, "x");
  EXPECT_TRUE(r.ready());
  EXPECT_TRUE(s.ready());
  EXPECT_EQ(r.wait()[0].item<float>(), 4.0f);
  EXPECT_EQ(r.wait()[0].item<float>(), 4.0f);  // a second wait gives the same
  EXPECT_TRUE(r.finished().has_value());
  EXPECT_EQ(r.name(), "recv from rank 0 (tag 0, 'x')");
}

}  // namespace

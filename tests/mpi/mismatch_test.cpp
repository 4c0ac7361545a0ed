// Ranks that disagree about a collective must all get an error that says
// what each side had — never a hang or a wrong result — and the job must be
// able to go on afterwards.
#include <gtest/gtest.h>

#include <functional>

#include <tarantella/tarantella.h>

namespace {

using tnt::comm::ReduceOp;

// Runs `call` on every rank and returns the message of the MismatchError it
// must raise there.
std::string mismatch_message(const std::function<void()>& call) {
  try {
    call();
  } catch (const tnt::MismatchError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "rank " << tnt::get_rank() << " raised the wrong error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "rank " << tnt::get_rank() << " did not raise";
  return "";
}

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos)
      << "rank " << tnt::get_rank() << ": '" << part << "' missing from: " << message;
}

void expect_still_in_step() {
  torch::Tensor t = torch::ones({5}, torch::kInt64);
  tnt::comm::allreduce(t);
  EXPECT_TRUE(torch::equal(t, torch::full({5}, tnt::get_size(), torch::kInt64)));
}

class Mismatch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (tnt::get_size() < 2) GTEST_SKIP() << "needs at least 2 ranks";
  }
  int last() const { return tnt::get_size() - 1; }
  bool is_last() const { return tnt::get_rank() == last(); }
};

TEST_F(Mismatch, DifferentDtypes) {
  const std::string m = mismatch_message([&] {
    tnt::comm::allreduce(torch::ones({1000}, is_last() ? torch::kFloat64 : torch::kFloat32));
  });
  expect_contains(m, "mismatch across ranks");
  expect_contains(m, "called allreduce(sum) float32 [1000]");
  expect_contains(m, "rank " + std::to_string(last()) + " called allreduce(sum) float64 [1000]");
  expect_still_in_step();
}

TEST_F(Mismatch, DifferentElementCounts) {
  const std::string m = mismatch_message(
      [&] { tnt::comm::allreduce(torch::ones({tnt::is_master_rank() ? 5 : 6})); });
  expect_contains(m, "rank 0 called allreduce(sum) float32 [5]");
  expect_contains(m, "float32 [6]");
  expect_still_in_step();
}

TEST_F(Mismatch, DifferentOperations) {
  const std::string m = mismatch_message([&] {
    tnt::comm::allreduce(torch::ones({3}), is_last() ? ReduceOp::Max : ReduceOp::Sum);
  });
  expect_contains(m, "allreduce(max)");
  expect_contains(m, "allreduce(sum)");
  expect_still_in_step();
}

TEST_F(Mismatch, DifferentCollectives) {
  const std::string m = mismatch_message([&] {
    if (tnt::is_master_rank()) {
      tnt::comm::broadcast(torch::ones({3}), 0);
    } else {
      tnt::comm::allreduce(torch::ones({3}));
    }
  });
  expect_contains(m, "rank 0 called broadcast(root 0) float32 [3]");
  expect_contains(m, "allreduce(sum) float32 [3]");
  expect_still_in_step();
}

TEST_F(Mismatch, DifferentBroadcastRoots) {
  const std::string m =
      mismatch_message([&] { tnt::comm::broadcast(torch::ones({3}), is_last() ? 1 : 0); });
  expect_contains(m, "broadcast(root 0)");
  expect_contains(m, "broadcast(root 1)");
  expect_still_in_step();
}

TEST_F(Mismatch, BarrierAgainstAllgather) {
  const std::string m = mismatch_message([&] {
    if (is_last()) {
      tnt::comm::barrier();
    } else {
      tnt::comm::allgather(torch::ones({2}));
    }
  });
  expect_contains(m, "called barrier");
  expect_contains(m, "called allgather");
  expect_still_in_step();
}

// The same mismatches once every rank has agreed to both sides before: the
// descriptors are in every rank's response cache, so only fingerprints are
// compared, and the full handshake must still run and name both sides.
TEST_F(Mismatch, CachedElementCountsThatDifferAreStillNamed) {
  for (int n : {5, 6}) tnt::comm::allreduce(torch::ones({n}));
  for (int n : {5, 6}) tnt::comm::allreduce(torch::ones({n}));
  const std::string m = mismatch_message(
      [&] { tnt::comm::allreduce(torch::ones({tnt::is_master_rank() ? 5 : 6})); });
  expect_contains(m, "mismatch across ranks");
  expect_contains(m, "rank 0 called allreduce(sum) float32 [5]");
  expect_contains(m, "called allreduce(sum) float32 [6]");
  expect_still_in_step();
}

TEST_F(Mismatch, CachedSameByteCountDifferentDtypesAreStillNamed) {
  // 1000 float32 and 1000 int32 are the same 4000 bytes: only the
  // fingerprint tells them apart on the fast path.
  for (auto dtype : {torch::kFloat32, torch::kInt32}) tnt::comm::allreduce(torch::ones({1000}, dtype));
  const std::string m = mismatch_message([&] {
    tnt::comm::allreduce(torch::ones({1000}, is_last() ? torch::kInt32 : torch::kFloat32));
  });
  expect_contains(m, "called allreduce(sum) float32 [1000]");
  expect_contains(m, "rank " + std::to_string(last()) + " called allreduce(sum) int32 [1000]");
  expect_still_in_step();
}

TEST_F(Mismatch, CachedOperationsAndCollectivesThatDifferAreStillNamed) {
  tnt::comm::allreduce(torch::ones({3}), ReduceOp::Max);
  tnt::comm::allreduce(torch::ones({3}), ReduceOp::Sum);
  tnt::comm::broadcast(torch::ones({3}), 0);
  std::string m = mismatch_message([&] {
    tnt::comm::allreduce(torch::ones({3}), is_last() ? ReduceOp::Max : ReduceOp::Sum);
  });
  expect_contains(m, "called allreduce(max) float32 [3]");
  expect_contains(m, "called allreduce(sum) float32 [3]");
  m = mismatch_message([&] {
    if (tnt::is_master_rank()) {
      tnt::comm::broadcast(torch::ones({3}), 0);
    } else {
      tnt::comm::allreduce(torch::ones({3}));
    }
  });
  expect_contains(m, "rank 0 called broadcast(root 0) float32 [3]");
  expect_contains(m, "allreduce(sum) float32 [3]");
  expect_still_in_step();
}

TEST_F(Mismatch, CachedCollectiveAgainstAnUncachedOne) {
  // One side's descriptor is cached, the other's is new (an allgatherv, never
  // cached): both must fall back to the full handshake together.
  tnt::comm::allreduce(torch::ones({4}));
  const std::string m = mismatch_message([&] {
    if (is_last()) {
      tnt::comm::allgatherv(torch::ones({4}));
    } else {
      tnt::comm::allreduce(torch::ones({4}));
    }
  });
  expect_contains(m, "called allgatherv");
  expect_contains(m, "called allreduce(sum) float32 [4]");
  expect_still_in_step();
}

TEST_F(Mismatch, ARankThatRejectsItsArgumentsDoesNotLeaveOthersWaiting) {
  // The last rank passes a non-contiguous tensor: it gets the detailed
  // error, the others learn at once that it dropped out.
  try {
    torch::Tensor t = is_last() ? torch::ones({4, 4}).t() : torch::ones({4, 4});
    tnt::comm::allreduce(t);
    ADD_FAILURE() << "rank " << tnt::get_rank() << " did not raise";
  } catch (const tnt::MismatchError& e) {
    EXPECT_FALSE(is_last()) << e.what();
    expect_contains(e.what(), "rank " + std::to_string(last()) + " rejected its arguments");
  } catch (const tnt::Error& e) {
    EXPECT_TRUE(is_last()) << e.what();
    expect_contains(e.what(), ".contiguous()");
  }
  expect_still_in_step();
}

}  // namespace

// Point-to-point transfers between MPI ranks under the launcher (2 and 3
// ranks): the cases every backend must pass (tests/support/p2p_cases.h)
// on the world group, and on a subgroup whose group ranks differ from the
// world's.
#include <gtest/gtest.h>

#include <tarantella/tarantella.h>

#include "../support/p2p_cases.h"

namespace {

namespace cases = tnt::test::p2p;

TEST(MpiP2p, RingOfEveryDtype) { cases::ring_of_every_dtype(tnt::world()); }
TEST(MpiP2p, TagsKeepOrder) { cases::tags_keep_order(tnt::world()); }
TEST(MpiP2p, SwapWaitingOnSendFirst) { cases::swap_waiting_on_send_first(tnt::world()); }
TEST(MpiP2p, LargeAndEmpty) { cases::large_and_empty(tnt::world()); }
TEST(MpiP2p, MismatchNamesBoth) { cases::mismatch_names_both(tnt::world()); }
TEST(MpiP2p, BadArguments) { cases::bad_arguments(tnt::world()); }
TEST(MpiP2p, SenderRejectsItsTensor) { cases::sender_rejects_its_tensor(tnt::world()); }
TEST(MpiP2p, NotBehindQueuedCollectives) {
  cases::not_behind_queued_collectives(tnt::world());
}

// The last ranks of the world, in reverse order, as a group of their own.
TEST(MpiP2p, OnASubgroup) {
  const int n = tnt::get_size();
  const auto pair = tnt::world().subgroup({n - 1, n - 2});
  if (!pair.is_member()) return;
  cases::ring_of_every_dtype(pair);
  cases::mismatch_names_both(pair);
}

}  // namespace

// The protocol between MpiP2p and a device transport (DevicePayload: NCCL
// on a GPU), run on the CPU with a stand-in transport: which header opens
// the channel, and whose error a failure of the transport is. NCCL's own
// side (nccl_p2p.cpp) needs a GPU; this is the part that does not.
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <set>
#include <string>

#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/tarantella.h>

#include "comm/mpi/mpi_p2p.h"

namespace {

using tnt::comm::DeviceTransfer;
using tnt::comm::Transfer;

struct FakeTransfer final : DeviceTransfer {
  MPI_Request req = MPI_REQUEST_NULL;
  torch::Tensor keep;
  bool test() override {
    int flag = 0;
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }
};

// Stands in for NCCL: it takes float64 tensors; their bytes go on a
// communicator of its own under one MPI tag, so, as NCCL's, its transfers
// carry no tag of the caller's and both ends must issue them in the same
// order. A receive on a channel not joined fails, as NcclP2p's does.
class FakeDevicePayload final : public tnt::comm::DevicePayload {
 public:
  FakeDevicePayload() {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_rank(comm_, &rank_);
  }
  ~FakeDevicePayload() override { MPI_Comm_free(&comm_); }

  bool takes(const torch::Tensor& t) const override {
    return t.defined() && t.scalar_type() == torch::kFloat64;
  }
  std::string open_to(int peer) override { return token(rank_, peer); }
  void join_from(int peer, const std::string& given) override {
    EXPECT_EQ(given.substr(0, token(peer, rank_).size()), token(peer, rank_));
    joined_.insert(peer);
  }
  std::shared_ptr<void> ready_mark(const torch::Tensor&) override { return nullptr; }
  std::shared_ptr<DeviceTransfer> send(int peer, const torch::Tensor& t,
                                       std::shared_ptr<void>) override {
    if (t.numel() == fail_send_numel) ::tnt::detail::throw_error("fake transport: send failed");
    return post(false, peer, t);
  }
  std::shared_ptr<DeviceTransfer> recv(int peer, const torch::Tensor& t,
                                       std::shared_ptr<void>) override {
    if (fail_recvs) ::tnt::detail::throw_error("fake transport: recv failed");
    TNT_CHECK(joined_.count(peer) != 0, "fake transport: no channel from rank ", peer, " joined");
    return post(true, peer, t);
  }
  void abort() noexcept override {}

  /// What a send that failed left the receiver waiting for (the test's
  /// clean-up: a real job ends instead).
  void send_directly(int peer, const torch::Tensor& t) {
    MPI_Send(t.data_ptr(), static_cast<int>(t.nbytes()), MPI_BYTE, peer, 0, comm_);
  }

  std::int64_t fail_send_numel = -1;
  bool fail_recvs = false;

 private:
  static std::string token(int from, int to) {
    return "channel " + std::to_string(from) + "->" + std::to_string(to);
  }
  std::shared_ptr<DeviceTransfer> post(bool receive, int peer, const torch::Tensor& t) {
    auto tr = std::make_shared<FakeTransfer>();
    tr->keep = t;
    const int n = static_cast<int>(t.nbytes());
    if (receive) {
      MPI_Irecv(t.data_ptr(), n, MPI_BYTE, peer, 0, comm_, &tr->req);
    } else {
      MPI_Isend(t.data_ptr(), n, MPI_BYTE, peer, 0, comm_, &tr->req);
    }
    return tr;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  std::set<int> joined_;
};

struct Pair {
  std::shared_ptr<FakeDevicePayload> device = std::make_shared<FakeDevicePayload>();
  tnt::comm::MpiP2p p2p{MPI_COMM_WORLD, 20.0, /*threads_multiple=*/true,
                        std::vector<std::string>(static_cast<std::size_t>(tnt::get_size()), "host"),
                        nullptr};
  Pair() { p2p.set_device_payload(device); }
};

torch::Tensor f64(std::int64_t n, double v) { return torch::full({n}, v, torch::kFloat64); }

std::string error_of(const std::shared_ptr<tnt::comm::P2pWork>& work) {
  try {
    work->wait();
  } catch (const tnt::Error& e) {
    return e.what();
  }
  return "";
}

// The receiver takes headers tag by tag (1 before 5 here), not in the
// order sent: every header carries the channel's token, and the first one
// taken joins it.
TEST(MpiP2pDevice, TheChannelIsJoinedAtWhicheverHeaderIsTakenFirst) {
  Pair pair;
  if (tnt::get_rank() == 0) {
    const torch::Tensor five = f64(3, 5.0), one = f64(2, 1.0);
    auto a = pair.p2p.send(Transfer{five, 1, 5, "five"});  // the channel's first transfer
    auto b = pair.p2p.send(Transfer{one, 1, 1, "one"});
    b->wait();
    a->wait();
  } else if (tnt::get_rank() == 1) {
    torch::Tensor one = torch::zeros({2}, torch::kFloat64), five = torch::zeros({3}, torch::kFloat64);
    auto b = pair.p2p.recv(Transfer{one, 0, 1, "one"});
    auto a = pair.p2p.recv(Transfer{five, 0, 5, "five"});
    a->wait();
    b->wait();
    EXPECT_TRUE(torch::equal(one, f64(2, 1.0)));
    EXPECT_TRUE(torch::equal(five, f64(3, 5.0)));
  }
}

// A device send that fails is that send's error; a transfer that happens
// to drive progress (here a host tensor's, waited for first) completes.
TEST(MpiP2pDevice, AFailedDeviceSendFailsThatSendAndNoOther) {
  Pair pair;
  if (tnt::get_rank() == 0) {
    pair.device->fail_send_numel = 7;
    const torch::Tensor on_device = f64(7, 2.0);
    const torch::Tensor on_host = torch::full({4}, 3.0f);
    auto a = pair.p2p.send(Transfer{on_device, 1, 0, "device"});
    auto b = pair.p2p.send(Transfer{on_host, 1, 1, "host"});
    EXPECT_EQ(error_of(b), "");
    const std::string failed = error_of(a);
    EXPECT_NE(failed.find("fake transport: send failed"), std::string::npos) << failed;
    pair.device->send_directly(1, on_device);  // clean-up (see send_directly)
  } else if (tnt::get_rank() == 1) {
    torch::Tensor on_device = torch::zeros({7}, torch::kFloat64);
    torch::Tensor on_host = torch::zeros({4});
    auto a = pair.p2p.recv(Transfer{on_device, 0, 0, "device"});
    auto b = pair.p2p.recv(Transfer{on_host, 0, 1, "host"});
    b->wait();
    a->wait();
    EXPECT_TRUE(torch::equal(on_host, torch::full({4}, 3.0f)));
  }
}

// A receiver that cannot issue its device receive fails with the
// transport's error, and tells its sender in the ack: the sender fails
// at once, naming it, instead of sending into nothing until the timeout.
TEST(MpiP2pDevice, AReceiverThatCannotTakeTheDataFailsBothEnds) {
  Pair pair;
  if (tnt::get_rank() == 0) {
    auto a = pair.p2p.send(Transfer{f64(5, 1.0), 1, 3, "activations"});
    const std::string failed = error_of(a);
    EXPECT_NE(failed.find("rank 1 could not receive it on the GPU transport"), std::string::npos)
        << failed;
    EXPECT_NE(failed.find("'activations'"), std::string::npos) << failed;
  } else if (tnt::get_rank() == 1) {
    pair.device->fail_recvs = true;
    auto a = pair.p2p.recv(Transfer{torch::zeros({5}, torch::kFloat64), 0, 3, "activations"});
    const std::string failed = error_of(a);
    EXPECT_NE(failed.find("fake transport: recv failed"), std::string::npos) << failed;
  }
}

}  // namespace

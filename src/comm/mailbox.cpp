// The in-process point-to-point transfers of mailbox.h: letters matched by
// number in their stream, delivered by whichever side comes second.
#include "comm/mailbox.h"

#include <chrono>
#include <climits>

#include <tarantella/base/error.h>

#include "comm/descriptor.h"
#include "comm/transfer.h"

namespace tnt::comm {

namespace {
constexpr int kMaxTag = INT_MAX / 2;
}

struct Mailbox::Letter {
  std::int64_t seq = 0;   ///< its number in its stream
  bool posted = false;    ///< the sender is in
  bool expected = false;  ///< the receiver is in
  bool delivered = false;
  P2pHeader sent, wanted;
  torch::Tensor data, into;
  std::string error;      ///< set at delivery when the two disagree
  bool mismatch = false;
};

// One side of one letter.
class Mailbox::Work final : public P2pWork {
 public:
  Work(Mailbox& box, std::shared_ptr<Letter> letter, Transfer t, int rank, bool receiving)
      : box_(box), letter_(std::move(letter)), t_(std::move(t)), rank_(rank),
        receiving_(receiving) {}

  bool test() override {
    std::lock_guard<std::mutex> lock(box_.mutex_);
    return letter_->delivered || box_.broken_;
  }

  void wait() override {
    std::unique_lock<std::mutex> lock(box_.mutex_);
    const auto limit = std::chrono::duration<double>(box_.timeout_seconds_);
    const bool in_time = box_.delivered_.wait_for(
        lock, limit, [&] { return letter_->delivered || box_.broken_; });
    if (!letter_->delivered) {
      box_.broken_ = true;
      box_.delivered_.notify_all();
      if (!in_time) {
        throw TimeoutError(timeout_text(t_, receiving_, rank_, box_.timeout_seconds_,
                                        rank_list({t_.peer}) + " of the in-process group", false,
                                        ""));
      }
      throw Error(::tnt::detail::concat("[tarantella rank ", rank_, "] ",
                                        transfer_text(t_, receiving_),
                                        ": the point-to-point transfers of this group are "
                                        "unusable after an earlier one timed out (see that "
                                        "error)"));
    }
    if (letter_->error.empty()) return;
    const std::string text = ::tnt::detail::concat("[tarantella rank ", rank_, "] ", letter_->error);
    if (letter_->mismatch) throw MismatchError(text);
    if (receiving_) throw Error(text);
  }

 private:
  Mailbox& box_;
  std::shared_ptr<Letter> letter_;
  Transfer t_;
  int rank_;
  bool receiving_;
};

Mailbox::Mailbox(int size, double timeout_seconds)
    : size_(size), timeout_seconds_(timeout_seconds) {}

bool Mailbox::broken() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return broken_;
}

std::shared_ptr<Mailbox::Letter> Mailbox::letter(int from, int to, int tag, bool sending) {
  Stream& s = streams_[{from, to, tag}];
  const std::int64_t seq = sending ? s.sent++ : s.received++;
  auto& slot = s.letters[seq];
  if (!slot) {
    slot = std::make_shared<Letter>();
    slot->seq = seq;
  }
  return slot;
}

void Mailbox::deliver(Letter& l, int from, int to, int tag) {
  if (!l.posted || !l.expected) return;
  Transfer receiver;
  receiver.peer = from;
  receiver.tag = tag;
  receiver.what = std::string(l.wanted.what);
  if (l.sent.failed) {
    l.error = ::tnt::detail::concat(transfer_text(receiver, true), ": rank ", from,
                                    " rejected its own arguments to the matching send (see that "
                                    "rank's error); no data was sent");
  } else {
    l.error = mismatch_text(l.sent, from, l.wanted, to, tag);
    l.mismatch = !l.error.empty();
    if (!l.mismatch) l.into.copy_(l.data);
  }
  l.delivered = true;
  l.data = torch::Tensor();
  l.into = torch::Tensor();
  streams_[{from, to, tag}].letters.erase(l.seq);
  delivered_.notify_all();
}

std::shared_ptr<P2pWork> Mailbox::send(int from, const Transfer& t) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto problem = transfer_problem(t, false, from, size_, kMaxTag);
  if (problem && peer_is_valid(t, from, size_, kMaxTag)) {
    auto l = letter(from, t.peer, t.tag, true);
    l->posted = true;
    l->sent.seq = l->seq;
    l->sent.failed = 1;
    deliver(*l, from, t.peer, t.tag);
  }
  if (problem) ::tnt::detail::throw_error(*problem);
  TNT_CHECK(!broken_, transfer_text(t, false),
            ": the point-to-point transfers of this group are unusable after an earlier one "
            "timed out (see that error)");
  auto l = letter(from, t.peer, t.tag, true);
  l->sent = header_of(t.tensor, l->seq, t.what);
  l->data = t.tensor;
  l->posted = true;
  deliver(*l, from, t.peer, t.tag);
  return std::make_shared<Work>(*this, l, t, from, false);
}

std::shared_ptr<P2pWork> Mailbox::recv(int to, const Transfer& t) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto problem = transfer_problem(t, true, to, size_, kMaxTag)) {
    ::tnt::detail::throw_error(*problem);
  }
  TNT_CHECK(!broken_, transfer_text(t, true),
            ": the point-to-point transfers of this group are unusable after an earlier one "
            "timed out (see that error)");
  auto l = letter(t.peer, to, t.tag, false);
  l->wanted = header_of(t.tensor, l->seq, t.what);
  l->into = t.tensor;
  l->expected = true;
  deliver(*l, t.peer, to, t.tag);
  return std::make_shared<Work>(*this, l, t, to, true);
}

}  // namespace tnt::comm

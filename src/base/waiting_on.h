// Private: what this process's threads are blocked on in comm, for the
// stack service's answer (comm/check/stack_service.h). A rank asked where it is while
// it waits on another rank says so, so that a timeout report names the
// rank at the end of a chain of waits. In a pipeline, rank 0 may time out
// in its stage's allreduce waiting for rank 2, which itself waits for rank
// 3's gradients: rank 0's report then says "rank 2 ... is in P2pOp::wait
// ...; it waits for recv ... = rank 3 (stage 1 of 2, pipeline 1)".
// Header-only: one registry per process (the stack service is one per
// process too), guarded by a mutex; a wait registers itself for as long as
// it blocks (an RAII WaitingOn), so nothing is left behind by a throw. The
// text is made only when asked (a collective registers itself every time).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace tnt::detail {

class WaitingOn {
 public:
  /// Marks what `describe` says ("recv from rank 1 (tag 2, '...')") as
  /// waited on by this process until destroyed.
  explicit WaitingOn(std::function<std::string()> describe) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    id_ = ++r.next;
    r.waits.emplace(id_, std::move(describe));
  }
  ~WaitingOn() {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.waits.erase(id_);
  }
  WaitingOn(const WaitingOn&) = delete;
  WaitingOn& operator=(const WaitingOn&) = delete;

  /// Every wait now registered, oldest first, joined by "; "; empty when none.
  static std::string now() {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    std::string out;
    for (const auto& [id, describe] : r.waits) out += (out.empty() ? "" : "; ") + describe();
    return out;
  }

 private:
  struct Registry {
    std::mutex mutex;
    std::uint64_t next = 0;
    std::map<std::uint64_t, std::function<std::string()>> waits;
  };
  static Registry& registry() {
    static Registry r;
    return r;
  }
  std::uint64_t id_ = 0;
};

}  // namespace tnt::detail

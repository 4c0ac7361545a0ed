// Private: the point-to-point rounds the exchanges (exchange.h) are made
// of. In a round, a rank sends to its partner and receives from it at the
// same time; both are posted before either is waited on, so partners never
// wait for each other. Waits use the engine's policy (poll.h) and have no
// deadline: the payload watchdog ends a payload that hangs.
#pragma once

#include <cstdint>
#include <functional>

#include "comm/mpi/exchange.h"

namespace tnt::comm {

/// One round: sends `send_bytes` from `send` to `partner` and receives
/// `recv_bytes` from it into `recv`.
void exchange_with(const ExchangeContext& ctx, int partner, const char* send, int send_bytes,
                   char* recv, int recv_bytes);

/// One round of a large exchange: sends `send_bytes` from `send` to
/// `partner` and receives `recv_bytes` into `recv`, both in pieces of
/// kMaxExchangedBytes, all posted at once; `arrived(offset, bytes)` runs
/// for each received piece, in order, as soon as it is in (while later
/// pieces are still on the wire: a reduction runs on bytes still in
/// cache). Every completed piece restarts the payload watchdog's clock
/// (`kind` and `elements` name the collective for its messages).
void exchange_pieces(const ExchangeContext& ctx, int partner, const char* send,
                     std::int64_t send_bytes, char* recv, std::int64_t recv_bytes,
                     const std::function<void(std::int64_t, std::int64_t)>& arrived,
                     const char* kind, std::int64_t elements);

}  // namespace tnt::comm

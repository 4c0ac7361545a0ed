// Private: makes the pickle that Python's torch.save(model.state_dict())
// writes readable by LibTorch 1.13's unpickler, which turns every
// collections.OrderedDict into None (it expects them only as a tensor's
// empty backward hooks) and cannot apply the final BUILD that sets the
// state_dict's `_metadata` attribute.
//
// How: walk the opcodes (protocol 2-4, the ones pickle writes) and
//  * replace each construction of an OrderedDict — the class (GLOBAL
//    "collections OrderedDict", possibly memoized with BINPUT, or fetched
//    again with BINGET), then EMPTY_TUPLE, then REDUCE — with EMPTY_DICT;
//  * turn a BUILD right before the final STOP into POP (drops _metadata).
// Anything else is copied unchanged. Returns nullopt if the stream holds an
// opcode this walker does not know (the caller then tries it unchanged).
#pragma once

#include <optional>
#include <string>

namespace tnt::detail {

std::optional<std::string> rewrite_ordered_dicts(const std::string& pickle);

}  // namespace tnt::detail

// Private: a strict reader for the pickle inside a torch.save file (its
// data.pkl). It replaces LibTorch 1.13's unpickler, which trusts its input:
// a crafted file crashed it (REDUCE on an empty stack, an odd SETITEMS, a
// memo index of 2^32), made it allocate without bound, or read a tensor's
// bytes past the end of its storage. It also reads what that unpickler
// cannot: collections.OrderedDict (model.state_dict()), SETITEM, APPEND,
// the final BUILD that sets a state_dict's _metadata, LONG1 of any width.
// (The file keeps its historical name; it used to rewrite such pickles for
// LibTorch's unpickler.)
//
// What it accepts is what torch.save (Python) and torch::pickle_save write:
// pickle protocol 2, plain values (None, bool, int64, float, str), tuples,
// lists and dicts, and tensors rebuilt from storages of the archive through
// the few globals those writers use (torch._utils._rebuild_tensor_v2 and
// _rebuild_parameter, collections.OrderedDict,
// torch.jit._pickle.restore_type_tag, torch.<Type>Storage). Every length is
// checked against the bytes that remain, every tensor against its storage
// and every storage against its record; values nest at most
// kMaxPickleNesting deep (their destruction recurses); a list or dict can no
// longer change once it is inside another value or fetched from the memo,
// so no value contains itself. Memory is proportional to the pickle plus the
// records it names. Tensors are always rebuilt on the CPU.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

#include <ATen/core/ivalue.h>
#include <c10/core/Allocator.h>

namespace tnt::detail {

/// How deep lists, tuples and dicts may nest in a pickle.
constexpr int kMaxPickleNesting = 100;

/// The bytes of the archive's record for a storage key ("data/<key>"); a
/// tnt::Error when there is none.
using PickleStorageReader =
    std::function<std::pair<c10::DataPtr, std::size_t>(const std::string& key)>;

/// The value that `pickle` describes. A tnt::Error that says what is wrong
/// and at which byte, without the file's name (the caller adds it), for
/// anything it cannot prove well formed.
///
/// Example:
///   c10::IValue v = read_pickle(bytes, [&](const std::string& key) {
///     auto [data, size] = reader.getRecord("data/" + key);
///     return std::make_pair(std::move(data), size); });
c10::IValue read_pickle(const std::string& pickle, const PickleStorageReader& storage);

/// The type of a value as messages name it: "an int", "a str", "a Tensor",
/// "a dict", "None".
std::string kind_of(const c10::IValue& value);

}  // namespace tnt::detail

// The strict pickle reader (see pickle_rewrite.h). Two layers:
//  * next_op() (pickle_ops.h) cuts one opcode and its argument out of the
//    stream, every length checked against the bytes that remain.
//  * Machine, here, runs the protocol-2 subset that torch.save writes. Its
//    stack holds Values: plain IValues, and three things that exist only while
//    reading (tuples that may still hold the next two, a global, a storage).
//    Lists and dicts made here are tracked by address with their nesting
//    depth and whether they are sealed (inside another value or fetched
//    from the memo): only an unsealed one may change, so the depth recorded
//    for every value stays true and no value can contain itself.
#include "io/pickle_rewrite.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/ScalarType.h>

#include <tarantella/base/error.h>

#include "io/pickle_ops.h"

namespace tnt::detail {
namespace pickle {
namespace {

// ---- values ----

// The globals torch.save and torch::pickle_save use.
enum class Callable { kOrderedDict, kRebuildTensor, kRebuildParameter, kRestoreTypeTag };

struct TupleNode;

struct Value {
  enum class Kind : std::uint8_t { kPlain, kTuple, kCallable, kStorageType, kStorage };
  Kind kind = Kind::kPlain;
  c10::IValue plain;                 // kPlain; kStorage: a 1-D tensor over the whole storage
  std::shared_ptr<TupleNode> tuple;  // kTuple
  Callable callable{};               // kCallable
  at::ScalarType dtype{};            // kStorageType
  std::string global;                // kCallable, kStorageType: "module.name", for messages
};

struct TupleNode {
  std::vector<Value> items;
  int depth = 1;
  c10::IValue converted;  // the IValue tuple, made once however often it is used
};

struct Container {
  int depth = 1;
  bool sealed = false;
};

// "a tuple", "a storage", "an int", ...
std::string a_kind(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kTuple:
      return "a tuple";
    case Value::Kind::kCallable:
      return "a global";
    case Value::Kind::kStorageType:
      return "a storage type";
    case Value::Kind::kStorage:
      return "a storage";
    case Value::Kind::kPlain:
      break;
  }
  return kind_of(v.plain);
}

std::optional<at::ScalarType> storage_dtype(const std::string& name) {
  static const std::unordered_map<std::string, at::ScalarType> kTypes = {
      {"FloatStorage", at::kFloat},
      {"DoubleStorage", at::kDouble},
      {"HalfStorage", at::kHalf},
      {"BFloat16Storage", at::kBFloat16},
      {"LongStorage", at::kLong},
      {"IntStorage", at::kInt},
      {"ShortStorage", at::kShort},
      {"CharStorage", at::kChar},
      {"ByteStorage", at::kByte},
      {"BoolStorage", at::kBool},
      {"ComplexFloatStorage", at::kComplexFloat},
      {"ComplexDoubleStorage", at::kComplexDouble}};
  const auto it = kTypes.find(name);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

// ---- the machine ----

class Machine {
 public:
  Machine(std::string_view pickle, const PickleStorageReader& storage)
      : s_(pickle), storage_reader_(storage) {}

  c10::IValue run();

 private:
  [[noreturn]] void fail(const std::string& what) const { fail_at(op_.at, op_.name(), what); }

  void step();
  bool push_scalar();
  bool build_container();
  void push_plain(c10::IValue v) {
    Value value;
    value.plain = std::move(v);
    stack_.push_back(std::move(value));
  }
  Value pop();
  std::vector<Value> pop_to_mark();
  Value& top();

  int depth_of(const Value& v) const;
  void check_depth(int depth) const;
  void seal(const Value& v);         // a list or dict that may no longer change
  c10::IValue nest(const Value& v);  // the IValue of v, sealed: it now lives inside another
  c10::IValue key_of(const Value& v);
  Container& open_container(const Value& v, const char* what);
  c10::IValue new_list();
  c10::IValue new_dict();
  void make_tuple(std::vector<Value> items);

  void global();
  void reduce();
  void persistent_id();
  void append(std::vector<Value> items);
  void set_items(std::vector<Value> items);
  c10::IValue rebuild_tensor(const std::vector<Value>& args);
  std::int64_t int_arg(const Value& v, const char* what) const;
  std::vector<std::int64_t> ints_arg(const Value& v, const char* what) const;

  std::string_view s_;
  const PickleStorageReader& storage_reader_;
  Op op_{};
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, Value> memo_;  // indices are keys, not sizes
  std::unordered_map<const void*, Container> containers_;
  std::unordered_map<std::string, at::Tensor> storages_;  // by key: each record is read once
};

c10::IValue Machine::run() {
  if (s_.empty()) throw Error("data.pkl is empty");
  op_ = next_op(s_, 0);
  if (op_.info->code != 0x80) {
    fail("a torch.save pickle starts with PROTO 2; this is not one");
  }
  if (static_cast<unsigned char>(op_.arg[0]) != 2) {
    fail(concat("pickle protocol ", static_cast<int>(static_cast<unsigned char>(op_.arg[0])),
                " is not supported; torch.save writes protocol 2"));
  }
  std::size_t pos = op_.end;
  while (true) {
    if (pos >= s_.size()) {
      throw Error(concat("data.pkl ends at byte ", s_.size(), " without STOP (truncated?)"));
    }
    op_ = next_op(s_, pos);
    pos = op_.end;
    if (op_.info->code == '.') break;
    step();
  }
  if (stack_.size() != 1 || !marks_.empty()) {
    fail(concat("STOP needs exactly one value and no open MARK, but the stack holds ",
                stack_.size(), " values and ", marks_.size(), " MARKs"));
  }
  if (pos != s_.size()) fail(concat(s_.size() - pos, " bytes follow after STOP"));
  const Value result = pop();
  return nest(result);
}

void Machine::step() {
  if (push_scalar() || build_container()) return;
  const std::string_view arg = op_.arg;
  switch (op_.info->code) {
    case '(':
      marks_.push_back(stack_.size());
      break;
    case '0':
      pop();
      break;
    case '1':
      pop_to_mark();
      break;
    case 'q':
    case 'r':
      memo_[little_endian(arg)] = top();
      break;
    case 'h':
    case 'j': {
      const auto it = memo_.find(little_endian(arg));
      if (it == memo_.end()) fail(concat("memo slot ", little_endian(arg), " is empty"));
      seal(it->second);  // now also on the stack: it must not change any more
      stack_.push_back(it->second);
      break;
    }
    case 'c':
      global();
      break;
    case 'R':
      reduce();
      break;
    case 'Q':
      persistent_id();
      break;
    case 'b': {  // BUILD: only the OrderedDict state that sets a state_dict's _metadata
      const Value state = pop();
      const Value& target = top();
      const bool dict_state = state.kind == Value::Kind::kPlain &&
                              (state.plain.isGenericDict() || state.plain.isNone());
      if (target.kind != Value::Kind::kPlain || !target.plain.isGenericDict() || !dict_state) {
        fail(concat("BUILD of ", a_kind(target), " with ", a_kind(state),
                    "; only a dict's attributes (_metadata) can be set, and they are dropped"));
      }
      break;
    }
    default:
      fail("this opcode is not one torch.save writes (pickle protocol 2), so it is refused");
  }
}

// None, bools, ints, floats and strs; false for any other opcode.
bool Machine::push_scalar() {
  const std::string_view arg = op_.arg;
  switch (op_.info->code) {
    case 'N':
      push_plain(c10::IValue());
      return true;
    case 0x88:
    case 0x89:
      push_plain(op_.info->code == 0x88);
      return true;
    case 'K':
    case 'M':
      push_plain(static_cast<std::int64_t>(little_endian(arg)));
      return true;
    case 'J':
      push_plain(static_cast<std::int64_t>(static_cast<std::int32_t>(little_endian(arg))));
      return true;
    case 0x8a: {  // LONG1: little-endian two's complement of any width
      if (arg.size() > 8) fail(concat("an int of ", arg.size(), " bytes does not fit in 64 bits"));
      std::uint64_t v = little_endian(arg);
      if (!arg.empty() && arg.size() < 8 && (static_cast<unsigned char>(arg.back()) & 0x80)) {
        v |= ~std::uint64_t{0} << (8 * arg.size());  // sign-extend
      }
      push_plain(static_cast<std::int64_t>(v));
      return true;
    }
    case 'G': {  // big-endian IEEE double
      std::uint64_t bits = 0;
      for (char c : arg) bits = (bits << 8) | static_cast<unsigned char>(c);
      double d;
      std::memcpy(&d, &bits, sizeof d);
      push_plain(d);
      return true;
    }
    case 'X':
      push_plain(std::string(arg));
      return true;
    default:
      return false;
  }
}

// Tuples, lists and dicts; false for any other opcode.
bool Machine::build_container() {
  switch (op_.info->code) {
    case ')':
      make_tuple({});
      return true;
    case 't':
      make_tuple(pop_to_mark());
      return true;
    case 0x85:
    case 0x86:
    case 0x87: {
      const std::size_t n = op_.info->code - 0x84;
      const std::size_t floor = marks_.empty() ? 0 : marks_.back();
      if (stack_.size() - floor < n) {
        fail(concat("needs ", n, " values, but the stack holds ", stack_.size() - floor));
      }
      std::vector<Value> items(std::make_move_iterator(stack_.end() - n),
                               std::make_move_iterator(stack_.end()));
      stack_.resize(stack_.size() - n);
      make_tuple(std::move(items));
      return true;
    }
    case ']':
    case 'l': {
      auto items = op_.info->code == 'l' ? pop_to_mark() : std::vector<Value>{};
      push_plain(new_list());
      append(std::move(items));
      return true;
    }
    case 'a':
      append({pop()});
      return true;
    case 'e':
      append(pop_to_mark());
      return true;
    case '}':
    case 'd': {
      auto items = op_.info->code == 'd' ? pop_to_mark() : std::vector<Value>{};
      push_plain(new_dict());
      set_items(std::move(items));
      return true;
    }
    case 's': {
      std::vector<Value> items(2);
      items[1] = pop();
      items[0] = pop();
      set_items(std::move(items));
      return true;
    }
    case 'u':
      set_items(pop_to_mark());
      return true;
    default:
      return false;
  }
}

Value Machine::pop() {
  const std::size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() <= floor) {
    const char* where = floor > 0 ? " above the last MARK" : "";
    fail(concat("needs a value, but the stack holds none", where));
  }
  Value v = std::move(stack_.back());
  stack_.pop_back();
  return v;
}

Value& Machine::top() {
  const std::size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() <= floor) fail("needs a value, but the stack holds none");
  return stack_.back();
}

std::vector<Value> Machine::pop_to_mark() {
  if (marks_.empty()) fail("needs a MARK, but there is none");
  const std::size_t mark = marks_.back();
  marks_.pop_back();
  std::vector<Value> items(std::make_move_iterator(stack_.begin() + mark),
                           std::make_move_iterator(stack_.end()));
  stack_.resize(mark);
  return items;
}

int Machine::depth_of(const Value& v) const {
  if (v.kind == Value::Kind::kTuple) return v.tuple->depth;
  if (v.kind != Value::Kind::kPlain || !(v.plain.isList() || v.plain.isGenericDict())) return 0;
  const auto it = containers_.find(v.plain.internalToPointer());
  return it == containers_.end() ? 1 : it->second.depth;
}

void Machine::check_depth(int depth) const {
  if (depth > kMaxPickleNesting) {
    fail(concat("values nested deeper than ", kMaxPickleNesting, " levels are refused"));
  }
}

Container& Machine::open_container(const Value& v, const char* what) {
  const auto it = containers_.find(v.plain.internalToPointer());
  if (it == containers_.end()) fail(concat(a_kind(v), " cannot be ", what));
  return it->second;
}

void Machine::seal(const Value& v) {
  if (v.kind == Value::Kind::kPlain && depth_of(v) > 0) open_container(v, "nested").sealed = true;
}

c10::IValue Machine::nest(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kPlain:
      seal(v);
      return v.plain;
    case Value::Kind::kTuple: {
      TupleNode& node = *v.tuple;
      if (node.converted.isNone()) {
        std::vector<c10::IValue> items;
        items.reserve(node.items.size());
        for (const Value& item : node.items) items.push_back(nest(item));  // depth <= 100
        node.converted = c10::ivalue::Tuple::create(std::move(items));
      }
      return node.converted;
    }
    default:
      fail(concat(a_kind(v), " ('", v.global, "') can only be used to rebuild a tensor"));
  }
}

c10::IValue Machine::key_of(const Value& v) {
  const c10::IValue& k = v.plain;
  if (v.kind != Value::Kind::kPlain || !(k.isString() || k.isInt() || k.isBool() || k.isDouble())) {
    fail(concat("a dict key must be a str or a number, not ", a_kind(v)));
  }
  return k;
}

c10::IValue Machine::new_list() {
  c10::IValue list = c10::impl::GenericList(c10::AnyType::get());
  containers_[list.internalToPointer()] = Container{};  // a reused address starts afresh
  return list;
}

c10::IValue Machine::new_dict() {
  c10::IValue dict = c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get());
  containers_[dict.internalToPointer()] = Container{};
  return dict;
}

void Machine::make_tuple(std::vector<Value> items) {
  auto node = std::make_shared<TupleNode>();
  for (Value& item : items) {
    node->depth = std::max(node->depth, depth_of(item) + 1);
    seal(item);
  }
  check_depth(node->depth);
  node->items = std::move(items);
  Value v;
  v.kind = Value::Kind::kTuple;
  v.tuple = std::move(node);
  stack_.push_back(std::move(v));
}

void Machine::append(std::vector<Value> items) {
  const Value& target = top();
  if (target.kind != Value::Kind::kPlain || !target.plain.isList()) {
    fail(concat("can only append to a list, not to ", a_kind(target)));
  }
  Container& list = open_container(target, "appended to");
  if (list.sealed) fail("appends to a list already in use (nested, or fetched from the memo)");
  auto elements = target.plain.toList();
  for (const Value& item : items) {
    list.depth = std::max(list.depth, depth_of(item) + 1);
    check_depth(list.depth);
    elements.push_back(nest(item));
  }
}

void Machine::set_items(std::vector<Value> items) {
  if (items.size() % 2 != 0) {
    fail(concat("an odd number of values (", items.size(), ") for a dict"));
  }
  const Value& target = top();
  if (target.kind != Value::Kind::kPlain || !target.plain.isGenericDict()) {
    fail(concat("can only set items of a dict, not of ", a_kind(target)));
  }
  Container& dict = open_container(target, "changed");
  if (dict.sealed) fail("sets items of a dict already in use (nested, or fetched from the memo)");
  auto entries = target.plain.toGenericDict();
  for (std::size_t i = 0; i < items.size(); i += 2) {
    dict.depth = std::max(dict.depth, depth_of(items[i + 1]) + 1);
    check_depth(dict.depth);
    entries.insert_or_assign(key_of(items[i]), nest(items[i + 1]));
  }
}

void Machine::global() {
  const std::string_view text = op_.arg;  // "module\nname"
  const std::size_t newline = text.find('\n');
  const std::string module(text.substr(0, newline));
  const std::string name(text.substr(newline + 1));
  Value v;
  v.global = module + "." + name;
  v.kind = Value::Kind::kCallable;
  if (v.global == "collections.OrderedDict") {
    v.callable = Callable::kOrderedDict;
  } else if (v.global == "torch._utils._rebuild_tensor_v2") {
    v.callable = Callable::kRebuildTensor;
  } else if (v.global == "torch._utils._rebuild_parameter") {
    v.callable = Callable::kRebuildParameter;
  } else if (v.global == "torch.jit._pickle.restore_type_tag") {
    v.callable = Callable::kRestoreTypeTag;
  } else if (auto dtype = module == "torch" ? storage_dtype(name) : std::nullopt) {
    v.kind = Value::Kind::kStorageType;
    v.dtype = *dtype;
  } else {
    fail(concat("global '", v.global.substr(0, 100),
                "' is not one torch.save uses for tensors and dicts"));
  }
  stack_.push_back(std::move(v));
}

void Machine::reduce() {
  const Value args = pop();
  const Value callable = pop();
  if (callable.kind != Value::Kind::kCallable) {
    fail(concat("REDUCE calls ", a_kind(callable), "; only a global can be called"));
  }
  if (args.kind != Value::Kind::kTuple) {
    fail(concat("the arguments of '", callable.global, "' are ", a_kind(args), ", not a tuple"));
  }
  const std::vector<Value>& a = args.tuple->items;
  auto is_plain = [&](std::size_t i, bool (c10::IValue::*test)() const) {
    return i < a.size() && a[i].kind == Value::Kind::kPlain && (a[i].plain.*test)();
  };
  switch (callable.callable) {
    case Callable::kOrderedDict:
      if (!a.empty()) fail("collections.OrderedDict takes no arguments here");
      push_plain(new_dict());
      return;
    case Callable::kRebuildTensor:
      push_plain(rebuild_tensor(a));
      return;
    case Callable::kRebuildParameter: {  // (tensor, requires_grad, backward_hooks)
      if (a.size() != 3 || !is_plain(0, &c10::IValue::isTensor) ||
          !is_plain(1, &c10::IValue::isBool) || !is_plain(2, &c10::IValue::isGenericDict)) {
        fail("torch._utils._rebuild_parameter takes (tensor, bool, dict)");
      }
      push_plain(a[0].plain);
      return;
    }
    case Callable::kRestoreTypeTag: {  // (list or dict, "its type"): the value itself
      const bool container =
          is_plain(0, &c10::IValue::isList) || is_plain(0, &c10::IValue::isGenericDict);
      if (a.size() != 2 || !container || !is_plain(1, &c10::IValue::isString)) {
        fail("torch.jit._pickle.restore_type_tag takes (list or dict, str)");
      }
      stack_.push_back(a[0]);
      return;
    }
  }
}

void Machine::persistent_id() {
  // ('storage', torch.<Type>Storage, key, location, numel)
  const Value pid = pop();
  const std::vector<Value>* a = pid.kind == Value::Kind::kTuple ? &pid.tuple->items : nullptr;
  auto plain = [&](std::size_t i, bool (c10::IValue::*test)() const) {
    return (*a)[i].kind == Value::Kind::kPlain && ((*a)[i].plain.*test)();
  };
  if (a == nullptr || a->size() != 5 || !plain(0, &c10::IValue::isString) ||
      (*a)[0].plain.toStringRef() != "storage" || (*a)[1].kind != Value::Kind::kStorageType ||
      !plain(2, &c10::IValue::isString) || !plain(3, &c10::IValue::isString) ||
      !plain(4, &c10::IValue::isInt)) {
    fail("a persistent id must be ('storage', torch.<Type>Storage, key, location, numel)");
  }
  const at::ScalarType dtype = (*a)[1].dtype;
  const std::string& key = (*a)[2].plain.toStringRef();
  const std::int64_t numel = (*a)[4].plain.toInt();
  if (numel < 0) fail(concat("storage 'data/", key, "' has a negative size ", numel));
  at::Tensor& storage = storages_[key];
  if (!storage.defined()) {
    const std::size_t item = c10::elementSize(dtype);
    c10::DataPtr data;
    std::size_t bytes = 0;
    if (numel > 0) std::tie(data, bytes) = storage_reader_(key);
    if (static_cast<std::uint64_t>(numel) > bytes / item) {
      storages_.erase(key);
      fail(concat("storage 'data/", key, "' declares ", numel, " ", c10::toString(dtype),
                  " elements, but its record holds only ", bytes, " bytes"));
    }
    at::Storage s(c10::Storage::use_byte_size_t(), numel * item, std::move(data), nullptr, false);
    storage = at::empty({0}, at::TensorOptions().dtype(dtype)).set_(std::move(s));
  } else if (storage.scalar_type() != dtype) {
    fail(concat("storage 'data/", key, "' is used as ", c10::toString(storage.scalar_type()),
                " and as ", c10::toString(dtype)));
  }
  Value v;
  v.kind = Value::Kind::kStorage;
  v.plain = storage;
  v.global = "data/" + key;
  stack_.push_back(std::move(v));
}

std::int64_t Machine::int_arg(const Value& v, const char* what) const {
  if (v.kind != Value::Kind::kPlain || !v.plain.isInt()) {
    fail(concat("the ", what, " of a tensor is ", a_kind(v), ", not an int"));
  }
  return v.plain.toInt();
}

std::vector<std::int64_t> Machine::ints_arg(const Value& v, const char* what) const {
  if (v.kind != Value::Kind::kTuple) {
    fail(concat("the ", what, " of a tensor is ", a_kind(v), ", not a tuple"));
  }
  std::vector<std::int64_t> out;
  for (const Value& item : v.tuple->items) out.push_back(int_arg(item, what));
  return out;
}

// torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
// backward_hooks[, metadata]), with the view checked to lie inside the storage.
c10::IValue Machine::rebuild_tensor(const std::vector<Value>& a) {
  if ((a.size() != 6 && a.size() != 7) || a[0].kind != Value::Kind::kStorage) {
    fail(
        "torch._utils._rebuild_tensor_v2 takes (storage, offset, size, stride, "
        "requires_grad, backward_hooks[, metadata])");
  }
  const at::Tensor& storage = a[0].plain.toTensor();
  const std::int64_t offset = int_arg(a[1], "storage offset");
  const std::vector<std::int64_t> sizes = ints_arg(a[2], "size");
  const std::vector<std::int64_t> strides = ints_arg(a[3], "stride");
  const bool flags_ok = a[4].kind == Value::Kind::kPlain && a[4].plain.isBool() &&
                        a[5].kind == Value::Kind::kPlain && a[5].plain.isGenericDict();
  if (!flags_ok) fail("a tensor's requires_grad must be a bool and its hooks a dict");
  if (sizes.size() != strides.size() || sizes.size() > 64) {
    fail(concat("a tensor with ", sizes.size(), " sizes and ", strides.size(), " strides"));
  }
  // Every element offset + sum(i_k * stride_k) must index the storage.
  if (offset < 0) fail(concat("a tensor with a negative storage offset ", offset));
  std::int64_t numel = 1, last = offset;
  bool overflow = false;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] < 0 || strides[k] < 0) {
      fail(concat("a tensor with a negative size or stride (", sizes[k], ", ", strides[k], ")"));
    }
    std::int64_t span = 0;
    overflow |= __builtin_mul_overflow(numel, sizes[k], &numel);
    if (sizes[k] > 0) overflow |= __builtin_mul_overflow(sizes[k] - 1, strides[k], &span);
    overflow |= __builtin_add_overflow(last, span, &last);
  }
  if (overflow) fail("a tensor whose number of elements or extent overflows 64 bits");
  const std::int64_t available = storage.numel();
  if ((numel > 0 && last >= available) || offset > available) {
    fail(concat("a tensor of shape ", c10::IntArrayRef(sizes), " lies outside its storage '",
                a[0].global, "' of ", available, " elements"));
  }
  at::Tensor t = at::empty({0}, storage.options()).set_(storage.storage(), offset, sizes, strides);
  if (a[4].plain.toBool()) {
    if (!at::isFloatingType(t.scalar_type()) && !at::isComplexType(t.scalar_type())) {
      fail(concat("a ", c10::toString(t.scalar_type()), " tensor cannot require gradients"));
    }
    t.set_requires_grad(true);
  }
  return t;
}

}  // namespace
}  // namespace pickle

c10::IValue read_pickle(const std::string& pickle, const PickleStorageReader& storage) {
  return pickle::Machine(pickle, storage).run();
}

std::string kind_of(const c10::IValue& v) {
  if (v.isNone()) return "None";
  if (v.isBool()) return "a bool";
  if (v.isInt()) return "an int";
  if (v.isDouble()) return "a float";
  if (v.isString()) return "a str";
  if (v.isTensor()) return "a Tensor";
  if (v.isList()) return "a list";
  if (v.isTuple()) return "a tuple";
  if (v.isGenericDict()) return "a dict";
  return std::string("a ") + v.tagKind();
}

}  // namespace tnt::detail

#include "io/pickle_rewrite.h"

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

namespace tnt::detail {
namespace {

struct Op {
  char code;
  std::size_t begin;  // offset of the opcode byte
  std::size_t end;    // one past its argument
  std::string text;   // GLOBAL: "module\nname"
  std::uint64_t memo = 0;  // BINPUT/BINGET index
};

std::uint64_t little_endian(const std::string& s, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

// Splits the stream into opcodes; false on an unknown opcode or truncation.
bool split(const std::string& s, std::vector<Op>& ops) {
  std::size_t pos = 0;
  auto line_end = [&](std::size_t from) { return s.find('\n', from); };
  while (pos < s.size()) {
    Op op{s[pos], pos, 0, {}, 0};
    std::size_t p = pos + 1;
    auto fixed = [&](std::size_t n) { p += n; };
    auto counted = [&](int len_bytes) {
      if (p + len_bytes > s.size()) return false;
      const auto n = little_endian(s, p, len_bytes);
      p += len_bytes + n;
      return true;
    };
    switch (static_cast<unsigned char>(op.code)) {
      // no argument
      case '(': case '.': case '0': case '1': case '2': case 'N': case 'R': case 'a':
      case 'b': case 'd': case '}': case 'e': case 'l': case ']': case 'o': case 's':
      case 't': case ')': case 'u': case 'Q': case 0x81: case 0x85: case 0x86: case 0x87:
      case 0x88: case 0x89: case 0x8f: case 0x90: case 0x91: case 0x92: case 0x93: case 0x94:
        break;
      case 'K': case 'h': case 'q': case 0x80: fixed(1); break;
      case 'M': fixed(2); break;
      case 'J': case 'j': case 'r': fixed(4); break;
      case 'G': case 0x95: fixed(8); break;
      case 'U': case 'C': case 0x8c: case 0x8a: if (!counted(1)) return false; break;
      case 'X': case 'T': case 'B': case 0x8b: if (!counted(4)) return false; break;
      case 0x8d: case 0x8e: if (!counted(8)) return false; break;
      case 'c': {  // GLOBAL: two newline-terminated lines
        const auto a = line_end(p);
        if (a == std::string::npos) return false;
        const auto b = line_end(a + 1);
        if (b == std::string::npos) return false;
        op.text = s.substr(p, b - p);
        p = b + 1;
        break;
      }
      case 'I': case 'L': case 'S': case 'V': case 'F': case 'p': case 'g': case 'P': {
        const auto a = line_end(p);
        if (a == std::string::npos) return false;
        p = a + 1;
        break;
      }
      default:
        return false;
    }
    if (p > s.size()) return false;
    if (op.code == 'h' || op.code == 'q') op.memo = little_endian(s, pos + 1, 1);
    if (op.code == 'j' || op.code == 'r') op.memo = little_endian(s, pos + 1, 4);
    op.end = p;
    ops.push_back(op);
    pos = p;
  }
  return true;
}

bool is_put(char c) { return c == 'q' || c == 'r'; }
bool is_get(char c) { return c == 'h' || c == 'j'; }

// Stack depth (items and MARK markers) before each opcode; false if the
// stream pops below empty or closes an unopened mark (not a valid pickle).
bool depths(const std::vector<Op>& ops, std::vector<long>& before) {
  long depth = 0;
  std::vector<long> marks;
  auto to_mark = [&]() -> long {
    if (marks.empty()) return -1;
    const long m = marks.back();
    marks.pop_back();
    return m;
  };
  for (const Op& op : ops) {
    before.push_back(depth);
    switch (static_cast<unsigned char>(op.code)) {
      case '(': marks.push_back(depth); ++depth; break;
      case '.': case 'q': case 'r': case 'p': case 0x94: case 0x80: case 0x95:
      case 0x85: case 'Q': break;
      case '0': case 'R': case 'b': case 'a': case 0x81: case 0x86: case 0x93: --depth; break;
      case 's': case 0x87: case 0x92: depth -= 2; break;
      case '1': case 'e': case 'u': case 0x90: {
        const long m = to_mark();
        if (m < 0) return false;
        depth = m;
        break;
      }
      case 't': case 'l': case 'd': case 'o': case 0x91: {
        const long m = to_mark();
        if (m < 0) return false;
        depth = m + 1;
        break;
      }
      default: ++depth; break;  // everything else pushes one value
    }
    if (depth < 0) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> rewrite_ordered_dicts(const std::string& pickle) {
  std::vector<Op> ops;
  std::vector<long> before;
  if (!split(pickle, ops) || !depths(ops, before)) return std::nullopt;
  // SETITEM (dict key value -> dict) is unknown to LibTorch's unpickler:
  // put a MARK where its key expression starts (the last point where the
  // stack held only up to the dict) and write SETITEMS instead.
  std::vector<int> marks_before(ops.size(), 0);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].code != 's') continue;
    std::size_t j = i;
    while (j > 0 && before[j - 1] != before[i] - 2) --j;
    if (j == 0) return std::nullopt;
    ++marks_before[j - 1];
  }
  // A BUILD right before STOP sets the state_dict's _metadata: leave out the
  // state's whole expression (from where the stack last held only the
  // object) and the BUILD. LibTorch knows neither BUILD on a dict nor POP.
  std::size_t drop_from = ops.size(), drop_to = ops.size();
  const std::size_t n = ops.size();
  if (n >= 2 && ops[n - 2].code == 'b' && ops[n - 1].code == '.') {
    std::size_t k = n - 2;
    while (k > 0 && before[k - 1] != before[n - 2] - 1) --k;
    if (k == 0) return std::nullopt;
    drop_from = k - 1;
    drop_to = n - 2;
  }
  std::set<std::uint64_t> class_memo;  // memo slots holding the OrderedDict class
  std::string out;
  out.reserve(pickle.size() + 16);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (i >= drop_from && i <= drop_to) continue;
    out.append(static_cast<std::size_t>(marks_before[i]), '(');
    const Op& op = ops[i];
    const bool is_class = (op.code == 'c' && op.text == "collections\nOrderedDict") ||
                          (is_get(op.code) && class_memo.count(op.memo) > 0);
    if (is_class) {
      std::size_t j = i + 1;
      if (op.code == 'c' && j < ops.size() && is_put(ops[j].code)) class_memo.insert(ops[j++].memo);
      if (j + 1 < ops.size() && ops[j].code == ')' && ops[j + 1].code == 'R') {
        out += '}';  // EMPTY_DICT
        for (std::size_t k = i + 1; k <= j + 1; ++k) {
          out.append(static_cast<std::size_t>(marks_before[k]), '(');
        }
        i = j + 1;
        continue;
      }
      // Not the empty-construction pattern: keep the original bytes.
    }
    if (op.code == 's') {
      out += 'u';  // SETITEMS, to the MARK inserted before the key
      continue;
    }
    out.append(pickle, op.begin, op.end - op.begin);
  }
  return out;
}

}  // namespace tnt::detail

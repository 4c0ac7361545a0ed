// Private: the opcode layer of the strict pickle reader (pickle_rewrite.h).
// next_op() cuts one opcode and its argument out of a pickle. It knows every
// opcode of protocols 0-5, so that a length-prefixed argument (BINUNICODE8,
// BINBYTES8, LONG4, ...) or a newline-terminated one is checked against the
// bytes that remain before anything is read or allocated, even for opcodes
// the reader then refuses. A length is compared with what remains, never
// added to an offset first: 2^64-9 + 9 would wrap to 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <tarantella/base/error.h>

namespace tnt::detail::pickle {

struct OpInfo {
  unsigned char code;
  const char* name;
  int fixed;   // bytes of a fixed-size argument
  int length;  // bytes of the little-endian length before a counted argument
  int lines;   // newline-terminated argument lines
};

// clang-format off
inline constexpr OpInfo kOps[] = {
    {'(', "MARK", 0, 0, 0},        {'.', "STOP", 0, 0, 0},         {'0', "POP", 0, 0, 0},
    {'1', "POP_MARK", 0, 0, 0},    {'2', "DUP", 0, 0, 0},          {'F', "FLOAT", 0, 0, 1},
    {'I', "INT", 0, 0, 1},         {'J', "BININT", 4, 0, 0},       {'K', "BININT1", 1, 0, 0},
    {'L', "LONG", 0, 0, 1},        {'M', "BININT2", 2, 0, 0},      {'N', "NONE", 0, 0, 0},
    {'P', "PERSID", 0, 0, 1},      {'Q', "BINPERSID", 0, 0, 0},    {'R', "REDUCE", 0, 0, 0},
    {'S', "STRING", 0, 0, 1},      {'T', "BINSTRING", 0, 4, 0},    {'U', "SHORT_BINSTRING", 0, 1, 0},
    {'V', "UNICODE", 0, 0, 1},     {'X', "BINUNICODE", 0, 4, 0},   {'a', "APPEND", 0, 0, 0},
    {'b', "BUILD", 0, 0, 0},       {'c', "GLOBAL", 0, 0, 2},       {'d', "DICT", 0, 0, 0},
    {'}', "EMPTY_DICT", 0, 0, 0},  {'e', "APPENDS", 0, 0, 0},      {'g', "GET", 0, 0, 1},
    {'h', "BINGET", 1, 0, 0},      {'i', "INST", 0, 0, 2},         {'j', "LONG_BINGET", 4, 0, 0},
    {'l', "LIST", 0, 0, 0},        {']', "EMPTY_LIST", 0, 0, 0},   {'o', "OBJ", 0, 0, 0},
    {'p', "PUT", 0, 0, 1},         {'q', "BINPUT", 1, 0, 0},       {'r', "LONG_BINPUT", 4, 0, 0},
    {'s', "SETITEM", 0, 0, 0},     {'t', "TUPLE", 0, 0, 0},        {')', "EMPTY_TUPLE", 0, 0, 0},
    {'u', "SETITEMS", 0, 0, 0},    {'G', "BINFLOAT", 8, 0, 0},     {'B', "BINBYTES", 0, 4, 0},
    {'C', "SHORT_BINBYTES", 0, 1, 0},
    {0x80, "PROTO", 1, 0, 0},      {0x81, "NEWOBJ", 0, 0, 0},      {0x82, "EXT1", 1, 0, 0},
    {0x83, "EXT2", 2, 0, 0},       {0x84, "EXT4", 4, 0, 0},        {0x85, "TUPLE1", 0, 0, 0},
    {0x86, "TUPLE2", 0, 0, 0},     {0x87, "TUPLE3", 0, 0, 0},      {0x88, "NEWTRUE", 0, 0, 0},
    {0x89, "NEWFALSE", 0, 0, 0},   {0x8a, "LONG1", 0, 1, 0},       {0x8b, "LONG4", 0, 4, 0},
    {0x8c, "SHORT_BINUNICODE", 0, 1, 0}, {0x8d, "BINUNICODE8", 0, 8, 0},
    {0x8e, "BINBYTES8", 0, 8, 0},  {0x8f, "EMPTY_SET", 0, 0, 0},   {0x90, "ADDITEMS", 0, 0, 0},
    {0x91, "FROZENSET", 0, 0, 0},  {0x92, "NEWOBJ_EX", 0, 0, 0},   {0x93, "STACK_GLOBAL", 0, 0, 0},
    {0x94, "MEMOIZE", 0, 0, 0},    {0x95, "FRAME", 8, 0, 0},       {0x96, "BYTEARRAY8", 0, 8, 0},
    {0x97, "NEXT_BUFFER", 0, 0, 0}, {0x98, "READONLY_BUFFER", 0, 0, 0},
};
// clang-format on

inline const OpInfo* op_info(unsigned char code) {
  for (const OpInfo& info : kOps) {
    if (info.code == code) return &info;
  }
  return nullptr;
}

struct Op {
  const OpInfo* info;
  std::size_t at;        // offset of the opcode byte
  std::string_view arg;  // the argument's bytes (without length or newlines)
  std::size_t end;       // one past the argument

  const char* name() const { return info->name; }
};

inline std::uint64_t little_endian(std::string_view s) {
  std::uint64_t v = 0;
  for (std::size_t i = s.size(); i > 0; --i) v = (v << 8) | static_cast<unsigned char>(s[i - 1]);
  return v;
}

[[noreturn]] inline void fail_at(std::size_t at, const char* name, const std::string& what) {
  throw Error(concat("data.pkl byte ", at, " (", name, "): ", what));
}

// The opcode at `pos` with its argument; a length or line that runs past the
// end is an error before anything is read.
inline Op next_op(std::string_view s, std::size_t pos) {
  const auto code = static_cast<unsigned char>(s[pos]);
  const OpInfo* info = op_info(code);
  if (info == nullptr) {
    throw Error(concat("data.pkl byte ", pos, ": 0x", std::hex, static_cast<int>(code),
                       " is not a pickle opcode"));
  }
  std::size_t p = pos + 1;
  auto remaining = [&] { return s.size() - p; };  // p <= s.size() throughout
  if (info->fixed > 0) {
    if (remaining() < static_cast<std::size_t>(info->fixed)) {
      fail_at(pos, info->name,
              concat("needs ", info->fixed, " bytes of argument, but only ", remaining(),
                     " remain (truncated?)"));
    }
    p += info->fixed;
    return Op{info, pos, s.substr(pos + 1, info->fixed), p};
  }
  if (info->length > 0) {
    if (remaining() < static_cast<std::size_t>(info->length)) {
      fail_at(pos, info->name,
              concat("needs a ", info->length, "-byte length, but only ", remaining(),
                     " bytes remain (truncated?)"));
    }
    const std::uint64_t n = little_endian(s.substr(p, info->length));
    p += info->length;
    if (n > remaining()) {
      fail_at(pos, info->name,
              concat("declares ", n, " bytes, but only ", remaining(),
                     " remain (a crafted or truncated file)"));
    }
    return Op{info, pos, s.substr(p, n), p + n};
  }
  const std::size_t begin = p;
  for (int line = 0; line < info->lines; ++line) {
    const std::size_t newline = s.find('\n', p);
    if (newline == std::string_view::npos) {
      fail_at(pos, info->name, "its argument has no terminating newline (truncated?)");
    }
    p = newline + 1;
  }
  return Op{info, pos, s.substr(begin, info->lines > 0 ? p - 1 - begin : 0), p};
}

}  // namespace tnt::detail::pickle

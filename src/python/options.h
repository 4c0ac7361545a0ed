// Options structs across the Python boundary, generated from their field
// lists. Every options struct the Python package configures (optimizers,
// losses, callbacks) has a `fields(options, visit)` function beside it that
// names each TNT_ARG field once (the same list its JSON config is written and
// read through). From that list this file makes:
//  * with_kwargs: the struct from Python keyword arguments. A keyword that
//    is not given leaves the field as the struct's member initialiser set
//    it, so a default exists only there, in C++. An unknown keyword or a
//    value of the wrong type is a TypeError naming it; a value the C++ side
//    refuses stays tnt::ArgumentError (ValueError).
//  * defaults_of: the struct's defaults as a dict, for tnt's
//    option_defaults(name), so that Python (signatures that say "the C++
//    default", docs, tests) reads them instead of restating them;
//  * bind_options_class: the struct itself as a Python class (CompileOptions,
//    FitOptions, ...), an attribute per field and a keyword constructor, so
//    that Python builds the typed struct and hands it over whole.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <tarantella/base/argument_error.h>
#include <tarantella/callbacks/builtins.h>
#include <tarantella/train/options.h>

#include "python/bindings.h"

namespace tnt::python {

namespace options_detail {

inline std::string type_of(const py::handle& value) {
  return py::str(py::type::handle_of(value).attr("__name__"));
}

[[noreturn]] inline void wrong_type(const std::string& where, const char* key, const char* must,
                                    const py::handle& value) {
  throw py::type_error(detail::concat(where, ": ", key, " must be ", must, ", got ",
                                      std::string(py::repr(value)), " (a ", type_of(value), ")"));
}

inline bool is_integer(const py::handle& v) {
  return !PyBool_Check(v.ptr()) && PyIndex_Check(v.ptr()) && !PyFloat_Check(v.ptr());
}

inline bool is_number(const py::handle& v) {
  if (PyBool_Check(v.ptr())) return false;
  return PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr()) ||
         py::isinstance(v, py::module_::import("numbers").attr("Real"));
}

}  // namespace options_detail

// One field from a Python value; each overload checks the type first.
inline void from_python(const std::string& where, const char* key, const py::handle& v,
                        bool& into) {
  if (!PyBool_Check(v.ptr())) options_detail::wrong_type(where, key, "True or False", v);
  into = v.cast<bool>();
}

template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                           !std::is_same_v<T, char>,
                                       int> = 0>
void from_python(const std::string& where, const char* key, const py::handle& v, T& into) {
  if (!options_detail::is_integer(v)) options_detail::wrong_type(where, key, "an int", v);
  const auto value = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
  try {
    into = value.cast<T>();
  } catch (const py::cast_error&) {  // negative for a size, or too large
    throw ArgumentError(detail::concat(
        where, ": ", key, "=", std::string(py::repr(value)), " is out of range: give ",
        std::is_unsigned_v<T> ? std::string("0 or more")
                              : detail::concat("a value in [", std::numeric_limits<T>::min(), ", ",
                                               std::numeric_limits<T>::max(), "]")));
  }
}

inline void from_python(const std::string& where, const char* key, const py::handle& v,
                        double& into) {
  if (!options_detail::is_number(v)) options_detail::wrong_type(where, key, "a number", v);
  into = py::float_(py::reinterpret_borrow<py::object>(v)).cast<double>();
}

inline void from_python(const std::string& where, const char* key, const py::handle& v,
                        std::string& into) {
  if (!py::isinstance<py::str>(v)) options_detail::wrong_type(where, key, "a str", v);
  into = v.cast<std::string>();
}

inline void from_python(const std::string& where, const char* key, const py::handle& v,
                        char& into) {
  if (!py::isinstance<py::str>(v) || py::len(v) != 1) {
    options_detail::wrong_type(where, key, "a str of one character", v);
  }
  const std::string s = v.cast<std::string>();
  TNT_CHECK_ARG(s.size() == 1, where, ": ", key, "='", s,
                "' is not one byte: use an ASCII character such as ',' or ';'");
  into = s[0];
}

inline void from_python(const std::string& where, const char* key, const py::handle& v,
                        std::map<std::string, std::string>& into) {
  if (!py::isinstance<py::dict>(v)) options_detail::wrong_type(where, key, "a dict of str", v);
  std::map<std::string, std::string> out;
  for (const auto& [k, value] : py::reinterpret_borrow<py::dict>(v)) {
    if (!py::isinstance<py::str>(k) || !py::isinstance<py::str>(value)) {
      options_detail::wrong_type(where, key, "a dict of str to str", v);
    }
    out[k.cast<std::string>()] = value.cast<std::string>();
  }
  into = std::move(out);
}

inline void from_python(const std::string& where, const char* key, const py::handle& v,
                        callbacks::Mode& into) {
  if (!py::isinstance<py::str>(v)) options_detail::wrong_type(where, key, "a str", v);
  const std::string mode = v.cast<std::string>();
  TNT_CHECK_ARG(mode == "auto" || mode == "min" || mode == "max", where, ": ", key, "='", mode,
                "' is not known: use 'auto', 'min' or 'max'");
  into = mode == "min"   ? callbacks::Mode::Min
         : mode == "max" ? callbacks::Mode::Max
                         : callbacks::Mode::Auto;
}

// A name parsed by `parse` (mixed_precision_from_name, ...), whose
// tnt::ArgumentError gets `where` in front.
template <typename T, typename Parse>
void named_from_python(const std::string& where, const char* key, const py::handle& v, T& into,
                       Parse parse) {
  std::string name;
  from_python(where, key, v, name);
  try {
    into = parse(name);
  } catch (const ArgumentError& e) {
    throw ArgumentError(detail::concat(where, ": ", e.what()));
  }
}

inline void from_python(const std::string& where, const char* key, const py::handle& v,
                        MixedPrecision& into) {
  named_from_python(where, key, v, into, mixed_precision_from_name);
}

inline void from_python(const std::string& where, const char* key, const py::handle& v,
                        dp::Compression& into) {
  named_from_python(where, key, v, into, compression_from_name);
}

template <typename T>
void from_python(const std::string& where, const char* key, const py::handle& v,
                 std::optional<T>& into) {
  if (v.is_none()) {
    into.reset();
    return;
  }
  T value{};
  from_python(where, key, v, value);
  into = std::move(value);
}

// One field as a Python value (for defaults_of).
template <typename T>
py::object to_python(const T& value) {
  return py::cast(value);
}
inline py::object to_python(char value) { return py::str(std::string(1, value)); }
inline py::object to_python(callbacks::Mode mode) {
  return py::str(mode == callbacks::Mode::Min   ? "min"
                 : mode == callbacks::Mode::Max ? "max"
                                                : "auto");
}
inline py::object to_python(MixedPrecision precision) {
  return py::str(mixed_precision_name(precision));
}
inline py::object to_python(dp::Compression compression) {
  return py::str(compression_name(compression));
}
template <typename T>
py::object to_python(const std::optional<T>& value) {
  return value ? to_python(*value) : py::object(py::none());
}

/// The keys of `Options`' field list, in its order.
template <typename Options>
std::vector<std::string> keys_of(Options options) {
  std::vector<std::string> keys;
  fields(options, [&](const char* key, auto&) { keys.emplace_back(key); });
  return keys;
}

/// `start` with each field that `kwargs` names set from it; `where`
/// ("EarlyStopping()", "compile()") names the call in errors.
template <typename Options>
Options with_kwargs(const std::string& where, Options start, const py::dict& kwargs) {
  const std::vector<std::string> keys = keys_of(start);
  for (const auto& item : kwargs) {
    const std::string key = item.first.cast<std::string>();
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    std::string known;
    for (const std::string& k : keys) known += (known.empty() ? "" : ", ") + k;
    throw py::type_error(detail::concat(where, " got an unexpected keyword argument '", key,
                                        "': use one of ", known.empty() ? "none" : known));
  }
  fields(start, [&](const char* key, auto& value) {
    if (kwargs.contains(key)) from_python(where, key, kwargs[key], value);
  });
  return start;
}

/// `options`' fields as {key: value}: the C++ defaults when `options` is
/// freshly constructed.
template <typename Options>
py::dict defaults_of(Options options) {
  py::dict out;
  fields(options, [&](const char* key, const auto& value) { out[key] = to_python(value); });
  return out;
}

/// Gives `use` the field of `options` named `key` (one of keys_of's).
template <typename Options, typename Use>
void with_field(Options& options, const std::string& key, Use use) {
  fields(options, [&](const char* k, auto& value) {
    if (key == k) use(value);
  });
}

/// `Options` as the Python class `name`: a read-write attribute per field of
/// its list, type-checked as with_kwargs checks a keyword, a keyword
/// constructor (`FitOptions(epochs=5)`; a keyword left out keeps the
/// struct's default), __repr__ and to_dict(). A field added to the list
/// needs nothing here.
template <typename Options>
py::class_<Options> bind_options_class(py::module_& m, const char* name) {
  py::class_<Options> cls(m, name);
  const std::string where = name;
  cls.def(py::init([where](const py::kwargs& kwargs) {
    return with_kwargs(where + "()", Options(), kwargs);
  }));
  for (const std::string& key : keys_of(Options())) {
    cls.def_property(
        key.c_str(),
        [key](const Options& o) {
          Options copy = o;
          py::object out;
          with_field(copy, key, [&](const auto& value) { out = to_python(value); });
          return out;
        },
        [key, where](Options& o, const py::handle& value) {
          with_field(o, key, [&](auto& field) { from_python(where, key.c_str(), value, field); });
        });
  }
  cls.def("to_dict", [](const Options& o) { return defaults_of(o); });
  cls.def("__repr__", [where](const Options& o) {
    std::string out;
    for (const auto& [key, value] : defaults_of(o)) {
      out += detail::concat(out.empty() ? "" : ", ", std::string(py::str(key)), "=",
                            std::string(py::repr(value)));
    }
    return where + "(" + out + ")";
  });
  return cls;
}

/// Registers the defaults of the options that the Python name `name` (a
/// class or function of the package: "Adam", "EarlyStopping") takes, for
/// option_defaults(name).
void register_defaults(const std::string& name, std::function<py::dict()> defaults);

/// Registers defaults_of(make()) under `name`.
template <typename Options>
void register_defaults_of(const std::string& name, Options options) {
  register_defaults(name, [options] { return defaults_of(options); });
}

/// option_defaults(name) itself; bound by bind_options_defaults.
py::dict option_defaults(const std::string& name);

}  // namespace tnt::python

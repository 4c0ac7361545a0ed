// Private: the one registry style of the Keras collection. Every kind
// (optimizers, losses, metrics, schedules, layers) keeps a Registry of
// readers, class name -> "build the object from its config", in the .cpp
// file whose factories write those configs, so that the code that writes a
// {"class_name": ..., "config": {...}} description and the code that reads
// it back sit side by side. A reader takes every default from the factory
// it calls (an options struct's member initialisers, a default argument),
// never from a copy of its own: an absent field is simply not passed on.
#pragma once

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>

#include <cctype>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tnt::keras {

/// Reads field `key` of `config`; `where` ("optimizer SGD", "layer Dense")
/// names the object in the error raised when it is missing or ill-typed.
template <typename T>
T field(const std::string& where, const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  TNT_CHECK(it != config.end(), "the config of ", where, " has no \"", key, "\": ", config.dump(),
            " (add it, as get_config writes it)");
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(detail::concat("the config of ", where, ": field \"", key,
                               "\" has the wrong type (", it->dump(), "): ", e.what()));
  }
}

/// Overwrites `into` with field `key` when the config has it, so that an
/// options struct keeps its own default otherwise.
template <typename T>
void read_field(const std::string& where, const nlohmann::json& config, const char* key, T& into) {
  if (config.contains(key)) into = field<T>(where, config, key);
}

/// An options struct's fields as a config object. `fields(options, visit)`,
/// found by argument-dependent lookup in the struct's namespace, lists each
/// field once as visit("key", value): the one list that both writing
/// (fields_to_config) and reading (options_from) go through.
template <typename Options>
nlohmann::json fields_to_config(Options options) {
  nlohmann::json config = nlohmann::json::object();
  fields(options, [&](const char* key, const auto& value) { config[key] = value; });
  return config;
}

/// `start` with every field the config has; the rest keep their values
/// (the struct's defaults, or the required fields it was built with).
template <typename Options>
Options options_from(const std::string& where, const nlohmann::json& config, Options start) {
  fields(start, [&](const char* key, auto& value) { read_field(where, config, key, value); });
  return start;
}

/// make(value of `key`) when the config has the field, else make(): the
/// default stays the factory's own default argument.
/// Example: with_or_without<double>("metric BinaryAccuracy", c, "threshold",
///                                  [](auto... t) { return BinaryAccuracy(t...); })
template <typename T, typename Make>
auto with_or_without(const std::string& where, const nlohmann::json& config, const char* key,
                     Make make) {
  return config.contains(key) ? make(field<T>(where, config, key)) : make();
}

/// The fix for an unknown class name of a compile part: `a_kind` is e.g.
/// "an optimizer" or "a loss".
inline std::string compile_part_fix(const std::string& a_kind) {
  return "use one of those names; a description from a newer version, or " + a_kind +
         " of your own, cannot be rebuilt: compile the model yourself";
}

/// Class name -> reader, for one kind of object, and the names get() takes.
/// Thread-safe: users may add readers (tnt::layers::register_layer) while
/// models load.
template <typename T>
class Registry {
 public:
  using Reader = std::function<T(const nlohmann::json& config)>;

  /// `kind` names the objects in errors ("optimizer", "layer"); `fix` says
  /// what to do about an unknown class name. `aliases` are the other names
  /// get() takes (Keras's short names: "mse", "adam"), each with the
  /// description it stands for; a field its config leaves out keeps the
  /// factory's default.
  Registry(std::string kind, std::string fix, std::map<std::string, Reader> readers,
           std::map<std::string, nlohmann::json> aliases = {})
      : kind_(std::move(kind)),
        fix_(std::move(fix)),
        readers_(std::move(readers)),
        aliases_(std::move(aliases)) {}

  /// Adds (or replaces) the reader of `class_name`.
  void add(const std::string& class_name, Reader reader) {
    TNT_CHECK(!class_name.empty(), "a ", kind_, " class needs a name to be registered");
    TNT_CHECK(static_cast<bool>(reader), "registering ", kind_, " class \"", class_name,
              "\" needs a factory");
    std::lock_guard<std::mutex> lock(mutex_);
    readers_[class_name] = std::move(reader);
  }

  /// The registered class names, sorted.
  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> names;
    for (const auto& entry : readers_) names.push_back(entry.first);
    return names;
  }

  /// The object `name` stands for, as Keras's get(): an alias (also in
  /// other case), or a class name with every default. An unknown name is an ArgumentError (the
  /// caller named it) that lists the known names.
  T get(const std::string& name) const {
    nlohmann::json description;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto alias = aliases_.find(name);
      if (alias == aliases_.end()) alias = aliases_.find(lowercase(name));  // "SGD": "sgd"
      if (alias != aliases_.end()) {
        description = alias->second;
      } else if (readers_.count(name) != 0) {
        description = {{"class_name", name}};
      } else {
        std::string known;
        for (const auto& entry : aliases_) known += (known.empty() ? "" : ", ") + entry.first;
        for (const auto& entry : readers_) known += (known.empty() ? "" : ", ") + entry.first;
        throw ArgumentError(
            detail::concat(kind_, "='", name, "' is not known: use one of ", known));
      }
    }
    return read(description);
  }

  /// Builds the object of {"class_name": ..., "config": {...}}.
  T read(const nlohmann::json& description) const {
    TNT_CHECK(description.is_object() && description.contains("class_name") &&
                  description["class_name"].is_string(),
              "a ", kind_, " description needs {\"class_name\": ..., \"config\": {...}}, got ",
              description.dump());
    const std::string class_name = description["class_name"].get<std::string>();
    const Reader reader = reader_of(class_name);
    const nlohmann::json config = description.value("config", nlohmann::json::object());
    TNT_CHECK(config.is_object(), kind_, " ", class_name, ": \"config\" must be an object, got ",
              config.dump());
    return reader(config);
  }

 private:
  static std::string lowercase(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  Reader reader_of(const std::string& class_name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = readers_.find(class_name);
    if (it != readers_.end()) return it->second;
    std::string known;
    for (const auto& entry : readers_) known += (known.empty() ? "" : ", ") + entry.first;
    throw Error(detail::concat("unknown ", kind_, " class '", class_name, "' (registered: ", known,
                               "); ", fix_));
  }

  std::string kind_;
  std::string fix_;
  mutable std::mutex mutex_;
  std::map<std::string, Reader> readers_;
  std::map<std::string, nlohmann::json> aliases_;
};

}  // namespace tnt::keras

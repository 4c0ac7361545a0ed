#include "callbacks/remote_monitor_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

namespace tnt::callbacks::detail {
namespace {

bool same_ignoring_case(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_unreserved(unsigned char c) {
  return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '*';
}

}  // namespace

std::string epoch_payload(std::int64_t epoch, const Logs& logs) {
  nlohmann::json payload = nlohmann::json::object();
  payload["epoch"] = epoch;
  for (const auto& [name, value] : logs) {
    payload[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
  }
  return payload.dump();
}

// The encoding HTML forms (and Python's urllib.parse.urlencode) use:
// unreserved bytes as they are, space as '+', the rest as %XX.
std::string form_encode(const std::string& text) {
  std::string out;
  out.reserve(text.size() * 3);
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (is_unreserved(c)) {
      out.push_back(ch);
    } else if (c == ' ') {
      out.push_back('+');
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

HttpRequest epoch_request(const RemoteMonitorOptions& options, std::int64_t epoch,
                          const Logs& logs) {
  HttpRequest request;
  request.url = options.root() + options.path();
  const std::string payload = epoch_payload(epoch, logs);
  request.body =
      options.send_as_json() ? payload : form_encode(options.field()) + "=" + form_encode(payload);
  bool has_content_type = false;
  for (const auto& [name, value] : options.headers()) {
    has_content_type = has_content_type || same_ignoring_case(name, "Content-Type");
    request.headers.push_back(name + ": " + value);
  }
  if (!has_content_type) {
    request.headers.push_back(options.send_as_json()
                                  ? "Content-Type: application/json"
                                  : "Content-Type: application/x-www-form-urlencoded");
  }
  return request;
}

}  // namespace tnt::callbacks::detail

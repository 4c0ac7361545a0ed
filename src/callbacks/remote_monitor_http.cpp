#include "callbacks/remote_monitor_http.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>

namespace tnt::callbacks::detail {
namespace {

// curl_global_init is not thread-safe; run it once per process. It is never
// undone: libcurl's global cleanup is only safe when no other library in the
// process uses curl, which a library cannot know.
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The answer's body is not needed; reading it keeps the connection healthy.
std::size_t discard(char*, std::size_t size, std::size_t count, void*) { return size * count; }

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

HttpResult http_post(const HttpRequest& request, double timeout_seconds) {
  init_curl_once();
  HttpResult result;
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) {
    result.error = "libcurl could not start a request";
    return result;
  }
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  // "Expect:" turns off the 100-continue handshake that some servers never answer.
  for (const std::string& line : request.headers) {
    headers.reset(curl_slist_append(headers.release(), line.c_str()));
  }
  headers.reset(curl_slist_append(headers.release(), "Expect:"));
  const long timeout_ms = std::max(1L, static_cast<long>(timeout_seconds * 1000.0));
  char error_buffer[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  // No signals: the timeouts must work in a multi-threaded process.
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_buffer);
  const CURLcode code = curl_easy_perform(c);
  if (code != CURLE_OK) {
    result.error = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(code);
    return result;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &result.status);
  result.ok = result.status >= 200 && result.status < 300;
  if (!result.ok) result.error = fmt::format("the server answered HTTP {}", result.status);
  return result;
}

}  // namespace tnt::callbacks::detail

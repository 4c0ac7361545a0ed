// A tiny HTTP/1.1 server for the tests, on 127.0.0.1 and a port the kernel
// picks. It records every request (method, path, headers, body) and answers
// each with a fixed status. Its thread is owned by the object (joined in the
// destructor). Also: a port nobody listens on, and a listener that never
// answers, to test what a client does when the server is missing or stuck.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tnt_test {

struct HttpRequestSeen {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

class HttpTestServer {
 public:
  /// Starts listening at once; `status` is the answer to every request.
  explicit HttpTestServer(int status = 200);
  ~HttpTestServer();
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  int port() const { return port_; }
  std::string root() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<HttpRequestSeen> requests() const;

 private:
  void serve();
  void handle(int client);

  int listen_fd_ = -1;
  int port_ = 0;
  int status_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<HttpRequestSeen> requests_;
  std::thread thread_;
};

/// A loopback port with no listener (bound, then closed): connections are refused.
int unused_loopback_port();

/// A socket listening on 127.0.0.1 that never accepts or answers: a client's
/// connection completes in the kernel and then waits forever for a reply.
class SilentListener {
 public:
  SilentListener();
  ~SilentListener();
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  std::string root() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

/// Decodes application/x-www-form-urlencoded text ('+' and %XX).
std::string form_decode(const std::string& text);

}  // namespace tnt_test

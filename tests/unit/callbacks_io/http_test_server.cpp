#include "http_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <stdexcept>

namespace tnt_test {
namespace {

// A socket bound to 127.0.0.1 on a port the kernel picks; returns the port.
int bind_loopback(int fd) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    throw std::runtime_error(std::string("test server: bind failed: ") + std::strerror(errno));
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Reads until `pred(buffer)` or the peer closes; gives up after 5 s.
template <typename Pred>
bool read_until(int fd, std::string& buffer, Pred pred) {
  while (!pred(buffer)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return false;
    char chunk[4096];
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

HttpTestServer::HttpTestServer(int status) : status_(status) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  port_ = bind_loopback(listen_fd_);
  ::listen(listen_fd_, 16);
  thread_ = std::thread([this] { serve(); });
}

HttpTestServer::~HttpTestServer() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

std::vector<HttpRequestSeen> HttpTestServer::requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_;
}

void HttpTestServer::serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int client = ::accept(listen_fd_, nullptr, nullptr);
    if (client < 0) continue;
    handle(client);
    ::close(client);
  }
}

void HttpTestServer::handle(int client) {
  std::string buffer;
  if (!read_until(client, buffer,
                  [](const std::string& b) { return b.find("\r\n\r\n") != std::string::npos; })) {
    return;
  }
  const std::size_t header_end = buffer.find("\r\n\r\n");
  HttpRequestSeen request;
  std::size_t line_start = 0;
  bool first = true;
  while (line_start < header_end) {
    const std::size_t line_end = buffer.find("\r\n", line_start);
    const std::string line = buffer.substr(line_start, line_end - line_start);
    line_start = line_end + 2;
    if (first) {
      first = false;
      const auto sp1 = line.find(' '), sp2 = line.find(' ', sp1 + 1);
      request.method = line.substr(0, sp1);
      request.path = line.substr(sp1 + 1, sp2 - sp1 - 1);
      continue;
    }
    const auto colon = line.find(':');
    if (colon != std::string::npos) {
      request.headers[lower(line.substr(0, colon))] = trim(line.substr(colon + 1));
    }
  }
  std::size_t length = 0;
  if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
    length = std::stoul(it->second);
  }
  const std::size_t body_start = header_end + 4;
  read_until(client, buffer, [&](const std::string& b) { return b.size() >= body_start + length; });
  request.body = buffer.substr(body_start, length);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    requests_.push_back(std::move(request));
  }
  const std::string answer = "HTTP/1.1 " + std::to_string(status_) +
                             " Test\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
  ::send(client, answer.data(), answer.size(), MSG_NOSIGNAL);
}

int unused_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int port = bind_loopback(fd);
  ::close(fd);
  return port;
}

SilentListener::SilentListener() {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  port_ = bind_loopback(fd_);
  ::listen(fd_, 16);
}

SilentListener::~SilentListener() { ::close(fd_); }

std::string form_decode(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] == '%' && i + 2 < text.size()) {
      out.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

}  // namespace tnt_test

// RemoteMonitor's request (Keras's payload and encodings) and its HTTP POST
// against a local server: delivered exactly, and every failure (refused,
// error status, a server that never answers) comes back as a value within
// the timeout instead of an exception or a hang.
#include <gtest/gtest.h>
#include <tarantella/callbacks/remote_monitor.h>
#include <tarantella/callbacks/tensorboard.h>
#include <tarantella/base/error.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "callbacks/remote_monitor_http.h"
#include "callbacks/remote_monitor_request.h"
#include "http_test_server.h"

namespace {

namespace detail = tnt::callbacks::detail;
using tnt::callbacks::Logs;
using tnt::callbacks::RemoteMonitorOptions;

const Logs kLogs = {{"loss", 0.1234567890123456789},
                    {"sparse_categorical_accuracy", 2.0 / 3.0},
                    {"val_loss", 1e-300}};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(RemoteMonitorRequest, PayloadIsEpochPlusLogsWithExactValues) {
  const auto json = nlohmann::json::parse(detail::epoch_payload(4, kLogs));
  ASSERT_EQ(json.size(), 4u);
  EXPECT_EQ(json.at("epoch").get<std::int64_t>(), 4);
  EXPECT_TRUE(json.at("epoch").is_number_integer());
  for (const auto& [name, value] : kLogs) EXPECT_EQ(json.at(name).get<double>(), value) << name;
}

TEST(RemoteMonitorRequest, NonFiniteValuesAreNull) {
  const auto json = nlohmann::json::parse(
      detail::epoch_payload(0, {{"loss", std::numeric_limits<double>::quiet_NaN()},
                                {"val_loss", std::numeric_limits<double>::infinity()}}));
  EXPECT_TRUE(json.at("loss").is_null());
  EXPECT_TRUE(json.at("val_loss").is_null());
}

TEST(RemoteMonitorRequest, FormEncodingIsUrlencode) {
  EXPECT_EQ(detail::form_encode("a b&c=d/{\"x\":1.5e-3}"), "a+b%26c%3Dd%2F%7B%22x%22%3A1.5e-3%7D");
  EXPECT_EQ(detail::form_encode("\xC3\xA9"), "%C3%A9");
  EXPECT_EQ(tnt_test::form_decode(detail::form_encode("a b&c=d/{\"x\":1}")), "a b&c=d/{\"x\":1}");
}

TEST(RemoteMonitorRequest, DefaultsAreKerasFormPost) {
  const RemoteMonitorOptions options;
  const auto request = detail::epoch_request(options, 2, kLogs);
  EXPECT_EQ(request.url, "http://localhost:9000/publish/epoch/end/");
  ASSERT_EQ(request.body.rfind("data=", 0), 0u) << request.body;
  EXPECT_EQ(tnt_test::form_decode(request.body.substr(5)), detail::epoch_payload(2, kLogs));
  EXPECT_EQ(request.headers,
            std::vector<std::string>{"Content-Type: application/x-www-form-urlencoded"});
}

TEST(RemoteMonitorRequest, JsonBodyAndUserHeaders) {
  const auto options = RemoteMonitorOptions()
                           .root("http://example.invalid:1")
                           .path("/p")
                           .send_as_json(true)
                           .headers({{"X-Run", "7"}});
  const auto request = detail::epoch_request(options, 0, kLogs);
  EXPECT_EQ(request.url, "http://example.invalid:1/p");
  EXPECT_EQ(request.body, detail::epoch_payload(0, kLogs));
  EXPECT_EQ(request.headers,
            (std::vector<std::string>{"X-Run: 7", "Content-Type: application/json"}));
  // A Content-Type of the user's (any case) replaces ours.
  const auto custom = detail::epoch_request(
      RemoteMonitorOptions().field("f").headers({{"content-type", "text/plain"}}), 0, kLogs);
  EXPECT_EQ(custom.headers, std::vector<std::string>{"content-type: text/plain"});
  EXPECT_EQ(custom.body.rfind("f=", 0), 0u);
}

TEST(RemoteMonitorOptions, TimeoutMustBePositive) {
  EXPECT_THROW(tnt::callbacks::RemoteMonitor(RemoteMonitorOptions().timeout_seconds(0)),
               tnt::Error);
}

TEST(HttpPost, DeliversBodyAndHeadersToALocalServer) {
  tnt_test::HttpTestServer server;
  detail::HttpRequest request{server.root() + "/publish/epoch/end/",
                              "data=%7B%7D",
                              {"Content-Type: application/x-www-form-urlencoded", "X-A: b"}};
  const auto result = detail::http_post(request, 5.0);
  EXPECT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.status, 200);
  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/publish/epoch/end/");
  EXPECT_EQ(seen[0].body, "data=%7B%7D");
  EXPECT_EQ(seen[0].headers.at("content-type"), "application/x-www-form-urlencoded");
  EXPECT_EQ(seen[0].headers.at("x-a"), "b");
}

TEST(HttpPost, ErrorStatusIsAFailureNamingIt) {
  tnt_test::HttpTestServer server(500);
  const auto result = detail::http_post({server.root() + "/x", "{}", {}}, 5.0);
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.status, 500);
  EXPECT_NE(result.error.find("500"), std::string::npos) << result.error;
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(HttpPost, RefusedConnectionFailsQuickly) {
  const auto start = std::chrono::steady_clock::now();
  const auto result = detail::http_post(
      {"http://127.0.0.1:" + std::to_string(tnt_test::unused_loopback_port()) + "/x", "{}", {}},
      5.0);
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.status, 0);
  EXPECT_FALSE(result.error.empty());
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST(HttpPost, ServerThatNeverAnswersTimesOut) {
  tnt_test::SilentListener silent;
  const auto start = std::chrono::steady_clock::now();
  const auto result = detail::http_post({silent.root() + "/x", "{}", {}}, 0.5);
  const double took = seconds_since(start);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("timed out"), std::string::npos) << result.error;
  EXPECT_GE(took, 0.4);
  EXPECT_LT(took, 3.0);
}

TEST(TensorBoardOptions, UpdateFreqAcceptsEpochBatchOrACount) {
  using tnt::callbacks::TensorBoardOptions;
  EXPECT_EQ(TensorBoardOptions("d").update_freq(), 0);
  EXPECT_EQ(TensorBoardOptions("d").update_freq("batch").update_freq(), 1);
  EXPECT_EQ(TensorBoardOptions("d").update_freq(5).update_freq("epoch").update_freq(), 0);
  EXPECT_EQ(TensorBoardOptions("d").update_freq(7).update_freq(), 7);
  try {
    TensorBoardOptions("d").update_freq("weekly");
    FAIL() << "update_freq 'weekly' accepted";
  } catch (const tnt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'weekly'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(TensorBoardOptions("d").update_freq(0), tnt::Error);
  EXPECT_THROW(tnt::callbacks::TensorBoard(TensorBoardOptions("")), tnt::Error);
}

}  // namespace

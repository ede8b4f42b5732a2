#pragma once
// A loopback OTLP/HTTP JSON receiver for the tests (Boost.Beast): accepts on 127.0.0.1 only,
// decodes each POSTed body and keeps its spans, answers 200 — or, when told, holds every
// answer for a while (a slow collector).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace maf::sandbox::test {

class OtlpReceiver {
public:
  /// `hold`: how long each answer waits (zero = answer at once).
  explicit OtlpReceiver(std::chrono::milliseconds hold = std::chrono::milliseconds(0))
      : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}), hold_(hold) {
    thread_ = std::thread([this] { serve(); });
  }
  ~OtlpReceiver() {
    stopping_ = true;
    boost::system::error_code ec;
    // Wake the blocking accept with a connection of our own.
    boost::asio::ip::tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ec);
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/v1/traces"; }

  /// Every span received so far, with its resource's service.name beside it as "_service".
  std::vector<nlohmann::json> spans() const {
    std::lock_guard lock(mutex_);
    return spans_;
  }
  std::vector<std::string> content_types() const {
    std::lock_guard lock(mutex_);
    return content_types_;
  }
  std::vector<std::string> header(const std::string& name) const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const auto& h : headers_)
      if (h.first == name) out.push_back(h.second);
    return out;
  }
  int requests() const { return requests_; }

  /// Waits until at least `n` spans arrived (bounded; the caller asserts the count).
  void wait_for_spans(std::size_t n, std::chrono::seconds bound = std::chrono::seconds(30)) const {
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, bound, [&] { return spans_.size() >= n; });
  }

private:
  void serve() {
    namespace http = boost::beast::http;
    while (!stopping_) {
      boost::asio::ip::tcp::socket socket(io_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec || stopping_) continue;
      boost::beast::flat_buffer buffer;
      while (!stopping_) {  // keep-alive: one connection may carry several posts
        http::request<http::string_body> request;
        http::read(socket, buffer, request, ec);
        if (ec) break;
        ++requests_;
        record(request);
        // A slow collector, interruptible so the destructor never waits out a backlog.
        for (auto held = std::chrono::milliseconds(0); held < hold_ && !stopping_; held += std::chrono::milliseconds(10))
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        http::response<http::string_body> response(http::status::ok, request.version());
        response.set(http::field::content_type, "application/json");
        response.body() = "{}";
        response.keep_alive(request.keep_alive());
        response.prepare_payload();
        http::write(socket, response, ec);
        if (ec || !request.keep_alive()) break;
      }
    }
  }

  template <class Request>
  void record(const Request& request) {
    std::lock_guard lock(mutex_);
    content_types_.push_back(std::string(request[boost::beast::http::field::content_type]));
    for (const auto& field : request) headers_.emplace_back(std::string(field.name_string()), std::string(field.value()));
    const auto doc = nlohmann::json::parse(request.body(), nullptr, false);
    if (doc.is_discarded()) return;
    for (const auto& rs : doc.value("resourceSpans", nlohmann::json::array())) {
      std::string service;
      for (const auto& a : rs["resource"].value("attributes", nlohmann::json::array()))
        if (a["key"] == "service.name") service = a["value"].value("stringValue", "");
      for (const auto& ss : rs.value("scopeSpans", nlohmann::json::array()))
        for (auto span : ss.value("spans", nlohmann::json::array())) {
          span["_service"] = service;
          span["_scope"] = ss["scope"].value("name", "");
          spans_.push_back(std::move(span));
        }
    }
    arrived_.notify_all();
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::chrono::milliseconds hold_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> requests_{0};
  mutable std::mutex mutex_;
  mutable std::condition_variable arrived_;
  std::vector<nlohmann::json> spans_;
  std::vector<std::string> content_types_;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::thread thread_;
};

/// The attribute `key` of an OTLP span as JSON (`{"stringValue": …}` etc.), or null.
inline nlohmann::json span_attribute(const nlohmann::json& span, const std::string& key) {
  for (const auto& a : span.value("attributes", nlohmann::json::array()))
    if (a["key"] == key) return a["value"];
  return nullptr;
}
inline std::string string_attribute(const nlohmann::json& span, const std::string& key) {
  const auto v = span_attribute(span, key);
  return v.is_object() ? v.value("stringValue", "") : "";
}

}  // namespace maf::sandbox::test

// The emulator's HTTP side: routing, state, faults and the request log (E-n, docs/backends/acas.md "Rules"). The
// only translation unit that includes Beast.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/crc.hpp>

#include <sys/socket.h>

#include <cerrno>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <deque>
#include <future>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "../src/response.hpp"
#include "docker_guest.hpp"
#include "emulator.hpp"
#include "maf/sandbox/support/labels.hpp"

namespace maf::sandbox::acas::emulator {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;
using nlohmann::json;

std::string random_hex(std::size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s.push_back(kHex[rng() % 16]);
  return s;
}

std::string new_guid() {
  std::string h = random_hex(32);
  h[12] = '4';
  h[16] = "89ab"[std::random_device{}() % 4];
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20);
}

bool is_guid(const std::string& s) {
  static const std::regex re("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$");
  return std::regex_match(s, re);
}

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// E-60: wall time with milliseconds.
std::string now_iso_ms() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::gmtime(&t));
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms));
  return out;
}

// E-41 `encoding`: a gzip member whose deflate stream is stored blocks (no compression), so
// the emulator needs no zlib; any gzip reader (curl's included) decodes it.
std::string gzip_stored(const std::string& data) {
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  auto le16 = [&](std::size_t v) {
    out.push_back(static_cast<char>(v & 0xff));
    out.push_back(static_cast<char>((v >> 8) & 0xff));
  };
  auto le32 = [&](std::uint32_t v) {
    le16(v & 0xffff);
    le16(v >> 16);
  };
  std::size_t pos = 0;
  do {
    std::size_t n = std::min<std::size_t>(65535, data.size() - pos);
    out.push_back(pos + n == data.size() ? '\x01' : '\x00');
    le16(n);
    le16(~n & 0xffff);
    out.append(data, pos, n);
    pos += n;
  } while (pos < data.size());
  boost::crc_32_type crc;
  crc.process_bytes(data.data(), data.size());
  le32(crc.checksum());
  le32(static_cast<std::uint32_t>(data.size()));
  return out;
}

std::string base64url_decode(std::string_view in) {
  std::string out;
  unsigned val = 0;
  int bits = -8;
  for (char c : in) {
    int d;
    if (c >= 'A' && c <= 'Z') d = c - 'A';
    else if (c >= 'a' && c <= 'z') d = c - 'a' + 26;
    else if (c >= '0' && c <= '9') d = c - '0' + 52;
    else if (c == '-' || c == '+') d = 62;
    else if (c == '_' || c == '/') d = 63;
    else break;
    val = ((val << 6) | static_cast<unsigned>(d)) & 0xffffffu;
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((val >> bits) & 0xff));
      bits -= 8;
    }
  }
  return out;
}

// E-3: a token shaped `header.payload.signature` whose payload is a JSON object is a JWT;
// returns its payload (signature not checked), or null for an opaque token.
nlohmann::json jwt_payload(const std::string& token) {
  auto d1 = token.find('.');
  auto d2 = d1 == std::string::npos ? d1 : token.find('.', d1 + 1);
  if (d2 == std::string::npos) return nullptr;
  auto payload = nlohmann::json::parse(base64url_decode(std::string_view(token).substr(d1 + 1, d2 - d1 - 1)), nullptr, false);
  return payload.is_object() ? payload : nlohmann::json();
}

std::string url_decode(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string url_encode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out.push_back(static_cast<char>(c));
    else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      out += b;
    }
  }
  return out;
}

json problem(int status, const std::string& title, const std::string& detail = {}) {
  json p{{"title", title}, {"status", status}, {"traceId", random_hex(32)}};
  if (!detail.empty()) p["detail"] = detail;
  return p;
}

// `k=v&k=v`, percent-decoded: a query string or a form body.
std::vector<std::pair<std::string, std::string>> decode_pairs(std::string_view rest) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!rest.empty()) {
    auto amp = rest.find('&');
    auto pair = rest.substr(0, amp);
    auto eq = pair.find('=');
    out.emplace_back(url_decode(pair.substr(0, eq)), eq == std::string_view::npos ? "" : url_decode(pair.substr(eq + 1)));
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return out;
}

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  bool drop = false;
  bool reset = false;  // with drop: close with RST (SO_LINGER 0)
  bool hang = false;   // never answer; wait for the client to go away
  std::string drop_at;  // E-41 drop after the real answer began: "after-status" | "mid-body"
  std::size_t trickle_chunk = 0;  // E-41 trickle: body pieces of this size ...
  int trickle_pause_ms = 0;       // ... with this pause between them
  static Reply raw(int status, std::string body, std::string content_type = "application/json") {
    Reply r;
    r.status = status;
    r.body = std::move(body);
    r.content_type = std::move(content_type);
    return r;
  }
  static Reply of(int status, const json& j) { return raw(status, j.dump()); }
};

struct Fault {
  int id = 0;
  std::string route, method, sandbox;
  std::optional<std::regex> command;
  std::optional<std::regex> path;  // E-40: on the guest path of a files.* route, else the URL path
  std::string command_text;
  int skip = 0, times = 1, seen = 0, fired = 0;
  std::string action = "status";  // status | delay | drop | reset | hang | trickle | mutate | encoding
  std::string at = "after-request";  // drop: before-body | after-request | after-status | mid-body
  std::size_t chunk_bytes = 16;      // trickle
  int pause_ms = 20;                 // trickle
  json mutate_delete = json::array();  // mutate: keys or JSON pointers to remove
  json mutate_set = json::object();    // mutate: key or JSON pointer -> value
  std::string wrap;                    // mutate: wrap the answer as {wrap: answer}
  int code = 500;
  json headers = json::object();
  std::optional<std::string> body;
  int delay_ms = 0;
  bool after_effect = false;
};

struct Sandbox {
  std::string id, state = "Running", container, image;
  json state_details;  // {stoppedReason, stoppedAt} while Stopped
  json transitions = json::array();  // E-61: {from, to, cause, at, clock}
  json labels = json::object();
  json create_body;
  json lifecycle = json::object();
  std::vector<json> lifecycle_posts;
  json exec_log = json::array();  // E-61
  std::string created_at;
  int execs = 0;
  int busy = 0;                // exec/file operations in progress (never idle while > 0)
  bool paused = false;         // the container is `docker pause`d
  double last_activity = 0;    // emulator clock (E-50), seconds
  double stopped_at = -1;      // emulator clock when it stopped
  double created_clock = 0;    // emulator clock at create (E-13 createDelayMs)
  int gets = 0;                // GETs seen while Creating (E-13 createGets)
  std::string becomes;         // E-13: "Running" or "Failed" once Creating ends
};

struct Incoming {
  std::string method, target, path, body, authorization, content_type, accept_encoding, control;
  std::string metadata, identity_header;  // the managed-identity double's request headers
  std::vector<std::pair<std::string, std::string>> query;
  std::string param(const std::string& k) const {
    for (const auto& [a, b] : query)
      if (a == k) return b;
    return {};
  }
  bool has(const std::string& k) const {
    for (const auto& q : query)
      if (q.first == k) return true;
    return false;
  }
};

}  // namespace

struct Emulator::Impl {
  EmulatorOptions opt;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;
  std::atomic<bool> running{false};
  std::unique_ptr<DockerGuest> guest;

  // State below is touched only on the io thread.
  std::map<std::string, Sandbox> sandboxes;
  std::vector<json> tombstones;
  std::vector<Fault> faults;
  int next_fault = 1;
  json log = json::array();
  std::uint64_t seq = 0;
  std::map<std::string, std::string> tokens;  // token -> alias
  std::map<std::string, int> in_flight;       // route -> count
  int forbidden_served = 0;                   // E-42 forbidFirst, counted from its PUT /config
  int throttle_seen = 0;                      // E-42 throttle, counted from its PUT /config
  // E-50: the emulator clock, in seconds. Real (steady time since `epoch`) unless switched
  // to manual, where only POST /clock {"advanceSeconds"} moves it.
  std::chrono::steady_clock::time_point epoch = std::chrono::steady_clock::now();
  const std::chrono::steady_clock::time_point started = epoch;
  bool manual_clock = false;
  double manual_now = 0;
  json config{{"listMode", "array"}, {"pageSize", 2}, {"deleteLatencyMs", 0}, {"deleteMissing", 204},
              {"execOutputCap", 1048576}, {"fifoReadMaxMs", 60000},
              {"createMode", "running"}, {"createGets", 1}, {"createDelayMs", 0},
              {"strictApiVersion", false}, {"apiVersion", "2026-02-01-preview"},
              {"audience", "https://dynamicsessions.io"}, {"forbidFirst", 0}, {"forbiddenAliases", json::array()},
              {"nextLinkHostile", ""}, {"throttle", nullptr}, {"requireJsonBodyOnStopResume", false},
              {"identityHeader", "emulator-identity-header"}, {"identityAlias", "default"}, {"identityExpiresIn", 3600},
              {"spClientId", "emulator-client"}, {"spClientSecret", "emulator-secret"}};

  explicit Impl(EmulatorOptions o) : opt(std::move(o)) {
    if (opt.instance.empty()) opt.instance = "acas-emu-" + random_hex(12);
    if (opt.catalogue.is_null())
      opt.catalogue = json{{"public",
                            json::array({{{"name", "busybox"}, {"image", "maf-sandbox-test/busybox:1"}},
                                         {{"name", "busybox-nonroot"}, {"image", "maf-sandbox-test/busybox-nonroot:1"}},
                                         {{"name", "busybox-nosh"}, {"image", "maf-sandbox-test/busybox-nosh:1"}}})},
                           {"imported", json::array()}};
    tokens[opt.token] = "default";
    guest = std::make_unique<DockerGuest>(opt.docker, opt.helper, opt.instance);
  }

  double clock() const {
    return manual_clock ? manual_now
                        : std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch).count();
  }
  double mono_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  }

  std::string group_path() const {
    return "/subscriptions/" + opt.subscription + "/resourceGroups/" + opt.resource_group + "/sandboxGroups/" +
           opt.sandbox_group;
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()); }

  void bind() {
    tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), opt.port);
    acceptor.open(ep.protocol());
    acceptor.set_option(tcp::acceptor::reuse_address(true));
    acceptor.bind(ep);
    acceptor.listen();
  }

  // ---- sessions -------------------------------------------------------------------------
  asio::awaitable<void> accept_loop() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      asio::co_spawn(io, session(std::move(socket)), asio::detached);
    }
  }

  // E-60: arrival, completion and the headers tests assert on.
  void stamp_arrival(json& record, const http::request_header<>& h) {
    record["arrivedAt"] = now_iso_ms();
    record["arrivedMs"] = mono_ms();
    record["contentType"] = std::string(h[http::field::content_type]);
    record["accept"] = std::string(h[http::field::accept]);
    record["userAgent"] = std::string(h[http::field::user_agent]);
    record["clientRequestId"] = std::string(h["x-ms-client-request-id"]);
  }
  void stamp_completion(json& record) const {
    record["completedAt"] = now_iso_ms();
    record["completedMs"] = mono_ms();
    record["durationMs"] = record["completedMs"].get<double>() - record.value("arrivedMs", 0.0);
  }
  // Appends to the log; the index stays valid unless a reset clears the log meanwhile.
  std::optional<std::size_t> publish(json& record, bool always = false) {
    stamp_completion(record);
    if (!always && !record.contains("route")) return std::nullopt;
    log.push_back(record);
    return log.size() - 1;
  }
  void amend(std::optional<std::size_t> index, const char* key, json value) {
    if (index && *index < log.size()) log[*index][key] = std::move(value);
  }

  // True when the peer has closed (EOF or an error is pending); pipelined bytes are not EOF.
  static bool peer_closed(tcp::socket& socket) {
    char c;
    const auto n = ::recv(socket.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

  void mark_client_gone(const json& record) {
    if (!record.contains("exec") || !record.contains("sandbox")) return;
    auto it = sandboxes.find(record["sandbox"].get<std::string>());
    if (it == sandboxes.end()) return;
    for (auto& e : it->second.exec_log)
      if (e.value("seq", std::uint64_t{0}) == record.value("seq", std::uint64_t{0})) e["clientGone"] = true;
  }

  static void close_socket(tcp::socket& socket, bool reset) {
    boost::system::error_code ignore;
    if (reset) socket.set_option(asio::socket_base::linger(true, 0), ignore);
    else socket.shutdown(tcp::socket::shutdown_both, ignore);
    socket.close(ignore);
  }

  // E-41 `drop` before the body is read: matched on the request line and headers alone.
  bool drop_before_body(const http::request_header<>& h, json& record) {
    std::string target(h.target()), method(h.method_string()), id;
    auto q = target.find('?');
    std::string path = url_decode(target.substr(0, q));
    auto route = route_of(method, path, id);
    if (!route || route->empty()) return false;
    std::string guest_path;
    if (q != std::string::npos)
      for (const auto& [k, v] : decode_pairs(std::string_view(target).substr(q + 1)))
        if (k == "path") guest_path = v;
    Fault* f = match_fault(*route, method, id, "", route->rfind("files.", 0) == 0 ? guest_path : path, true);
    if (!f) return false;
    record.update(json{{"method", method}, {"target", target}, {"path", path}, {"route", *route}, {"fault", f->id},
                       {"status", nullptr}, {"outcome", "dropped-by-fault"}, {"dropAt", "before-body"}});
    if (!id.empty()) record["sandbox"] = id;
    publish(record);
    return true;
  }

  asio::awaitable<void> session(tcp::socket socket) {
    boost::beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(std::uint64_t{256} << 20);
      boost::system::error_code ec;
      co_await http::async_read_header(socket, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      json record{{"seq", ++seq}};
      stamp_arrival(record, parser.get());
      if (drop_before_body(parser.get(), record)) {
        close_socket(socket, false);
        co_return;
      }
      if (!parser.is_done())
        co_await http::async_read(socket, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      auto req = parser.release();
      Incoming in;
      in.method = std::string(req.method_string());
      in.target = std::string(req.target());
      in.body = std::move(req.body());
      in.authorization = std::string(req[http::field::authorization]);
      in.content_type = std::string(req[http::field::content_type]);
      in.accept_encoding = std::string(req[http::field::accept_encoding]);
      in.control = std::string(req["X-Emulator-Control"]);
      in.metadata = std::string(req["Metadata"]);
      in.identity_header = std::string(req["X-IDENTITY-HEADER"]);
      auto q = in.target.find('?');
      in.path = url_decode(in.target.substr(0, q));
      if (q != std::string::npos) in.query = decode_pairs(std::string_view(in.target).substr(q + 1));
      record.update(json{{"method", in.method}, {"target", in.target}, {"path", in.path}});
      json qj = json::array();
      for (const auto& [k, v] : in.query) qj.push_back({k, v});
      record["query"] = qj;
      record["apiVersion"] = in.has("api-version") ? json(in.param("api-version")) : json(nullptr);
      record["bodySha256"] = support::sha256_hex(in.body);
      Reply reply = co_await handle(in, record);
      if (reply.hang) {
        // E-41 `hang`: logged at once (tests read it while the client waits), then nothing
        // is sent until the client closes (or the emulator stops).
        record["outcome"] = "hung";
        record["status"] = nullptr;
        auto index = publish(record, true);
        boost::system::error_code ignore;
        co_await socket.async_wait(tcp::socket::wait_read, asio::redirect_error(asio::use_awaitable, ignore));
        amend(index, "clientGoneMs", mono_ms());
        socket.close(ignore);
        co_return;
      }
      if (reply.drop) {
        record["outcome"] = reply.reset ? "reset-by-fault" : "dropped-by-fault";
        record["dropAt"] = "after-request";
        record["status"] = nullptr;
        publish(record);
        close_socket(socket, reply.reset);
        co_return;
      }
      http::response<http::string_body> res{static_cast<http::status>(reply.status), req.version()};
      res.set(http::field::server, "maf-sandbox-acas-emulator");
      if (!reply.body.empty() || reply.status != 204) res.set(http::field::content_type, reply.content_type);
      for (const auto& [k, v] : reply.headers) res.set(k, v);
      res.keep_alive(req.keep_alive());
      res.body() = std::move(reply.body);
      res.prepare_payload();
      // Logged before the write: a client that has its answer may read the log at once.
      record["status"] = reply.status;
      record["responseBytes"] = res.body().size();
      record["outcome"] = reply.drop_at.empty() ? "completed" : "dropped-by-fault";
      if (peer_closed(socket)) {
        // E-24: the client went while the operation ran (the guest command was not stopped).
        record["outcome"] = "client-gone-before-response";
        mark_client_gone(record);
        publish(record);
        co_return;
      }
      if (!reply.drop_at.empty()) record["dropAt"] = reply.drop_at;
      auto index = publish(record);
      std::size_t written = 0;
      if (reply.drop_at == "after-status") {
        // E-41: the status line only, then the socket closes.
        std::string line = "HTTP/1.1 " + std::to_string(reply.status) + " " +
                           std::string(http::obsolete_reason(static_cast<http::status>(reply.status))) + "\r\n";
        co_await asio::async_write(socket, asio::buffer(line), asio::redirect_error(asio::use_awaitable, ec));
        close_socket(socket, false);
        co_return;
      }
      if (!reply.drop_at.empty() || reply.trickle_chunk > 0) {
        // E-41 `trickle` (the body in pieces with pauses) and `drop` mid-body (the headers
        // promise the whole body; half of it is sent).
        http::response_serializer<http::string_body> sr{res};
        written = co_await http::async_write_header(socket, sr, asio::redirect_error(asio::use_awaitable, ec));
        const std::string& body = res.body();
        const std::size_t end = reply.drop_at == "mid-body" ? body.size() / 2 : body.size();
        const std::size_t step = reply.trickle_chunk > 0 ? reply.trickle_chunk : std::max<std::size_t>(end, 1);
        for (std::size_t pos = 0; pos < end && !ec; pos += step) {
          if (pos > 0 && reply.trickle_pause_ms > 0) {
            asio::steady_timer t(io, std::chrono::milliseconds(reply.trickle_pause_ms));
            co_await t.async_wait(asio::use_awaitable);
          }
          auto piece = asio::buffer(body.data() + pos, std::min(step, end - pos));
          written += co_await asio::async_write(socket, piece, asio::redirect_error(asio::use_awaitable, ec));
        }
        if (reply.drop_at == "mid-body") {
          close_socket(socket, false);
          co_return;
        }
      } else {
        written = co_await http::async_write(socket, res, asio::redirect_error(asio::use_awaitable, ec));
      }
      if (ec) amend(index, "outcome", written == 0 ? "client-gone-before-response" : "client-gone-mid-body");
      if (ec || !req.keep_alive()) co_return;
    }
  }

  // ---- dispatch -------------------------------------------------------------------------
  asio::awaitable<Reply> handle(Incoming& in, json& record) {
    if (in.path.rfind("/_emulator/", 0) == 0) {
      if (!opt.control_token.empty() && in.control != opt.control_token)
        co_return Reply::of(401, problem(401, "Unauthorized", "control token required"));
      json body = in.body.empty() ? json(nullptr) : json::parse(in.body, nullptr, false);
      try {
        co_return Reply::of(200, co_await control_op(in.method, in.path.substr(10), body));
      } catch (const std::exception& e) {
        co_return Reply::of(400, problem(400, "ControlError", e.what()));
      }
    }
    if (in.path == "/metadata/identity/oauth2/token" || in.path == "/msi/token") co_return identity(in, record);
    if (std::regex_match(in.path, std::regex("/[^/]+/oauth2/v2\\.0/token")) && in.method == "POST")
      co_return service_principal(in, record);
    // E-3: bearer token, recorded by alias, never by value.
    std::string alias, token;
    if (in.authorization.rfind("Bearer ", 0) == 0) {
      token = in.authorization.substr(7);
      auto it = tokens.find(token);
      if (it != tokens.end()) alias = it->second;
    }
    record["alias"] = alias.empty() ? json(nullptr) : json(alias);
    record["route"] = "unknown";
    if (alias.empty()) {
      record["route"] = "unauthorized";
      Reply r = Reply::of(401, problem(401, "Unauthorized", "a valid bearer token is required"));
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      co_return r;
    }
    // E-3: a JWT's `aud` must name the configured audience (empty audience = no check).
    const std::string audience = config["audience"].is_string() ? config["audience"].get<std::string>() : "";
    if (json payload = jwt_payload(token); !audience.empty() && !payload.is_null()) {
      json aud = payload.value("aud", json());
      bool ok = aud == audience;
      if (aud.is_array())
        for (const auto& a : aud) ok = ok || a == audience;
      if (!ok) {
        record["route"] = "unauthorized";
        record["authError"] = "audience";
        Reply r = Reply::of(401, problem(401, "Unauthorized", "the token's audience is not " + audience));
        r.headers.emplace_back("WWW-Authenticate", "Bearer error=\"invalid_token\", error_description=\"audience\"");
        co_return r;
      }
    }
    // E-3/E-42: RBAC refusals, per alias or for the first n authenticated requests.
    bool forbidden = false;
    for (const auto& a : config.value("forbiddenAliases", json::array())) forbidden = forbidden || a == alias;
    if (!forbidden && forbidden_served < config.value("forbidFirst", 0)) {
      ++forbidden_served;
      forbidden = true;
    }
    if (forbidden) {
      record["route"] = "forbidden";
      co_return Reply::of(403, problem(403, "AuthorizationFailed", "the caller lacks permission on the sandbox group"));
    }
    if (in.path.find("/providers/") != std::string::npos) co_return Reply::of(404, problem(404, "NotFound"));
    std::string id;
    std::optional<std::string> routed = route_of(in.method, in.path, id);
    if (!routed) co_return Reply::of(404, problem(404, "SandboxGroupNotFound"));
    const std::string route = *routed;
    const std::string& m = in.method;
    if (route.empty()) co_return Reply::of(404, problem(404, "NotFound", "unknown route"));
    record["route"] = route;
    if (!id.empty()) record["sandbox"] = id;
    // E-5: api-version is recorded always, enforced only in strict mode.
    if (config.value("strictApiVersion", false) &&
        (!in.has("api-version") || in.param("api-version") != config.value("apiVersion", "")))
      co_return Reply::of(400, problem(400, "UnsupportedApiVersion",
                                       "api-version '" + in.param("api-version") + "' is not supported; use " +
                                           config.value("apiVersion", "")));
    json parsed = in.content_type.rfind("application/json", 0) == 0 ? json::parse(in.body, nullptr, false) : json();
    if (!parsed.is_discarded() && !parsed.is_null()) record["body"] = parsed;
    // E-60: a body that is not JSON (an octet upload) is kept as its first 4 KiB, base64.
    else if (!in.body.empty()) record["bodyHead"] = detail::base64_encode(std::string_view(in.body).substr(0, 4096));
    record["bodySize"] = in.body.size();
    record["acceptEncoding"] = in.accept_encoding;
    std::string command = route == "exec" && parsed.is_object() && parsed.contains("command") &&
                                  parsed["command"].is_string()
                              ? parsed["command"].get<std::string>()
                              : std::string();
    record["inFlight"] = in_flight[route]++;
    struct Leave {
      int& n;
      ~Leave() { --n; }
    } leave{in_flight[route]};

    // E-42 `throttle: {route, every, retryAfter}`: every k-th request on the route is a 429.
    if (json th = config.value("throttle", json()); th.is_object() && th.value("route", "") == route &&
                                                      th.value("every", 0) > 0 && ++throttle_seen % th.value("every", 0) == 0) {
      record["throttled"] = true;
      Reply r = Reply::of(429, json{{"title", "TooManyRequests"}, {"status", 429}});
      r.headers.emplace_back("Retry-After", std::to_string(th.value("retryAfter", 1)));
      co_return r;
    }
    const std::string fault_path = route.rfind("files.", 0) == 0 ? in.param("path") : in.path;
    Fault* fault = match_fault(route, m, id, command, fault_path);
    if (fault) record["fault"] = fault->id;
    if (fault && fault->delay_ms > 0) {
      asio::steady_timer t(io, std::chrono::milliseconds(fault->delay_ms));
      co_await t.async_wait(asio::use_awaitable);
    }
    // status/reset/hang/drop-after-request replace the answer (after the real operation with
    // afterEffect); delay/trickle/mutate/encoding and a later drop shape the real answer.
    const bool replaces = fault && (fault->action == "status" || fault->action == "reset" || fault->action == "hang" ||
                                    (fault->action == "drop" && fault->at == "after-request"));
    if (replaces && !fault->after_effect) co_return fault_reply(*fault);
    if (!id.empty() && !is_guid(id))
      co_return Reply::of(400, json{{"title", "One or more validation errors occurred."}, {"status", 400},
                                    {"errors", {{"id", {"The input was not valid."}}}}});
    Reply reply;
    try {
      reply = co_await dispatch(route, id, in, parsed, record);
    } catch (const std::exception& e) {
      reply = Reply::of(500, problem(500, "InternalError", e.what()));
    }
    if (replaces) co_return fault_reply(*fault);
    if (fault) {
      try {
        shape(*fault, reply);
      } catch (const std::exception& e) {  // e.g. a pointer into an array that is too short
        reply = Reply::of(500, problem(500, "FaultMutationFailed", e.what()));
      }
    }
    co_return reply;
  }

  // E-41 actions applied to the real answer.
  static void shape(const Fault& f, Reply& r) {
    if (f.action == "trickle") {
      r.trickle_chunk = std::max<std::size_t>(1, f.chunk_bytes);
      r.trickle_pause_ms = f.pause_ms;
    } else if (f.action == "drop") {
      r.drop_at = f.at;
    } else if (f.action == "mutate") {
      json doc = json::parse(r.body, nullptr, false);
      if (doc.is_discarded()) return;
      for (const auto& k : f.mutate_delete) {
        const std::string key = k.get<std::string>();
        if (key.empty() || key[0] != '/') {
          doc.erase(key);
          continue;
        }
        json::json_pointer ptr(key);
        if (doc.contains(ptr.parent_pointer()) && doc[ptr.parent_pointer()].is_object())
          doc[ptr.parent_pointer()].erase(ptr.back());
      }
      for (const auto& [k, v] : f.mutate_set.items()) {
        if (!k.empty() && k[0] == '/') doc[json::json_pointer(k)] = v;
        else doc[k] = v;
      }
      if (!f.wrap.empty()) doc = json{{f.wrap, doc}};
      r.body = doc.dump();
    } else if (f.action == "encoding") {
      r.body = gzip_stored(r.body);
      r.headers.emplace_back("Content-Encoding", "gzip");
    }
  }

  // The data-plane route of `path` and its sandbox id; nullopt outside the group, "" for an
  // unknown sub-route.
  std::optional<std::string> route_of(const std::string& m, const std::string& path, std::string& id) const {
    const std::string prefix = group_path();
    if (path.rfind(prefix, 0) != 0 || (path.size() > prefix.size() && path[prefix.size()] != '/')) return std::nullopt;
    std::vector<std::string> seg;
    std::string rest = path.substr(prefix.size());
    std::size_t pos = 0;
    while (pos < rest.size()) {
      auto next = rest.find('/', pos + 1);
      std::string one = rest.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
      if (!one.empty()) seg.push_back(one);
      if (next == std::string::npos) break;
      pos = next;
    }
    if (seg.size() == 1 && seg[0] == "sandboxes") return m == "PUT" ? "create" : m == "GET" ? "list" : "";
    if (seg.size() >= 2 && seg[0] == "sandboxes") {
      id = seg[1];
      if (seg.size() == 2) return m == "GET" ? "get" : m == "DELETE" ? "delete" : "";
      if (seg.size() == 3 && m == "POST" && (seg[2] == "resume" || seg[2] == "stop" || seg[2] == "lifecycle"))
        return seg[2];
      if (seg.size() == 3 && m == "POST" && seg[2] == "executeShellCommand") return "exec";
      if (seg.size() == 3 && seg[2] == "files")
        return m == "PUT" ? "files.put" : m == "GET" ? "files.get" : m == "DELETE" ? "files.delete" : "";
      if (seg.size() == 4 && seg[2] == "files" && m == "GET" && (seg[3] == "stat" || seg[3] == "list"))
        return "files." + seg[3];
      if (seg.size() == 4 && seg[2] == "files" && m == "POST" && seg[3] == "mkdir") return "files.mkdir";
      return "";
    }
    if (seg.size() == 2 && seg[0] == "diskimages" && seg[1] == "public" && m == "GET") return "images.public";
    if (seg.size() == 1 && seg[0] == "diskimages" && m == "GET") return "images.list";
    return "";
  }

  // A managed-identity token endpoint (docs/backends/acas.md "The credential chain", managed identity), so the backend's token source is
  // proven end to end: IMDS (`Metadata: true`) and the App Service form (`X-IDENTITY-HEADER`).
  // It issues the API token of alias `identityAlias`; the log records the query, never a token.
  Reply identity(const Incoming& in, json& record) {
    const bool imds = in.path == "/metadata/identity/oauth2/token";
    record["route"] = "identity";
    record["flavour"] = imds ? "imds" : "app-service";
    if (imds && in.metadata != "true")
      return Reply::of(400, problem(400, "BadRequest", "Required metadata header not specified"));
    if (!imds && in.identity_header != config.value("identityHeader", ""))
      return Reply::of(401, problem(401, "Unauthorized", "X-IDENTITY-HEADER does not match"));
    if (in.param("resource").empty() || in.param("api-version").empty())
      return Reply::of(400, problem(400, "BadRequest", "resource and api-version are required"));
    const std::string alias = config.value("identityAlias", "default");
    std::string token;
    for (const auto& [t, a] : tokens)
      if (a == alias) token = t;
    if (token.empty()) return Reply::of(400, problem(400, "BadRequest", "no token for alias " + alias));
    const auto expires = static_cast<std::int64_t>(std::time(nullptr)) + config.value("identityExpiresIn", 3600);
    return Reply::of(200, json{{"access_token", token}, {"expires_on", std::to_string(expires)},
                               {"resource", in.param("resource")}, {"token_type", "Bearer"}});
  }

  // The Entra client-credentials grant (the service principal of "The credential chain") at `/{tenant}/oauth2/v2.0/token`:
  // point $AZURE_AUTHORITY_HOST here. Logs tenant and client id, never the secret.
  Reply service_principal(const Incoming& in, json& record) {
    record["route"] = "identity";
    record["flavour"] = "service-principal";
    record["tenant"] = in.path.substr(1, in.path.find('/', 1) - 1);
    std::map<std::string, std::string> form;
    for (auto& [k, v] : decode_pairs(in.body)) form[k] = v;
    record["clientId"] = form["client_id"];
    record["scope"] = form["scope"];
    if (form["grant_type"] != "client_credentials")
      return Reply::of(400, json{{"error", "unsupported_grant_type"}});
    if (form["client_id"] != config.value("spClientId", "") || form["client_secret"] != config.value("spClientSecret", ""))
      return Reply::of(401, json{{"error", "invalid_client"}});
    const std::string alias = config.value("identityAlias", "default");
    for (const auto& [t, a] : tokens)
      if (a == alias)
        return Reply::of(200, json{{"token_type", "Bearer"}, {"expires_in", config.value("identityExpiresIn", 3600)},
                                   {"access_token", t}});
    return Reply::of(400, json{{"error", "invalid_request"}, {"error_description", "no token for alias " + alias}});
  }

  Fault* match_fault(const std::string& route, const std::string& method, const std::string& id,
                     const std::string& command, const std::string& path, bool before_body = false) {
    for (auto& f : faults) {
      if (f.times > 0 && f.fired >= f.times) continue;
      if ((f.action == "drop" && f.at == "before-body") != before_body) continue;
      if (!f.route.empty() && f.route != route) continue;
      if (!f.method.empty() && f.method != method) continue;
      if (!f.sandbox.empty() && f.sandbox != id) continue;
      if (f.command && !std::regex_search(command, *f.command)) continue;
      if (f.path && !std::regex_search(path, *f.path)) continue;
      if (f.seen++ < f.skip) continue;
      ++f.fired;
      return &f;
    }
    return nullptr;
  }

  static Reply fault_reply(const Fault& f) {
    if (f.action == "drop" || f.action == "reset" || f.action == "hang") {
      Reply r;
      r.drop = f.action != "hang";
      r.reset = f.action == "reset";
      r.hang = f.action == "hang";
      return r;
    }
    json body = f.code == 429 ? json{{"title", "TooManyRequests"}, {"status", 429}} : problem(f.code, "InjectedFault");
    Reply r = Reply::raw(f.code, f.body ? *f.body : body.dump());
    if (f.code == 429 && !f.headers.contains("Retry-After") && !f.headers.contains("x-ms-retry-after-ms"))
      r.headers.emplace_back("Retry-After", "1");
    for (const auto& [k, v] : f.headers.items()) r.headers.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    return r;
  }

  // R-35 items; the local Docker image behind each is the emulator's business.
  json public_items() const {
    json items = json::array();
    for (const auto& e : opt.catalogue.value("public", json::array()))
      items.push_back({{"id", e.value("id", e.value("name", ""))}, {"name", e.value("name", "")}, {"status", "Ready"}});
    return items;
  }

  json sandbox_doc(const Sandbox& s) const {
    json d{{"id", s.id}, {"state", s.state}, {"labels", s.labels}, {"createdAt", s.created_at},
           {"lifecycle", s.lifecycle}};
    if (s.state_details.is_object()) d["stateDetails"] = s.state_details;
    for (const char* k : {"egressPolicy", "sourcesRef", "resources"})
      if (s.create_body.contains(k)) d[k] = s.create_body[k];
    return d;
  }

  asio::awaitable<Reply> dispatch(const std::string& route, const std::string& id, Incoming& in, const json& body,
                                  json& record) {
    if (route == "create") co_return co_await create(body);
    if (route == "list") co_return list(in);
    if (route == "images.public") co_return paged(in, public_items(), "public");
    if (route == "images.list") {
      json items = json::array();
      for (const auto& e : opt.catalogue.value("imported", json::array()))
        items.push_back({{"id", e.value("id", "")}, {"image", {{"base", e.value("base", "")}}},
                         {"status", {{"state", e.value("state", "Ready")}}}, {"labels", json::object()}});
      co_return paged(in, items, "imported");
    }
    auto it = sandboxes.find(id);
    if (route == "delete") {
      if (it == sandboxes.end()) co_return Reply::raw(config.value("deleteMissing", 204), "");
      if (it->second.state == "Deleting") co_return Reply::raw(204, "");
      transition(it->second, "Deleting", "api");
      asio::co_spawn(io, finish_delete(id, "api", true), asio::detached);
      co_return Reply::raw(200, "");
    }
    if (it == sandboxes.end()) co_return Reply::of(404, problem(404, "SandboxNotFound", "Requested document not found."));
    Sandbox& s = it->second;
    if (route == "get") {
      settle(s, true);
      co_return Reply::of(200, sandbox_doc(s));
    }
    if (s.state == "Deleting") co_return Reply::of(409, problem(409, "SandboxDeleting"));
    const bool disabled = s.state_details.is_object() && s.state_details.value("stoppedReason", "") == "Disabled";
    // E-15 `requireJsonBodyOnStopResume`: a body-less stop/resume hangs (CYRUS C7).
    if ((route == "resume" || route == "stop") && in.body.empty() && config.value("requireJsonBodyOnStopResume", false)) {
      Reply r;
      r.hang = true;
      co_return r;
    }
    if (route == "resume") {
      // E-15: a Disabled stop reason blocks resume (409, guessed).
      if (disabled) co_return Reply::of(409, problem(409, "SandboxDisabled", "the sandbox is disabled"));
      co_await set_running(id, "api");
      co_return Reply::of(200, json::object());
    }
    if (route == "stop") {
      co_await set_stopped(id, "UserStopped", "api", clock());
      co_return Reply::of(200, json{{"id", random_hex(8)}, {"sandboxId", id}, {"createdAtUtc", now_iso()}});
    }
    if (route == "lifecycle") {
      s.lifecycle_posts.push_back(body);
      // The lifecycle body: either part may be omitted; what is sent replaces that part.
      if (body.is_object())
        for (const char* k : {"autoSuspendPolicy", "autoDeletePolicy"})
          if (body.contains(k)) s.lifecycle[k] = body[k];
      co_return Reply::of(200, s.lifecycle);
    }
    // Exec and the file plane: not before Creating ends (409, guessed); a Stopped sandbox
    // resumes first unless Disabled (E-16).
    if (s.state == "Creating" || s.state == "Failed")
      co_return Reply::of(409, problem(409, "SandboxNotReady", "the sandbox is " + s.state));
    if (s.state == "Stopped") {
      if (disabled) co_return Reply::of(409, problem(409, "SandboxDisabled", "the sandbox is disabled"));
      co_await set_running(id, "auto-resume");
    }
    it = sandboxes.find(id);
    if (it == sandboxes.end()) co_return Reply::of(404, problem(404, "SandboxNotFound", "Requested document not found."));
    // Activity (E-17): the idle clock restarts at the start and at the end of each operation,
    // and a sandbox is never idle while one is in progress.
    ++it->second.busy;
    it->second.last_activity = clock();
    struct Busy {
      Impl& impl;
      std::string id;
      ~Busy() {
        auto at = impl.sandboxes.find(id);
        if (at == impl.sandboxes.end()) return;
        --at->second.busy;
        at->second.last_activity = impl.clock();
      }
    } busy{*this, id};
    co_return co_await guest_op(route, id, it->second.container, in, body, record);
  }

  // E-22…E-25 inside the container; `container` is copied so the sandbox may go meanwhile.
  asio::awaitable<Reply> guest_op(std::string route, std::string id, std::string container, Incoming& in,
                                  const json& body, json& record) {
    if (route == "exec") {
      if (!body.is_object() || !body.contains("command") || !body["command"].is_string())
        co_return Reply::of(400, problem(400, "One or more validation errors occurred.", "command is required"));
      std::string wd = body.contains("workingDirectory") && body["workingDirectory"].is_string()
                           ? body["workingDirectory"].get<std::string>()
                           : "/";
      if (auto it = sandboxes.find(id); it != sandboxes.end()) ++it->second.execs;
      json entry{{"seq", record["seq"]}, {"command", body["command"]}, {"workingDirectory", wd},
                 {"startedAt", now_iso_ms()}, {"clientGone", false}};
      auto cap = config.value("execOutputCap", 1048576);
      auto r = co_await guest->exec(container, body["command"].get<std::string>(), wd, static_cast<std::size_t>(cap));
      record["exec"] = {{"exitCode", r.exit_code}, {"stdoutBytes", r.stdout_bytes.size()},
                        {"stderrBytes", r.stderr_bytes.size()}, {"truncated", r.truncated}, {"killed", r.killed}};
      entry.update(record["exec"]);
      entry["endedAt"] = now_iso_ms();
      if (auto it = sandboxes.find(id); it != sandboxes.end()) it->second.exec_log.push_back(entry);
      // the service decodes with replacement, one U+FFFD per invalid run.
      co_return Reply::of(200, json{{"exitCode", r.exit_code},
                                    {"stdout", detail::decode_utf8_collapsing(r.stdout_bytes)},
                                    {"stderr", detail::decode_utf8_collapsing(r.stderr_bytes)}});
    }
    // The file plane.
    std::string path = route == "files.mkdir" ? (body.is_object() ? body.value("path", "") : "") : in.param("path");
    if (path.empty() || path[0] != '/')
      co_return Reply::of(400, problem(400, "One or more validation errors occurred.", "path must be absolute"));
    GuestAnswer a;
    if (route == "files.stat") {
      a = co_await guest->stat(container, path);
      if (a.status == 200) {
        auto nl = a.body.find('\n');
        std::string line = a.body.substr(0, nl);
        std::string target = nl == std::string::npos ? "" : a.body.substr(nl + 1);
        while (!target.empty() && target.back() == '\n') target.pop_back();
        co_return Reply::raw(200, entry_json(line, path, target));
      }
    } else if (route == "files.list") {
      a = co_await guest->list(container, path);
      if (a.status == 200) {
        json entries = json::array();
        std::size_t pos = 0;
        while (pos < a.body.size()) {
          auto nl = a.body.find('\n', pos);
          std::string line = a.body.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
          if (!line.empty()) entries.push_back(json::parse(entry_json(line, path, "")));
          if (nl == std::string::npos) break;
          pos = nl + 1;
        }
        co_return Reply::of(200, json{{"path", path}, {"entries", entries}});
      }
    } else if (route == "files.get") {
      a = co_await guest->download(container, path, std::chrono::milliseconds(config.value("fifoReadMaxMs", 60000)));
      if (a.status == 200) co_return Reply::raw(200, std::move(a.body), "application/octet-stream");
    } else if (route == "files.put") {
      int mode = 420;
      if (in.has("mode")) {
        std::string v = in.param("mode");
        // decimal only; "0o777" is a 400.
        if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 6)
          co_return Reply::of(400, problem(400, "One or more validation errors occurred.", "mode must be decimal"));
        mode = std::stoi(v);
      }
      a = co_await guest->upload(container, path, in.param("createDirs") == "true", mode, in.body);
      if (a.status == 200) co_return Reply::of(200, json::object());
    } else if (route == "files.delete") {
      a = co_await guest->remove_path(container, path, in.param("recursive") == "true");
      if (a.status == 200) co_return Reply::raw(204, "");
    } else if (route == "files.mkdir") {
      a = co_await guest->mkdir(container, path);
      if (a.status == 200) co_return Reply::of(200, json::object());
      if (a.status == 404) a.detail = "parent directory not found";
    }
    co_return Reply::of(a.status, problem(a.status, a.status == 404 ? "NotFound" : "FileOperationFailed", a.detail));
  }

  asio::awaitable<void> finish_delete(std::string id, std::string cause, bool latency) {
    auto it = sandboxes.find(id);
    if (it == sandboxes.end()) co_return;
    std::string container = it->second.container;
    try {
      if (!container.empty()) co_await guest->remove(container);
    } catch (const std::exception& e) {
      std::cerr << "acas-emulator: docker rm " << container << ": " << e.what() << "\n";
    }
    if (latency) {
      asio::steady_timer t(io, std::chrono::milliseconds(config.value("deleteLatencyMs", 0)));
      co_await t.async_wait(asio::use_awaitable);
    }
    it = sandboxes.find(id);
    if (it == sandboxes.end()) co_return;
    tombstones.push_back(json{{"id", id}, {"labels", it->second.labels}, {"deletedAt", now_iso()}, {"cause", cause},
                              {"container", container}, {"transitions", it->second.transitions}});
    sandboxes.erase(it);
  }

  // ---- state and time (E-13, E-15…E-17, E-50) --------------------------------------------
  void transition(Sandbox& s, const std::string& to, const std::string& cause) {
    if (s.state == to) return;
    s.transitions.push_back({{"from", s.state}, {"to", to}, {"cause", cause}, {"at", now_iso_ms()}, {"clock", clock()}});
    s.state = to;
  }

  // E-13: `Creating` ends after `createGets` GETs (those answer Creating), or with
  // createGets 0 after `createDelayMs` on the emulator clock.
  void settle(Sandbox& s, bool counted_get) {
    if (s.state != "Creating") return;
    const int gets = config.value("createGets", 1);
    const bool ready = gets > 0 ? s.gets >= gets
                                : (clock() - s.created_clock) * 1000.0 >= config.value("createDelayMs", 0.0);
    if (ready) transition(s, s.becomes, "create");
    else if (counted_get) ++s.gets;
  }

  asio::awaitable<void> set_running(std::string id, std::string cause) {
    auto it = sandboxes.find(id);
    if (it == sandboxes.end()) co_return;
    std::string container = it->second.paused ? it->second.container : "";
    it->second.paused = false;
    transition(it->second, "Running", cause);
    it->second.state_details = nullptr;
    it->second.stopped_at = -1;
    it->second.last_activity = clock();
    if (!container.empty()) co_await guest->pause(container, false);
  }

  asio::awaitable<void> set_stopped(std::string id, std::string reason, std::string cause, double at) {
    auto it = sandboxes.find(id);
    if (it == sandboxes.end()) co_return;
    Sandbox& s = it->second;
    transition(s, "Stopped", cause);
    s.state_details = {{"stoppedReason", reason}, {"stoppedAt", now_iso()}};
    s.stopped_at = at;
    if (s.paused || s.container.empty()) co_return;
    s.paused = true;  // Memory-mode suspend, approximated by `docker pause` (E-71)
    std::string container = s.container;
    co_await guest->pause(container, true);
  }

  static double number(const json& policy, const char* key, double fallback) {
    auto v = policy.is_object() ? policy.value(key, json()) : json();
    return v.is_number() ? v.get<double>() : fallback;
  }

  // E-17: due auto-suspend and auto-delete timers, in time order per sandbox: a suspend is
  // dated when it fell due, so one clock advance can fire both.
  asio::awaitable<void> fire_due() {
    std::vector<std::string> ids;
    for (const auto& [id, s] : sandboxes) ids.push_back(id);
    for (const auto& id : ids) {
      auto it = sandboxes.find(id);
      if (it == sandboxes.end()) continue;
      settle(it->second, false);
      const double now = clock();
      json suspend = it->second.lifecycle.value("autoSuspendPolicy", json());
      if (it->second.state == "Running" && it->second.busy == 0 && suspend.is_object() &&
          suspend.value("enabled", true) == true) {
        const double interval = number(suspend, "interval", 300);
        const double due = it->second.last_activity + interval;
        if (interval > 0 && now >= due) co_await set_stopped(id, "Idle", "auto-suspend", due);
      }
      it = sandboxes.find(id);
      if (it == sandboxes.end()) continue;
      json del = it->second.lifecycle.value("autoDeletePolicy", json());
      if (it->second.state == "Stopped" && it->second.stopped_at >= 0 && del.is_object() &&
          del.value("enabled", false) == true && now >= it->second.stopped_at + number(del, "deleteIntervalInSeconds", 0)) {
        transition(it->second, "Deleting", "auto-delete");
        co_await finish_delete(id, "auto-delete", false);
      }
    }
  }

  // On the real clock the timers are checked every second; a manual clock fires them only
  // from POST /clock.
  asio::awaitable<void> timer_loop() {
    asio::steady_timer t(io);
    for (;;) {
      t.expires_after(std::chrono::seconds(1));
      boost::system::error_code ec;
      co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !acceptor.is_open()) co_return;
      if (manual_clock) continue;
      try {
        co_await fire_due();
      } catch (const std::exception& e) {
        std::cerr << "acas-emulator: timers: " << e.what() << "\n";
      }
    }
  }

  asio::awaitable<Reply> create(const json& body) {
    if (!body.is_object()) co_return Reply::of(400, problem(400, "One or more validation errors occurred.", "body"));
    json disk = body.contains("sourcesRef") && body["sourcesRef"].is_object()
                    ? body["sourcesRef"].value("diskImage", json::object())
                    : json::object();
    std::string image;
    if (disk.contains("name") && disk["name"].is_string()) {
      for (const auto& e : opt.catalogue.value("public", json::array()))
        if (e.value("name", "") == disk["name"].get<std::string>()) image = e.value("image", "");
    } else if (disk.contains("id") && disk["id"].is_string()) {
      for (const auto& e : opt.catalogue.value("public", json::array()))
        if (e.value("id", e.value("name", "")) == disk["id"].get<std::string>()) image = e.value("image", "");
      for (const auto& e : opt.catalogue.value("imported", json::array()))
        if (e.value("id", "") == disk["id"].get<std::string>()) image = e.value("image", "");
    }
    if (image.empty()) co_return Reply::of(400, problem(400, "DiskImageNotFound", disk.dump()));
    json labels = body.value("labels", json::object());
    if (!labels.is_object()) co_return Reply::of(400, problem(400, "One or more validation errors occurred.", "labels"));
    for (const auto& [k, v] : labels.items())
      if (!v.is_string() || v.get<std::string>().size() > 63)
        co_return Reply::of(400, json{{"title", "One or more validation errors occurred."}, {"status", 400},
                                      {"errors", {{"labels", {"Label value for key '" + k + "' exceeds 63 characters"}}}}});
    Sandbox s;
    s.id = new_guid();
    s.image = image;
    s.labels = labels;
    s.create_body = body;
    s.created_at = now_iso();
    // The create body (E-13): only the wire names count; autoSuspend/autoDelete are silently ignored.
    // E-17: the platform default when the create omits it: auto-suspend 300 s, no auto-delete.
    json lc = body.value("lifecycle", json::object());
    s.lifecycle = json{{"autoSuspendPolicy", {{"enabled", true}, {"interval", 300}, {"mode", "Memory"}}}};
    if (lc.is_object()) {
      if (lc.contains("autoSuspendPolicy")) s.lifecycle["autoSuspendPolicy"] = lc["autoSuspendPolicy"];
      if (lc.contains("autoDeletePolicy")) s.lifecycle["autoDeletePolicy"] = lc["autoDeletePolicy"];
    }
    // E-13: `running` answers Running; `creating` answers Creating and turns Running later;
    // `failing` answers Creating and ends in Failed (with no container).
    const std::string mode = config.value("createMode", "running");
    if (mode != "failing") s.container = co_await guest->start(image, s.id);
    s.state = mode == "running" ? "Running" : "Creating";
    s.becomes = mode == "failing" ? "Failed" : "Running";
    s.transitions.push_back({{"from", nullptr}, {"to", s.state}, {"cause", "api"}, {"at", now_iso_ms()}, {"clock", clock()}});
    s.created_clock = s.last_activity = clock();
    json doc = sandbox_doc(s);
    sandboxes.emplace(s.id, std::move(s));
    co_return Reply::of(200, doc);
  }

  Reply list(const Incoming& in) {
    std::vector<std::pair<std::string, std::string>> want;
    if (in.has("labels")) {
      std::string sel = in.param("labels");
      std::size_t pos = 0;
      while (pos <= sel.size() && !sel.empty()) {
        auto comma = sel.find(',', pos);
        std::string pair = sel.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        auto eq = pair.find('=');
        if (eq == std::string::npos) return Reply::of(400, problem(400, "InvalidLabelSelector", pair));
        want.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    }
    json items = json::array();
    for (auto& [id, s] : sandboxes) {
      settle(s, false);
      bool match = true;
      for (const auto& [k, v] : want) match = match && s.labels.contains(k) && s.labels[k] == v;
      if (match) items.push_back(sandbox_doc(s));
    }
    return paged(in, items, "sandboxes");
  }

  // E-32: a bare array by default; `nextLink` pages on request.
  Reply paged(const Incoming& in, const json& items, const std::string&) {
    if (config.value("listMode", "array") != "nextLink") return Reply::of(200, items);
    std::size_t page = static_cast<std::size_t>(std::max(1, config.value("pageSize", 2)));
    std::size_t from = 0;
    if (in.has("continuation")) from = std::stoul(in.param("continuation"));
    json value = json::array();
    for (std::size_t i = from; i < items.size() && i < from + page; ++i) value.push_back(items[i]);
    json out{{"value", value}};
    if (from + page < items.size()) {
      // E-32 `nextLinkHostile`: `host` (another host), `path` (another path), `repeat` (the
      // same page again), for the backend's continuation checks.
      const std::string hostile = config.value("nextLinkHostile", "");
      std::string link = hostile == "host" ? "http://attacker.invalid:" + std::to_string(acceptor.local_endpoint().port())
                                           : base_url();
      link += (hostile == "path" ? "/elsewhere" : "") + in.path + "?api-version=" + url_encode(in.param("api-version"));
      if (in.has("labels")) link += "&labels=" + url_encode(in.param("labels"));
      link += "&continuation=" + std::to_string(hostile == "repeat" ? from : from + page);
      out["nextLink"] = link;
    }
    return Reply::of(200, out);
  }

  // ---- control plane (/_emulator) ----------------------------------------------------------
  asio::awaitable<json> control_op(const std::string& method, const std::string& path, const json& body) {
    if (path == "/faults" && method == "POST") {
      Fault f;
      f.id = next_fault++;
      f.route = body.value("route", "");
      f.method = body.value("method", "");
      f.sandbox = body.value("sandbox", "");
      if (body.contains("command")) f.command = std::regex(body["command"].get<std::string>());
      if (body.contains("path")) f.path = std::regex(body["path"].get<std::string>());
      f.skip = body.value("skip", 0);
      f.times = body.value("times", 1);
      f.action = body.value("action", "status");
      f.code = body.value("code", 500);
      f.headers = body.value("headers", json::object());
      if (body.contains("retryAfter")) f.headers["Retry-After"] = std::to_string(body["retryAfter"].get<int>());
      if (body.contains("body")) f.body = body["body"].is_string() ? body["body"].get<std::string>() : body["body"].dump();
      f.delay_ms = body.value("delayMs", 0);
      f.after_effect = body.value("afterEffect", false);
      f.at = body.value("at", "after-request");
      f.chunk_bytes = body.value("chunkBytes", std::size_t{16});
      f.pause_ms = body.value("pauseMs", 20);
      f.mutate_delete = body.value("delete", json::array());
      f.mutate_set = body.value("set", json::object());
      f.wrap = body.value("wrap", "");
      static const std::set<std::string> kActions{"status", "delay", "drop", "reset", "hang",
                                                  "trickle", "mutate", "encoding"};
      static const std::set<std::string> kDropPoints{"before-body", "after-request", "after-status", "mid-body"};
      if (!kActions.count(f.action)) throw std::runtime_error("unknown fault action " + f.action);
      if (!kDropPoints.count(f.at)) throw std::runtime_error("unknown drop point " + f.at);
      if (!f.mutate_delete.is_array() || !f.mutate_set.is_object())
        throw std::runtime_error("mutate wants delete: [keys], set: {key: value}");
      for (const auto& k : f.mutate_delete)
        if (!k.is_string()) throw std::runtime_error("mutate delete wants strings");
      // Pointer syntax is checked here, so a bad rule is a 400 now rather than a 500 later.
      for (const auto& k : f.mutate_delete)
        if (!k.get<std::string>().empty() && k.get<std::string>()[0] == '/') json::json_pointer check(k.get<std::string>());
      for (const auto& [k, v] : f.mutate_set.items())
        if (!k.empty() && k[0] == '/') json::json_pointer check(k);
      faults.push_back(std::move(f));
      co_return json{{"id", faults.back().id}};
    }
    if (path == "/faults" && method == "DELETE") {
      faults.clear();
      co_return json::object();
    }
    if (path == "/faults" && method == "GET") {
      json out = json::array();
      for (const auto& f : faults) out.push_back({{"id", f.id}, {"route", f.route}, {"fired", f.fired}});
      co_return out;
    }
    if (path == "/requests" && method == "GET") co_return log;
    if (path == "/counters" && method == "GET") co_return counters();
    if (path == "/sandboxes" && method == "GET") {
      json live = json::array();
      for (const auto& [id, s] : sandboxes) {
        json d = sandbox_doc(s);
        d["container"] = s.container;
        d["image"] = s.image;
        d["execs"] = s.execs;
        d["lifecyclePosts"] = s.lifecycle_posts;
        d["createBody"] = s.create_body;
        d["transitions"] = s.transitions;
        d["execLog"] = s.exec_log;
        d["paused"] = s.paused;
        live.push_back(d);
      }
      co_return json{{"live", live}, {"tombstones", tombstones}};
    }
    if (path == "/config" && method == "PUT") {
      static const std::map<std::string, std::set<std::string>> kChoices{
          {"createMode", {"running", "creating", "failing"}}, {"nextLinkHostile", {"", "host", "path", "repeat"}},
          {"listMode", {"array", "nextLink"}}};
      for (const auto& [k, v] : body.items())
        if (auto c = kChoices.find(k); c != kChoices.end() && (!v.is_string() || !c->second.count(v.get<std::string>())))
          throw std::runtime_error("config " + k + ": unknown value " + v.dump());
      for (const auto& [k, v] : body.items()) {
        if (k == "forbidFirst") forbidden_served = 0;
        if (k == "throttle") throttle_seen = 0;
        if (k == "tokens") {
          for (const auto& [alias, token] : v.items()) tokens[token.get<std::string>()] = alias;
        } else {
          config[k] = v;
        }
      }
      co_return config;
    }
    if (path == "/catalogue" && method == "PUT") {
      opt.catalogue = body;
      co_return body;
    }
    if (path == "/reset" && method == "POST") {
      // Copies: a delete in flight may erase its sandbox while these await.
      std::vector<std::string> containers;
      for (const auto& [id, s] : sandboxes)
        if (!s.container.empty()) containers.push_back(s.container);
      sandboxes.clear();
      for (const auto& c : containers) co_await guest->remove(c);
      tombstones.clear();
      faults.clear();
      log = json::array();
      manual_clock = false;
      epoch = std::chrono::steady_clock::now();
      forbidden_served = 0;
      throttle_seen = 0;
      co_return json::object();
    }
    // E-50: {"mode": "manual"|"real"} and/or {"advanceSeconds": n} (manual only); an
    // advance fires the timers that fell due before it returns.
    if (path == "/clock" && (method == "POST" || method == "GET")) {
      if (body.is_object() && body.contains("mode")) {
        const std::string mode = body["mode"].get<std::string>();
        if (mode == "manual" && !manual_clock) {
          manual_now = clock();
          manual_clock = true;
        } else if (mode == "real" && manual_clock) {
          epoch = std::chrono::steady_clock::now() -
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(manual_now));
          manual_clock = false;
        } else if (mode != "manual" && mode != "real") {
          throw std::runtime_error("clock mode must be manual or real");
        }
      }
      if (body.is_object() && body.contains("advanceSeconds")) {
        if (!manual_clock) throw std::runtime_error("advanceSeconds needs the manual clock (mode: manual)");
        const double n = body["advanceSeconds"].get<double>();
        if (n < 0) throw std::runtime_error("advanceSeconds must not be negative");
        manual_now += n;
        co_await fire_due();
      }
      co_return json{{"mode", manual_clock ? "manual" : "real"}, {"now", clock()}};
    }
    const std::string sp = "/sandboxes/";
    // Control plane: force a state (and stop reason), cause `test`.
    if (method == "POST" && path.rfind(sp, 0) == 0 && path.size() > sp.size() + 6 &&
        path.substr(path.size() - 6) == "/state") {
      std::string id = path.substr(sp.size(), path.size() - sp.size() - 6);
      auto it = sandboxes.find(id);
      if (it == sandboxes.end()) throw std::runtime_error("no sandbox " + id);
      const std::string state = body.value("state", "");
      if (state == "Stopped") co_await set_stopped(id, body.value("stoppedReason", "UserStopped"), "test", clock());
      else if (state == "Running") co_await set_running(id, "test");
      else if (!state.empty()) transition(it->second, state, "test");
      else throw std::runtime_error("state is required");
      it = sandboxes.find(id);
      co_return it == sandboxes.end() ? json(nullptr) : sandbox_doc(it->second);
    }
    if (method == "POST" && path.rfind(sp, 0) == 0 && path.size() > sp.size() + 12 &&
        path.substr(path.size() - 12) == "/docker-exec") {
      std::string id = path.substr(sp.size(), path.size() - sp.size() - 12);
      auto it = sandboxes.find(id);
      if (it == sandboxes.end()) throw std::runtime_error("no sandbox " + id);
      auto r = co_await guest->run_out_of_band(it->second.container, body.value("script", ""), body.value("root", true));
      co_return json{{"exitCode", r.exit_code}, {"stdout", r.stdout_bytes}, {"stderr", r.stderr_bytes}};
    }
    throw std::runtime_error("unknown control route " + method + " " + path);
  }

  // E-62, derived from the request log (so a reset clears them too) and the live state.
  json counters() const {
    json c{{"creates", 0}, {"deletes", json::object()}, {"lists", json::object()}, {"execs", json::object()},
           {"unauthorized", json::object()}, {"forbidden", 0}, {"tooManyRequests", 0}, {"faultsFired", 0}, {"live", 0}};
    auto bump = [](json& counter, const std::string& key) { counter[key] = counter.value(key, 0) + 1; };
    for (const auto& r : log) {
      const std::string route = r.value("route", "");
      const int status = r.contains("status") && r["status"].is_number() ? r["status"].get<int>() : 0;
      if (route == "create" && status == 200) c["creates"] = c["creates"].get<int>() + 1;
      if (route == "delete") bump(c["deletes"], status ? std::to_string(status) : r.value("outcome", "none"));
      if (route == "exec") bump(c["execs"], r.value("sandbox", ""));
      if (route == "unauthorized") bump(c["unauthorized"], r["alias"].is_string() ? r["alias"].get<std::string>() : "(none)");
      if (route == "list") {
        std::string selector;
        for (const auto& q : r.value("query", json::array()))
          if (q[0] == "labels") selector = q[1].get<std::string>();
        bump(c["lists"], selector);
      }
      if (status == 403) c["forbidden"] = c["forbidden"].get<int>() + 1;
      if (status == 429) c["tooManyRequests"] = c["tooManyRequests"].get<int>() + 1;
    }
    int fired = 0, live = 0;
    for (const auto& f : faults) fired += f.fired;
    for (const auto& [id, s] : sandboxes) live += s.container.empty() ? 0 : 1;
    c["faultsFired"] = fired;
    c["live"] = live;
    return c;
  }

  asio::awaitable<void> shutdown_all() {
    boost::system::error_code ec;
    acceptor.close(ec);
    std::vector<std::string> containers;
    for (const auto& [id, s] : sandboxes)
      if (!s.container.empty()) containers.push_back(s.container);
    sandboxes.clear();
    for (const auto& c : containers) co_await guest->remove(c);
    co_await guest->reap();
  }
};

Emulator::Emulator(EmulatorOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Emulator::~Emulator() {
  try {
    stop();
  } catch (...) {
  }
}

void Emulator::start() {
  impl_->bind();
  auto reaped = asio::co_spawn(impl_->io, impl_->guest->reap(), asio::use_future);
  asio::co_spawn(impl_->io, impl_->accept_loop(), asio::detached);
  asio::co_spawn(impl_->io, impl_->timer_loop(), asio::detached);
  impl_->running = true;
  impl_->thread = std::thread([this] { impl_->io.run(); });
  reaped.get();
}

void Emulator::run_foreground() {
  impl_->bind();
  asio::co_spawn(impl_->io, impl_->guest->reap(), asio::detached);
  asio::co_spawn(impl_->io, impl_->accept_loop(), asio::detached);
  asio::co_spawn(impl_->io, impl_->timer_loop(), asio::detached);
  std::cout << base_url() << std::endl;
  asio::signal_set signals(impl_->io, SIGINT, SIGTERM);
  signals.async_wait([this](const boost::system::error_code&, int) {
    asio::co_spawn(impl_->io, impl_->shutdown_all(), [this](std::exception_ptr) { impl_->io.stop(); });
  });
  impl_->io.run();
}

void Emulator::stop() {
  if (!impl_->running.exchange(false)) return;
  auto done = asio::co_spawn(impl_->io, impl_->shutdown_all(), asio::use_future);
  done.get();
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::uint16_t Emulator::port() const { return impl_->acceptor.local_endpoint().port(); }
std::string Emulator::base_url() const { return impl_->base_url(); }
std::string Emulator::group_path() const { return impl_->group_path(); }
const std::string& Emulator::instance() const { return impl_->opt.instance; }

json Emulator::control(const std::string& method, const std::string& path, json body) {
  auto future = asio::co_spawn(
      impl_->io,
      [this, method, path, body]() -> asio::awaitable<json> { co_return co_await impl_->control_op(method, path, body); },
      asio::use_future);
  return future.get();
}

}  // namespace maf::sandbox::acas::emulator

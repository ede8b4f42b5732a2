// The emulator's HTTP side: routing, state, faults and the request log (acas.md §4). The
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
#include <thread>

#include "../src/response.hpp"
#include "docker_guest.hpp"
#include "emulator.hpp"

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
  static Reply of(int status, const json& j) { return Reply{status, j.dump(), "application/json", {}, false}; }
};

struct Fault {
  int id = 0;
  std::string route, method, sandbox;
  std::optional<std::regex> command;
  std::optional<std::regex> path;  // E-40: on the guest path of a files.* route, else the URL path
  std::string command_text;
  int skip = 0, times = 1, seen = 0, fired = 0;
  std::string action = "status";  // status | delay | drop | reset | hang
  int code = 500;
  json headers = json::object();
  std::optional<std::string> body;
  int delay_ms = 0;
  bool after_effect = false;
};

struct Sandbox {
  std::string id, state = "Running", container, image;
  json labels = json::object();
  json create_body;
  json lifecycle = json::object();
  std::vector<json> lifecycle_posts;
  std::string created_at;
  int execs = 0;
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
  json config{{"listMode", "array"}, {"pageSize", 2}, {"deleteLatencyMs", 0}, {"deleteMissing", 204},
              {"execOutputCap", 1048576}, {"fifoReadMaxMs", 60000},
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

  asio::awaitable<void> session(tcp::socket socket) {
    boost::beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(std::uint64_t{256} << 20);
      boost::system::error_code ec;
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
      json record{{"seq", ++seq}, {"method", in.method}, {"target", in.target}, {"path", in.path}};
      json qj = json::array();
      for (const auto& [k, v] : in.query) qj.push_back({k, v});
      record["query"] = qj;
      Reply reply = co_await handle(in, record);
      if (reply.hang) {
        // E-41 `hang`: logged at once (tests read it while the client waits), then nothing
        // is sent until the client closes (or the emulator stops).
        record["outcome"] = "hung";
        record["status"] = nullptr;
        log.push_back(record);
        boost::system::error_code ignore;
        co_await socket.async_wait(tcp::socket::wait_read, asio::redirect_error(asio::use_awaitable, ignore));
        socket.close(ignore);
        co_return;
      }
      if (reply.drop) {
        record["outcome"] = reply.reset ? "reset-by-fault" : "dropped-by-fault";
        record["status"] = nullptr;
        if (record.contains("route")) log.push_back(record);
        boost::system::error_code ignore;
        if (reply.reset) socket.set_option(asio::socket_base::linger(true, 0), ignore);
        else socket.shutdown(tcp::socket::shutdown_both, ignore);
        socket.close(ignore);
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
      record["outcome"] = "completed";
      std::optional<std::size_t> index;
      if (record.contains("route")) {
        index = log.size();
        log.push_back(record);
      }
      co_await http::async_write(socket, res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec && index && *index < log.size()) log[*index]["outcome"] = "client-gone-before-response";
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
    std::string alias;
    if (in.authorization.rfind("Bearer ", 0) == 0) {
      auto it = tokens.find(in.authorization.substr(7));
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
    if (in.path.find("/providers/") != std::string::npos) co_return Reply::of(404, problem(404, "NotFound"));
    const std::string prefix = group_path();
    if (in.path.rfind(prefix, 0) != 0 || (in.path.size() > prefix.size() && in.path[prefix.size()] != '/'))
      co_return Reply::of(404, problem(404, "SandboxGroupNotFound"));
    std::vector<std::string> seg;
    {
      std::string rest = in.path.substr(prefix.size());
      std::size_t pos = 0;
      while (pos < rest.size()) {
        auto next = rest.find('/', pos + 1);
        std::string s = rest.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
        if (!s.empty()) seg.push_back(s);
        if (next == std::string::npos) break;
        pos = next;
      }
    }
    std::string route, id;
    const std::string& m = in.method;
    auto at = [&](std::size_t i) -> std::string { return i < seg.size() ? seg[i] : std::string(); };
    if (seg.size() == 1 && seg[0] == "sandboxes") route = m == "PUT" ? "create" : m == "GET" ? "list" : "";
    else if (seg.size() >= 2 && seg[0] == "sandboxes") {
      id = seg[1];
      if (seg.size() == 2) route = m == "GET" ? "get" : m == "DELETE" ? "delete" : "";
      else if (seg.size() == 3 && m == "POST" &&
               (seg[2] == "resume" || seg[2] == "stop" || seg[2] == "lifecycle"))
        route = seg[2];
      else if (seg.size() == 3 && m == "POST" && seg[2] == "executeShellCommand") route = "exec";
      else if (seg.size() == 3 && seg[2] == "files")
        route = m == "PUT" ? "files.put" : m == "GET" ? "files.get" : m == "DELETE" ? "files.delete" : "";
      else if (seg.size() == 4 && seg[2] == "files" && m == "GET" && (seg[3] == "stat" || seg[3] == "list"))
        route = "files." + seg[3];
      else if (seg.size() == 4 && seg[2] == "files" && m == "POST" && seg[3] == "mkdir") route = "files.mkdir";
    } else if (seg.size() == 2 && seg[0] == "diskimages" && seg[1] == "public" && m == "GET") route = "images.public";
    else if (seg.size() == 1 && seg[0] == "diskimages" && m == "GET") route = "images.list";
    (void)at;
    if (route.empty()) co_return Reply::of(404, problem(404, "NotFound", "unknown route"));
    record["route"] = route;
    if (!id.empty()) record["sandbox"] = id;
    json parsed = in.content_type.rfind("application/json", 0) == 0 ? json::parse(in.body, nullptr, false) : json();
    if (!parsed.is_discarded() && !parsed.is_null()) record["body"] = parsed;
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

    const std::string fault_path = route.rfind("files.", 0) == 0 ? in.param("path") : in.path;
    Fault* fault = match_fault(route, m, id, command, fault_path);
    if (fault) record["fault"] = fault->id;
    if (fault && fault->delay_ms > 0) {
      asio::steady_timer t(io, std::chrono::milliseconds(fault->delay_ms));
      co_await t.async_wait(asio::use_awaitable);
    }
    if (fault && fault->action != "delay" && !fault->after_effect) co_return fault_reply(*fault);
    if (!id.empty() && !is_guid(id))
      co_return Reply::of(400, json{{"title", "One or more validation errors occurred."}, {"status", 400},
                                    {"errors", {{"id", {"The input was not valid."}}}}});
    Reply reply;
    try {
      reply = co_await dispatch(route, id, in, parsed, record);
    } catch (const std::exception& e) {
      reply = Reply::of(500, problem(500, "InternalError", e.what()));
    }
    if (fault && fault->action != "delay" && fault->after_effect) co_return fault_reply(*fault);
    co_return reply;
  }

  // A managed-identity token endpoint (acas.md §1.1 #4/#5), so the backend's token source is
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

  // The Entra client-credentials grant (acas.md §1.1 #2) at `/{tenant}/oauth2/v2.0/token`:
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
                     const std::string& command, const std::string& path) {
    for (auto& f : faults) {
      if (f.times > 0 && f.fired >= f.times) continue;
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
    Reply r{f.code, f.body ? *f.body : body.dump(), "application/json", {}, false};
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
      if (it == sandboxes.end()) co_return Reply{config.value("deleteMissing", 204), "", "application/json", {}, false};
      if (it->second.state == "Deleting") co_return Reply{204, "", "application/json", {}, false};
      it->second.state = "Deleting";
      asio::co_spawn(io, finish_delete(id), asio::detached);
      co_return Reply{200, "", "application/json", {}, false};
    }
    if (it == sandboxes.end()) co_return Reply::of(404, problem(404, "SandboxNotFound", "Requested document not found."));
    Sandbox& s = it->second;
    if (route == "get") co_return Reply::of(200, sandbox_doc(s));
    if (s.state == "Deleting") co_return Reply::of(409, problem(409, "SandboxDeleting"));
    if (route == "resume") {
      s.state = "Running";
      co_return Reply::of(200, json::object());
    }
    if (route == "stop") {
      s.state = "Stopped";
      co_return Reply::of(200, json{{"id", random_hex(8)}, {"sandboxId", s.id}, {"createdAtUtc", now_iso()}});
    }
    if (route == "lifecycle") {
      s.lifecycle_posts.push_back(body);
      if (body.is_object()) s.lifecycle = body;
      co_return Reply::of(200, s.lifecycle);
    }
    if (route == "exec") {
      if (!body.is_object() || !body.contains("command") || !body["command"].is_string())
        co_return Reply::of(400, problem(400, "One or more validation errors occurred.", "command is required"));
      std::string wd = body.contains("workingDirectory") && body["workingDirectory"].is_string()
                           ? body["workingDirectory"].get<std::string>()
                           : "/";
      ++s.execs;
      std::string container = s.container;
      auto cap = config.value("execOutputCap", 1048576);
      auto r = co_await guest->exec(container, body["command"].get<std::string>(), wd, static_cast<std::size_t>(cap));
      record["exec"] = {{"exitCode", r.exit_code}, {"stdoutBytes", r.stdout_bytes.size()},
                        {"stderrBytes", r.stderr_bytes.size()}, {"truncated", r.truncated}};
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
      a = co_await guest->stat(s.container, path);
      if (a.status == 200) {
        auto nl = a.body.find('\n');
        std::string line = a.body.substr(0, nl);
        std::string target = nl == std::string::npos ? "" : a.body.substr(nl + 1);
        while (!target.empty() && target.back() == '\n') target.pop_back();
        co_return Reply{200, entry_json(line, path, target), "application/json", {}, false};
      }
    } else if (route == "files.list") {
      a = co_await guest->list(s.container, path);
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
      a = co_await guest->download(s.container, path, std::chrono::milliseconds(config.value("fifoReadMaxMs", 60000)));
      if (a.status == 200) co_return Reply{200, std::move(a.body), "application/octet-stream", {}, false};
    } else if (route == "files.put") {
      int mode = 420;
      if (in.has("mode")) {
        std::string v = in.param("mode");
        // decimal only; "0o777" is a 400.
        if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 6)
          co_return Reply::of(400, problem(400, "One or more validation errors occurred.", "mode must be decimal"));
        mode = std::stoi(v);
      }
      a = co_await guest->upload(s.container, path, in.param("createDirs") == "true", mode, in.body);
      if (a.status == 200) co_return Reply::of(200, json::object());
    } else if (route == "files.delete") {
      a = co_await guest->remove_path(s.container, path, in.param("recursive") == "true");
      if (a.status == 200) co_return Reply{204, "", "application/json", {}, false};
    } else if (route == "files.mkdir") {
      a = co_await guest->mkdir(s.container, path);
      if (a.status == 200) co_return Reply::of(200, json::object());
      if (a.status == 404) a.detail = "parent directory not found";
    }
    co_return Reply::of(a.status, problem(a.status, a.status == 404 ? "NotFound" : "FileOperationFailed", a.detail));
  }

  asio::awaitable<void> finish_delete(std::string id) {
    auto it = sandboxes.find(id);
    if (it == sandboxes.end()) co_return;
    std::string container = it->second.container;
    try {
      co_await guest->remove(container);
    } catch (const std::exception& e) {
      std::cerr << "acas-emulator: docker rm " << container << ": " << e.what() << "\n";
    }
    asio::steady_timer t(io, std::chrono::milliseconds(config.value("deleteLatencyMs", 0)));
    co_await t.async_wait(asio::use_awaitable);
    it = sandboxes.find(id);
    if (it == sandboxes.end()) co_return;
    tombstones.push_back(json{{"id", id}, {"labels", it->second.labels}, {"deletedAt", now_iso()}, {"cause", "api"}});
    sandboxes.erase(it);
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
    // §2.2.1: only the wire names count; autoSuspend/autoDelete are silently ignored.
    json lc = body.value("lifecycle", json::object());
    s.lifecycle = json::object();
    if (lc.is_object()) {
      if (lc.contains("autoSuspendPolicy")) s.lifecycle["autoSuspendPolicy"] = lc["autoSuspendPolicy"];
      if (lc.contains("autoDeletePolicy")) s.lifecycle["autoDeletePolicy"] = lc["autoDeletePolicy"];
    }
    s.container = co_await guest->start(image, s.id);
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
    for (const auto& [id, s] : sandboxes) {
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
      std::string link = base_url() + in.path + "?api-version=" + url_encode(in.param("api-version"));
      if (in.has("labels")) link += "&labels=" + url_encode(in.param("labels"));
      link += "&continuation=" + std::to_string(from + page);
      out["nextLink"] = link;
    }
    return Reply::of(200, out);
  }

  // ---- control plane (§4.7) -------------------------------------------------------------
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
      if (f.action != "status" && f.action != "delay" && f.action != "drop" && f.action != "reset" &&
          f.action != "hang")
        throw std::runtime_error("unknown fault action " + f.action);
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
    if (path == "/sandboxes" && method == "GET") {
      json live = json::array();
      for (const auto& [id, s] : sandboxes) {
        json d = sandbox_doc(s);
        d["container"] = s.container;
        d["image"] = s.image;
        d["execs"] = s.execs;
        d["lifecyclePosts"] = s.lifecycle_posts;
        d["createBody"] = s.create_body;
        live.push_back(d);
      }
      co_return json{{"live", live}, {"tombstones", tombstones}};
    }
    if (path == "/config" && method == "PUT") {
      for (const auto& [k, v] : body.items()) {
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
      for (auto& [id, s] : sandboxes) co_await guest->remove(s.container);
      sandboxes.clear();
      tombstones.clear();
      faults.clear();
      log = json::array();
      co_return json::object();
    }
    const std::string sp = "/sandboxes/";
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

  asio::awaitable<void> shutdown_all() {
    boost::system::error_code ec;
    acceptor.close(ec);
    for (auto& [id, s] : sandboxes) co_await guest->remove(s.container);
    sandboxes.clear();
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
  impl_->running = true;
  impl_->thread = std::thread([this] { impl_->io.run(); });
  reaped.get();
}

void Emulator::run_foreground() {
  impl_->bind();
  asio::co_spawn(impl_->io, impl_->guest->reap(), asio::detached);
  asio::co_spawn(impl_->io, impl_->accept_loop(), asio::detached);
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

// The emulator's own contract (E-n), driven over HTTP with bare libcurl rather than
// through the backend: the manual clock and lifecycle timers, createMode, the shaping fault
// actions, auth switches, hostile nextLinks, request timing and the in-container cap kill.
#include "acas_fixture.hpp"

#include <curl/curl.h>

#include <cstdio>
#include <map>
#include <thread>
#include <vector>

#include "maf/sandbox/support/labels.hpp"
#include "../src/response.hpp"
namespace acas_test {

struct HttpAnswer {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lowercase names
  int writes = 0;                              // body callbacks (E-41 trickle)
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

struct HttpCall {
  std::string method = "GET";
  std::string url;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::string> headers;
  std::string token = "emulator-token";  // empty: no Authorization header
  bool decode = false;                   // let curl undo a Content-Encoding
  long timeout_ms = 60000;
};

inline HttpAnswer http(const HttpCall& c) {
  HttpAnswer a;
  std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), curl_easy_cleanup);
  curl_easy_setopt(h.get(), CURLOPT_URL, c.url.c_str());
  curl_easy_setopt(h.get(), CURLOPT_CUSTOMREQUEST, c.method.c_str());
  curl_easy_setopt(h.get(), CURLOPT_TIMEOUT_MS, c.timeout_ms);
  curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
  if (c.decode) curl_easy_setopt(h.get(), CURLOPT_ACCEPT_ENCODING, "");
  if (c.method == "PUT" || c.method == "POST" || !c.body.empty()) {
    curl_easy_setopt(h.get(), CURLOPT_POSTFIELDS, c.body.data());
    curl_easy_setopt(h.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(c.body.size()));
  }
  curl_slist* list = nullptr;
  list = curl_slist_append(list, ("Content-Type: " + c.content_type).c_str());
  list = curl_slist_append(list, "Expect:");
  if (!c.token.empty()) list = curl_slist_append(list, ("Authorization: Bearer " + c.token).c_str());
  for (const auto& extra : c.headers) list = curl_slist_append(list, extra.c_str());
  curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, list);
  auto on_body = +[](char* p, size_t, size_t n, void* ud) -> size_t {
    auto* out = static_cast<HttpAnswer*>(ud);
    out->body.append(p, n);
    ++out->writes;
    return n;
  };
  auto on_header = +[](char* p, size_t, size_t n, void* ud) -> size_t {
    std::string line(p, n);
    auto colon = line.find(':');
    if (colon != std::string::npos) {
      std::string k = line.substr(0, colon), v = line.substr(colon + 1);
      for (auto& ch : k) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      while (!v.empty() && (v.front() == ' ')) v.erase(0, 1);
      while (!v.empty() && (v.back() == '\r' || v.back() == '\n')) v.pop_back();
      static_cast<HttpAnswer*>(ud)->headers[k] = v;
    }
    return n;
  };
  curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &a);
  curl_easy_setopt(h.get(), CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h.get(), CURLOPT_HEADERDATA, &a);
  a.code = curl_easy_perform(h.get());
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &a.status);
  curl_slist_free_all(list);
  return a;
}

/// Output of a host command (docker inspect and the like), trailing newline removed.
inline std::string host_output(const std::string& command) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(command.c_str(), "r"), pclose);
  if (!p) return out;
  char buf[4096];
  while (auto n = fread(buf, 1, sizeof buf, p.get())) out.append(buf, n);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace acas_test

namespace {

using namespace acas_test;
using nlohmann::json;

constexpr const char* kApi = "2026-02-01-preview";

struct Api {
  Fixture& f;
  std::string url(const std::string& rest, const std::string& query = "") const {
    return f.emulator->base_url() + f.emulator->group_path() + rest + "?api-version=" + kApi + query;
  }
  HttpAnswer call(std::string method, const std::string& rest, json body = nullptr, std::string query = "") const {
    HttpCall c;
    c.method = std::move(method);
    c.url = url(rest, query);
    if (!body.is_null()) c.body = body.dump();
    return http(c);
  }
  std::string create(json lifecycle = nullptr) const {
    json body{{"sourcesRef", {{"diskImage", {{"name", "busybox"}, {"isPublic", true}}}}},
              {"labels", {{"maf-sandbox.scope", f.scope}}}};
    if (!lifecycle.is_null()) body["lifecycle"] = lifecycle;
    auto a = call("PUT", "/sandboxes", body);
    REQUIRE(a.status == 200);
    return a.json()["id"].get<std::string>();
  }
  json get(const std::string& id) const { return call("GET", "/sandboxes/" + id).json(); }
  HttpAnswer exec(const std::string& id, const std::string& command) const {
    return call("POST", "/sandboxes/" + id + "/executeShellCommand", json{{"command", command}});
  }
  json clock(json body) const { return f.emulator->control("POST", "/clock", std::move(body)); }
  // The emulator's full record of one sandbox, live or tombstone.
  json internal(const std::string& id) const {
    auto all = f.emulator->control("GET", "/sandboxes");
    for (const auto& kind : {"live", "tombstones"})
      for (const auto& s : all[kind])
        if (s["id"] == id) return s;
    return nullptr;
  }
  std::string container(const std::string& id) const { return internal(id)["container"].get<std::string>(); }
  json log(const std::string& route) const { return f.requests(route); }
};

std::string paused(const std::string& container) {
  return host_output("docker inspect -f '{{.State.Paused}}' " + container + " 2>/dev/null");
}

std::vector<std::string> causes(const json& transitions) {
  std::vector<std::string> out;
  for (const auto& t : transitions) out.push_back(t["to"].get<std::string>() + "/" + t["cause"].get<std::string>());
  return out;
}

std::string base64url(const std::string& in) {
  static constexpr char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  unsigned val = 0;
  int bits = -6;
  for (unsigned char c : in) {
    val = ((val << 8) | c) & 0xffffffu;
    bits += 8;
    while (bits >= 0) {
      out.push_back(k[(val >> bits) & 0x3f]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(k[((val << 8) >> (bits + 8)) & 0x3f]);
  return out;
}

std::string jwt(const json& aud) {
  return base64url(R"({"alg":"none","typ":"JWT"})") + "." + base64url(json{{"aud", aud}, {"sub", "t"}}.dump()) + ".sig";
}

}  // namespace

TEST_CASE("E-50/E-17/E-15/E-16: the manual clock fires auto-suspend and auto-delete; stop pauses, exec resumes") {
  Fixture f;
  Api api{f};
  CHECK(api.clock({{"mode", "manual"}})["mode"] == "manual");
  const std::string a = api.create(json{{"autoSuspendPolicy", {{"enabled", true}, {"interval", 60}, {"mode", "Memory"}}},
                                        {"autoDeletePolicy", {{"enabled", true}, {"deleteIntervalInSeconds", 120}}}});
  const std::string b = api.create();  // no lifecycle: the platform default, 300 s, no auto-delete
  const std::string ca = api.container(a), cb = api.container(b);
  CHECK(api.get(b)["lifecycle"]["autoSuspendPolicy"]["interval"] == 300);
  CHECK_THROWS(api.clock({{"advanceSeconds", -1}}));

  api.clock({{"advanceSeconds", 59}});
  CHECK(api.get(a)["state"] == "Running");
  api.clock({{"advanceSeconds", 1}});
  auto doc = api.get(a);
  CHECK(doc["state"] == "Stopped");
  CHECK(doc["stateDetails"]["stoppedReason"] == "Idle");
  CHECK(paused(ca) == "true");
  CHECK(paused(cb) == "false");

  // E-16: exec on a Stopped sandbox resumes it first (unpaused, Running) and counts as activity.
  auto r = api.exec(a, "echo back");
  CHECK(r.status == 200);
  CHECK(r.json()["stdout"] == "back\n");
  CHECK(api.get(a)["state"] == "Running");
  CHECK(paused(ca) == "false");

  // Idle again 60 s later (suspend), then deleted 120 s after the stop: one advance fires both.
  api.clock({{"advanceSeconds", 200}});
  auto tomb = api.internal(a);
  REQUIRE(tomb.contains("cause"));
  CHECK(tomb["cause"] == "auto-delete");
  CHECK(causes(tomb["transitions"]) == std::vector<std::string>{"Running/api", "Stopped/auto-suspend",
                                                                  "Running/auto-resume", "Stopped/auto-suspend",
                                                                  "Deleting/auto-delete"});
  CHECK(host_output("docker ps -aq --filter id=" + ca).empty());
  CHECK(api.call("GET", "/sandboxes/" + a).status == 404);

  // B: 260 s idle so far; suspended at 300, never auto-deleted.
  api.clock({{"advanceSeconds", 39}});
  CHECK(api.get(b)["state"] == "Running");
  api.clock({{"advanceSeconds", 1}});
  CHECK(api.get(b)["state"] == "Stopped");
  api.clock({{"advanceSeconds", 100000}});
  CHECK(api.get(b)["state"] == "Stopped");
  CHECK(paused(cb) == "true");

  // E-15: resume unpauses; stop pauses with UserStopped; a Disabled stop reason blocks both
  // resume and exec (409).
  CHECK(api.call("POST", "/sandboxes/" + b + "/resume").status == 200);
  CHECK(paused(cb) == "false");
  CHECK(api.call("POST", "/sandboxes/" + b + "/stop").status == 200);
  CHECK(api.get(b)["stateDetails"]["stoppedReason"] == "UserStopped");
  CHECK(paused(cb) == "true");
  // requireJsonBodyOnStopResume: a body-less resume hangs (CYRUS C7); `{}` is answered.
  f.emulator->control("PUT", "/config", json{{"requireJsonBodyOnStopResume", true}});
  HttpCall bare;
  bare.method = "POST";
  bare.url = api.url("/sandboxes/" + b + "/resume");
  bare.timeout_ms = 300;
  CHECK(http(bare).code == CURLE_OPERATION_TIMEDOUT);
  CHECK(api.log("resume").back()["outcome"] == "hung");
  CHECK(api.get(b)["state"] == "Stopped");
  CHECK(api.call("POST", "/sandboxes/" + b + "/resume", json::object()).status == 200);
  CHECK(api.call("POST", "/sandboxes/" + b + "/stop", json::object()).status == 200);
  f.emulator->control("PUT", "/config", json{{"requireJsonBodyOnStopResume", false}});
  f.emulator->control("POST", "/sandboxes/" + b + "/state", json{{"state", "Stopped"}, {"stoppedReason", "Disabled"}});
  CHECK(api.call("POST", "/sandboxes/" + b + "/resume").status == 409);
  CHECK(api.exec(b, "true").status == 409);
  CHECK(causes(api.internal(b)["transitions"]) ==
        std::vector<std::string>{"Running/api", "Stopped/auto-suspend", "Running/api", "Stopped/api", "Running/api",
                                 "Stopped/api"});
  CHECK(api.call("DELETE", "/sandboxes/" + b).status == 200);  // a paused container is removed too
  for (int i = 0; i < 600 && api.call("GET", "/sandboxes/" + b).status != 404; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(api.internal(b)["cause"] == "api");
  CHECK(host_output("docker ps -aq --filter id=" + cb).empty());
  f.emulator->control("POST", "/reset");
  CHECK(f.emulator->control("POST", "/clock")["mode"] == "real");
}

TEST_CASE("E-13: createMode creating turns Running after N GETs or a delay on the clock; failing ends in Failed") {
  Fixture f;
  Api api{f};
  CHECK_THROWS(f.emulator->control("PUT", "/config", json{{"createMode", "sometimes"}}));
  f.emulator->control("PUT", "/config", json{{"createMode", "creating"}, {"createGets", 2}});
  auto created = api.call("PUT", "/sandboxes",
                          json{{"sourcesRef", {{"diskImage", {{"name", "busybox"}, {"isPublic", true}}}}}});
  CHECK(created.json()["state"] == "Creating");
  const std::string a = created.json()["id"];
  CHECK(api.exec(a, "true").status == 409);  // not before it is Running (guessed)
  CHECK(api.get(a)["state"] == "Creating");
  CHECK(api.get(a)["state"] == "Creating");
  CHECK(api.get(a)["state"] == "Running");
  CHECK(api.exec(a, "echo up").json()["stdout"] == "up\n");

  f.emulator->control("PUT", "/config", json{{"createGets", 0}, {"createDelayMs", 5000}});
  api.clock({{"mode", "manual"}});
  const std::string b = api.create();
  CHECK(api.get(b)["state"] == "Creating");
  api.clock({{"advanceSeconds", 4}});
  CHECK(api.get(b)["state"] == "Creating");
  api.clock({{"advanceSeconds", 1}});
  CHECK(api.get(b)["state"] == "Running");

  f.emulator->control("PUT", "/config", json{{"createMode", "failing"}, {"createGets", 1}});
  const std::string c = api.create();
  CHECK(api.get(c)["state"] == "Creating");
  CHECK(api.get(c)["state"] == "Failed");
  CHECK(api.internal(c)["container"] == "");
  CHECK(causes(api.internal(c)["transitions"]) == std::vector<std::string>{"Creating/api", "Failed/create"});
  for (const auto& id : {a, b, c}) CHECK(api.call("DELETE", "/sandboxes/" + id).status == 200);
  f.emulator->control("POST", "/reset");
}

TEST_CASE("E-41/E-60: trickle, mutate, encoding and drop at each point of the exchange; an octet body logged by its head") {
  Fixture f;
  Api api{f};
  const std::string id = api.create();
  const std::string sb = "/sandboxes/" + id;
  auto plain = api.get(id);

  // trickle: headers, then 8-byte pieces; the answer is whole.
  f.fault({{"route", "get"}, {"action", "trickle"}, {"chunkBytes", 8}, {"pauseMs", 20}});
  auto t = api.call("GET", sb);
  CHECK(t.status == 200);
  CHECK(t.json()["id"] == id);
  CHECK(t.writes >= 2);
  CHECK(api.log("get").back()["fault"] == 1);

  // mutate: delete a key, set values (top-level and by JSON pointer), wrap.
  api.exec(id, "mkdir -p /m && echo hi > /m/f");
  f.fault({{"route", "files.stat"}, {"action", "mutate"}, {"delete", {"isDir"}}, {"set", {{"size", -1}}}});
  auto st = api.call("GET", sb + "/files/stat", nullptr, "&path=/m/f").json();
  CHECK_FALSE(st.contains("isDir"));
  CHECK(st["size"] == -1);
  CHECK(st["isSymlink"] == false);
  f.fault({{"route", "files.list"}, {"action", "mutate"}, {"set", {{"/entries/0/path", "/elsewhere/f"}}},
           {"delete", {"/entries/0/isSymlink"}}});
  auto ls = api.call("GET", sb + "/files/list", nullptr, "&path=/m").json();
  CHECK(ls["entries"][0]["path"] == "/elsewhere/f");
  CHECK_FALSE(ls["entries"][0].contains("isSymlink"));
  f.fault({{"route", "exec"}, {"action", "mutate"}, {"set", {{"stdout", nullptr}}}, {"wrap", "value"}});
  auto wrapped = api.exec(id, "echo x").json();
  CHECK(wrapped["value"]["stdout"].is_null());
  CHECK(wrapped["value"]["exitCode"] == 0);

  // encoding: gzip on the wire with Content-Encoding; curl's decoder gets the document back.
  f.fault({{"route", "get"}, {"action", "encoding"}, {"times", 2}});
  auto raw = api.call("GET", sb);
  CHECK(raw.headers["content-encoding"] == "gzip");
  REQUIRE(raw.body.size() > 2);
  CHECK(raw.body.substr(0, 2) == "\x1f\x8b");
  HttpCall decoded;
  decoded.url = api.url(sb);
  decoded.decode = true;
  CHECK(http(decoded).json() == plain);

  // drop before the body: the upload never lands.
  f.fault({{"route", "files.put"}, {"action", "drop"}, {"at", "before-body"}});
  HttpCall put;
  put.method = "PUT";
  put.url = api.url(sb + "/files", "&path=/m/new");
  put.content_type = "application/octet-stream";
  put.body = std::string(100000, 'x');
  CHECK(http(put).code != CURLE_OK);
  auto before = api.log("files.put").back();
  CHECK(before["dropAt"] == "before-body");
  CHECK(before["outcome"] == "dropped-by-fault");
  CHECK(api.call("GET", sb + "/files/stat", nullptr, "&path=/m/new").status == 404);
  // E-60: an octet body is logged as its first 4 KiB (base64), beside its full size.
  std::string upload;
  for (int i = 0; i < 5000; ++i) upload.push_back(static_cast<char>(i % 251));
  put.body = upload;
  CHECK(http(put).status == 200);
  auto landed = api.log("files.put").back();
  CHECK(landed["bodySize"] == 5000);
  CHECK_FALSE(landed.contains("body"));
  CHECK(maf::sandbox::acas::detail::base64_decode(landed["bodyHead"].get<std::string>()) == upload.substr(0, 4096));
  // drop after the request, after the real effect: the directory exists, no answer came.
  f.fault({{"route", "files.mkdir"}, {"action", "drop"}, {"afterEffect", true}});
  CHECK(api.call("POST", sb + "/files/mkdir", json{{"path", "/m/d"}}).code != CURLE_OK);
  CHECK(api.call("GET", sb + "/files/stat", nullptr, "&path=/m/d").json()["isDir"] == true);
  CHECK(api.log("files.mkdir").back()["dropAt"] == "after-request");
  // drop after the status line, and mid-body (the headers promise more than arrives).
  f.fault({{"route", "get"}, {"action", "drop"}, {"at", "after-status"}});
  // curl reads a bare status line closed by EOF as an answer without headers or body.
  auto status_only = api.call("GET", sb);
  CHECK(status_only.headers.count("content-length") == 0);
  CHECK(status_only.body.empty());
  CHECK(api.log("get").back()["dropAt"] == "after-status");
  f.fault({{"route", "get"}, {"action", "drop"}, {"at", "mid-body"}});
  auto half = api.call("GET", sb);
  CHECK(half.code == CURLE_PARTIAL_FILE);
  CHECK_FALSE(half.body.empty());
  CHECK(half.body.size() < std::stoul(half.headers["content-length"]));
  CHECK(api.log("get").back()["outcome"] == "dropped-by-fault");
  CHECK_THROWS(f.fault({{"route", "get"}, {"action", "drop"}, {"at", "sometime"}}));
  f.emulator->control("POST", "/reset");
}

TEST_CASE("E-3/E-42/E-5/E-32/E-60/E-23: audience, forbidFirst, strict api-version, hostile nextLink, timing, in-container kill") {
  Fixture f;
  Api api{f};
  // E-3: a JWT is checked for its audience; an opaque token is not.
  f.emulator->control("PUT", "/config", json{{"tokens", {{"good", jwt("https://dynamicsessions.io")},
                                                         {"many", jwt({"x", "https://dynamicsessions.io"})},
                                                         {"bad", jwt("https://management.azure.com")},
                                                         {"reader", "reader-token"}}},
                                             {"forbiddenAliases", {"reader"}}});
  HttpCall c;
  c.url = api.url("/sandboxes");
  c.token = jwt("https://dynamicsessions.io");
  CHECK(http(c).status == 200);
  c.token = jwt({"x", "https://dynamicsessions.io"});
  CHECK(http(c).status == 200);
  c.token = jwt("https://management.azure.com");
  auto bad = http(c);
  CHECK(bad.status == 401);
  CHECK(bad.headers["www-authenticate"].rfind("Bearer", 0) == 0);
  c.token = "reader-token";
  CHECK(http(c).status == 403);
  auto log = f.emulator->control("GET", "/requests");
  CHECK(log[0]["alias"] == "good");
  CHECK(log[2]["authError"] == "audience");
  CHECK(log[3]["alias"] == "reader");
  // E-42: the first n authenticated requests are refused.
  f.emulator->control("PUT", "/config", json{{"forbidFirst", 2}});
  CHECK(api.call("GET", "/sandboxes").status == 403);
  CHECK(api.call("GET", "/sandboxes").status == 403);
  CHECK(api.call("GET", "/sandboxes").status == 200);
  // E-42: every k-th request on the route is throttled with the configured Retry-After.
  f.emulator->control("PUT", "/config", json{{"throttle", {{"route", "list"}, {"every", 2}, {"retryAfter", 3}}}});
  std::vector<long> statuses;
  std::string retry_after;
  for (int i = 0; i < 4; ++i) {
    auto answer = api.call("GET", "/sandboxes");
    statuses.push_back(answer.status);
    if (answer.status == 429) retry_after = answer.headers["retry-after"];
  }
  CHECK(statuses == std::vector<long>{200, 429, 200, 429});
  CHECK(retry_after == "3");
  CHECK(api.log("list").back()["throttled"] == true);
  // E-62: counters over the log so far.
  auto counters = f.emulator->control("GET", "/counters");
  CHECK(counters["unauthorized"]["bad"] == 1);
  CHECK(counters["forbidden"] == 3);
  CHECK(counters["tooManyRequests"] == 2);
  CHECK(counters["lists"][""] == 7);  // 2 + 1 + 4 answered on the list route; 403s are route `forbidden`
  CHECK(counters["live"] == 0);
  f.emulator->control("PUT", "/config", json{{"throttle", nullptr}});

  // E-5: recorded always; strict mode refuses a missing or different value.
  f.emulator->control("PUT", "/config", json{{"strictApiVersion", true}});
  c.token = "emulator-token";
  c.url = f.emulator->base_url() + f.emulator->group_path() + "/sandboxes";
  CHECK(http(c).status == 400);
  c.url += "?api-version=2024-01-01";
  CHECK(http(c).status == 400);
  CHECK(api.call("GET", "/sandboxes").status == 200);
  CHECK(api.log("list").back()["apiVersion"] == kApi);

  // E-32: three public images, pages of two; the nextLink made hostile on request.
  f.emulator->control("PUT", "/config", json{{"listMode", "nextLink"}});
  auto next_link = [&] { return api.call("GET", "/diskimages/public").json()["nextLink"].get<std::string>(); };
  CHECK(next_link().rfind(f.emulator->base_url() + f.emulator->group_path() + "/diskimages/public?", 0) == 0);
  CHECK(next_link().find("continuation=2") != std::string::npos);
  f.emulator->control("PUT", "/config", json{{"nextLinkHostile", "host"}});
  CHECK(next_link().rfind("http://attacker.invalid:", 0) == 0);
  f.emulator->control("PUT", "/config", json{{"nextLinkHostile", "path"}});
  CHECK(next_link().rfind(f.emulator->base_url() + "/elsewhere/", 0) == 0);
  f.emulator->control("PUT", "/config", json{{"nextLinkHostile", "repeat"}});
  CHECK(next_link().find("continuation=0") != std::string::npos);
  f.emulator->control("PUT", "/config", json{{"listMode", "array"}, {"nextLinkHostile", ""}});

  // E-60: per-request timing, headers, body digest, outcome; the in-flight count per route.
  const std::string id = api.create();
  HttpCall e;
  e.method = "POST";
  e.url = api.url("/sandboxes/" + id + "/executeShellCommand");
  e.body = json{{"command", "sleep 1"}}.dump();
  e.headers = {"User-Agent: emu-test/1", "x-ms-client-request-id: req-1"};
  std::thread other([&] { http(e); });
  CHECK(http(e).status == 200);
  other.join();
  auto execs = api.log("exec");
  REQUIRE(execs.size() == 2);
  // Logged in completion order; one of the two arrived while the other ran.
  CHECK(execs[0]["inFlight"].get<int>() + execs[1]["inFlight"].get<int>() == 1);
  for (const auto& r : execs) {
    CHECK(r["userAgent"] == "emu-test/1");
    CHECK(r["clientRequestId"] == "req-1");
    CHECK(r["bodySha256"] == maf::sandbox::support::sha256_hex(e.body));
    CHECK(r["outcome"] == "completed");
    CHECK(r["completedMs"].get<double>() >= r["arrivedMs"].get<double>());
    CHECK(r["durationMs"].get<double>() >= 0);
    CHECK(r["arrivedAt"].get<std::string>().back() == 'Z');
    CHECK(r["responseBytes"].get<std::size_t>() > 0);
  }

  // E-24: a client gone mid-exec does not stop the command; the exec log says so.
  HttpCall leaving;
  leaving.method = "POST";
  leaving.url = api.url("/sandboxes/" + id + "/executeShellCommand");
  leaving.body = json{{"command", "sleep 1; echo done > /tmp/done"}}.dump();
  leaving.timeout_ms = 200;
  CHECK(http(leaving).code == CURLE_OPERATION_TIMEDOUT);
  json last;
  for (int i = 0; i < 200; ++i) {
    last = api.internal(id)["execLog"].back();
    if (last["command"] == "sleep 1; echo done > /tmp/done") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(last["clientGone"] == true);
  CHECK(api.log("exec").back()["outcome"] == "client-gone-before-response");
  CHECK(f.guest(id, "cat /tmp/done")["stdout"] == "done\n");

  // E-23: over the cap, the command's process group is killed inside the container (a
  // background child too), before the answer is sent.
  f.emulator->control("PUT", "/config", json{{"execOutputCap", 4096}});
  auto over = api.exec(id, "echo $$ > /tmp/p; sleep 1000 & echo $! > /tmp/q; exec yes").json();
  CHECK(over["exitCode"] == 137);
  CHECK(over["stdout"].get<std::string>().size() == 4096);
  CHECK(over["stderr"].get<std::string>().find("[adc] output exceeded 4096 bytes") != std::string::npos);
  CHECK(api.internal(id)["execLog"].back()["killed"] == true);
  auto gone = f.guest(id, "for p in $(cat /tmp/p) $(cat /tmp/q); do i=0; while [ -d /proc/$p ] && "
                          "! grep -q '^State:.*Z' /proc/$p/status 2>/dev/null; do i=$((i+1)); "
                          "[ $i -gt 100 ] && { echo alive $p; exit 1; }; sleep 0.1; done; done");
  CHECK(gone["exitCode"] == 0);
  CHECK(gone["stdout"] == "");
  f.emulator->control("POST", "/reset");
}

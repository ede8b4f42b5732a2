// The data plane's client side; see service.hpp.
#include "service.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "maf/sandbox/support/subprocess.hpp"
#include "response.hpp"
#include "said.hpp"

namespace maf::sandbox::acas::detail {
namespace {

std::chrono::milliseconds ms_of(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

bool retryable(RetryClass c, int status, bool has_retry_after) {
  switch (c) {
    case RetryClass::Read:
      return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
    case RetryClass::Idempotent:
      return (status == 429 && has_retry_after) || status == 503;
    case RetryClass::Create:
    case RetryClass::Exec:
      return status == 429 && has_retry_after;
  }
  return false;
}

// scheme://host[:port] of an absolute URL, or "" when it is not one.
std::string origin_of(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return {};
  auto slash = url.find('/', scheme + 3);
  return url.substr(0, slash);
}

std::string path_of(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return {};
  auto slash = url.find('/', scheme + 3);
  if (slash == std::string::npos) return "/";
  return url.substr(slash, url.find('?', slash) - slash);
}

}  // namespace

std::string url_encode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      out += b;
    }
  }
  return out;
}

Query one_query(std::string key, std::string value) {
  Query q;
  q.emplace_back(std::move(key), std::move(value));
  return q;
}

std::string json_path_body(const std::string& path) {
  nlohmann::json j = nlohmann::json::object();
  j["path"] = path;
  return j.dump();
}

namespace {
std::vector<std::string> base_headers(const std::string& bearer) {
  return {"Authorization: Bearer " + bearer, "Accept: application/json", "User-Agent: maf-sandbox-acas/0.1",
          "Expect:"};
}
}  // namespace

Service::Service(const AcasConfig& config, std::shared_ptr<AcasTokenSource> source, std::string authority)
    : config_(config),
      source_(std::move(source)),
      authority_(std::move(authority)),
      http_(std::make_unique<HttpClient>(static_cast<std::size_t>(config.http_workers))) {}

Service::~Service() { close(); }

void Service::close() {
  if (closed_.exchange(true)) return;
  std::exception_ptr failure;
  if (source_) {
    try {
      source_->close();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  http_->shutdown();
  // The source's text may carry a secret: only the fact is reported.
  if (failure) throw AcasCredentialError(said("the token source of authority '") + authority_ + "' failed to close");
}

void Service::validate_endpoint(const AcasConfig& config) {
  const std::string& e = config.endpoint;
  if (e.empty() || config.subscription_id.empty() || config.resource_group.empty() || config.sandbox_group.empty())
    throw ValueError(said("endpoint, subscription_id, resource_group and sandbox_group must be configured"));
  if (e.rfind("https://", 0) == 0) return;
  if (e.rfind("http://", 0) == 0 && config.allow_insecure_loopback) {
    std::string host = origin_of(e).substr(7);
    host = host.substr(0, host.rfind(':'));
    if (host == "127.0.0.1" || host == "localhost" || host == "[::1]") return;
  }
  throw ValueError(said("endpoint '") + e +
                   "' must be https:// (http:// only for a loopback host with allow_insecure_loopback)");
}

std::string Service::url(const std::string& path, const std::vector<std::pair<std::string, std::string>>& query) const {
  std::string base = config_.endpoint;
  while (!base.empty() && base.back() == '/') base.pop_back();
  // no /providers/Microsoft.App segment.
  std::string u = base + "/subscriptions/" + url_encode(config_.subscription_id) + "/resourceGroups/" +
                  url_encode(config_.resource_group) + "/sandboxGroups/" + url_encode(config_.sandbox_group) + path +
                  "?api-version=" + url_encode(config_.api_version);
  for (const auto& [k, v] : query) {
    u += '&';
    u += url_encode(k);
    u += '=';
    u += url_encode(v);
  }
  return u;
}

boost::asio::awaitable<std::string> Service::host_token() {
  AcasAccessToken answer;
  try {
    answer = co_await source_->get_token(config_.scope);
  } catch (const AcasCredentialError&) {
    throw;
  } catch (const std::exception&) {
    // the provider's text may carry a secret; only the authority is named.
    throw AcasCredentialError(said("the token source of authority '") + authority_ + "' failed to give a token");
  }
  if (answer.token.empty())
    throw AcasCredentialError(said("the token source of authority '") + authority_ + "' gave an empty token");
  TokenAnswer t;
  t.token = std::move(answer.token);
  t.expires_on = answer.expires_on;
  co_return remember(t, Clock::now());
}

std::optional<std::string> Service::cached_token(Clock::time_point now) const {
  std::lock_guard guard(token_state_);
  // "The credential chain": refresh when fewer than five minutes remain.
  if (!cached_token_.empty() && now + std::chrono::minutes(5) < token_expires_) return cached_token_;
  return std::nullopt;
}

std::string Service::store_token(std::string token, Clock::time_point expires) {
  std::lock_guard guard(token_state_);
  cached_token_ = std::move(token);
  token_expires_ = expires;
  return cached_token_;
}

boost::asio::awaitable<std::string> Service::token() {
  if (auto cached = cached_token(Clock::now())) co_return std::move(*cached);
  // One refresh at a time: a client is shared by every coroutine of its execution context,
  // which a host may run on several threads; the others wait and take the fresh token.
  support::AsyncMutex::Lock refreshing = co_await refresh_.scoped();
  const auto now = Clock::now();
  if (auto cached = cached_token(now)) co_return std::move(*cached);
  co_return co_await fetch_token(now);
}

boost::asio::awaitable<std::string> Service::fetch_token(Clock::time_point now) {
  // a host's binding never falls back to the chain below.
  if (source_) co_return co_await host_token();
  if (!config_.token.empty()) co_return store_token(config_.token, Clock::time_point::max());
  if (!config_.token_command.empty()) {
    support::SubprocessOptions o;
    o.argv = config_.token_command;
    o.env["ACAS_TOKEN_SCOPE"] = config_.scope;
    o.timeout = std::chrono::seconds(10);
    o.max_stdout = 1 << 20;
    support::SubprocessResult r;
    try {
      r = co_await support::run_subprocess(std::move(o));
    } catch (const std::exception&) {
      // Provider output may contain a token: never quoted ("The credential chain").
      throw AcasCredentialError(said("the token command '") + config_.token_command[0] + "' could not be run");
    }
    if (r.exit_code != 0)
      throw AcasCredentialError(said("the token command '") + config_.token_command[0] + "' exited with status " +
                                std::to_string(r.exit_code));
    TokenAnswer answer;
    try {
      answer = parse_token_output(r.stdout_bytes);
    } catch (const AcasResponseInvalid&) {
      throw AcasCredentialError(said("the token command '") + config_.token_command[0] + "' printed no usable token");
    }
    Clock::time_point expires = Clock::time_point::max();
    if (answer.expires_on)
      expires = now + std::chrono::seconds(*answer.expires_on - static_cast<std::int64_t>(std::time(nullptr)));
    co_return store_token(std::move(answer.token), expires);
  }
  if (config_.service_principal) {
    TokenAnswer answer = co_await service_principal_token();
    co_return remember(answer, now);
  }
  if (config_.workload_identity) {
    TokenAnswer answer = co_await workload_identity_token();
    co_return remember(answer, now);
  }
  if (config_.managed_identity) {
    TokenAnswer answer = co_await managed_identity_token();
    co_return remember(answer, now);
  }
  if (const char* env = std::getenv(config_.token_env.c_str()); env && *env) {
    co_return store_token(env, Clock::now() + std::chrono::hours(1));
  }
  throw AcasCredentialError(said("no credential configured (token, token_command, service_principal, "
                            "workload_identity, managed_identity, or $") + config_.token_env + ")");
}

namespace {

// Managed identity ("The credential chain"). Built outside the coroutine (GCC 12: no braced lists in a coroutine body).
struct IdentityRequest {
  HttpRequest request;
  std::string where;  ///< the endpoint, for messages (never the header secret)
  bool app_service = false;
};

IdentityRequest identity_request(const AcasConfig& config) {
  std::string resource = config.scope;
  const std::string_view suffix = "/.default";
  if (resource.size() > suffix.size() && resource.compare(resource.size() - suffix.size(), suffix.size(), suffix) == 0)
    resource.resize(resource.size() - suffix.size());
  const char* endpoint = std::getenv("IDENTITY_ENDPOINT");
  const char* secret = std::getenv("IDENTITY_HEADER");
  IdentityRequest out;
  out.app_service = endpoint && *endpoint && secret && *secret;
  out.where = out.app_service ? std::string(endpoint) : config.imds_endpoint;
  HttpRequest& r = out.request;
  r.method = "GET";
  r.url = out.where + (out.where.find('?') == std::string::npos ? "?" : "&") +
          "api-version=" + (out.app_service ? "2019-08-01" : "2018-02-01") + "&resource=" + url_encode(resource);
  if (!config.managed_identity_client_id.empty()) r.url += "&client_id=" + url_encode(config.managed_identity_client_id);
  r.headers.push_back(out.app_service ? "X-IDENTITY-HEADER: " + std::string(secret) : std::string("Metadata: true"));
  r.headers.push_back("Accept: application/json");
  r.timeout = ms_of(config.request_timeout_seconds);
  // IMDS is a link-local address: off Azure nothing answers, so fail fast.
  if (!out.app_service) r.connect_timeout = std::chrono::seconds(2);
  r.max_body = 1 << 20;
  return out;
}

// A token endpoint's answer. Only the status is quoted: an error body is the provider's
// text, and a token never enters a message ("The credential chain").
TokenAnswer token_answer(const HttpOutcome& o, const std::string& source) {
  if (o.failure != HttpFailure::None) throw AcasCredentialError(source + " did not answer: " + o.error);
  if (o.response.status != 200)
    throw AcasCredentialError(source + " answered HTTP " + std::to_string(o.response.status));
  try {
    return parse_token_output(o.response.body);
  } catch (const AcasResponseInvalid&) {
    throw AcasCredentialError(source + " answered without a usable access_token");
  }
}

struct EntraRequest {
  HttpRequest request;
  std::string where;  ///< the token endpoint, for messages
};

std::string required_env(const char* source, const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw AcasCredentialError(said(std::string(source) + " is configured but $" + name + " is not set"));
  return v;
}

// Service principal and workload identity: the client-credentials grant at `<authority>/<tenant>/oauth2/v2.0/token`; the
// client proves itself by `proof` (a client_secret or a client_assertion).
EntraRequest entra_request(const AcasConfig& config, const std::string& tenant, const std::string& client,
                           const std::string& proof) {
  const char* host = std::getenv("AZURE_AUTHORITY_HOST");
  std::string authority = host && *host ? host : config.authority_host;
  while (!authority.empty() && authority.back() == '/') authority.pop_back();
  EntraRequest out;
  out.where = authority + "/" + url_encode(tenant) + "/oauth2/v2.0/token";
  HttpRequest& r = out.request;
  r.method = "POST";
  r.url = out.where;
  r.headers.push_back("Content-Type: application/x-www-form-urlencoded");
  r.headers.push_back("Accept: application/json");
  r.body = "grant_type=client_credentials&client_id=" + url_encode(client) + "&" + proof +
           "&scope=" + url_encode(config.scope);
  r.timeout = ms_of(config.request_timeout_seconds);
  r.max_body = 1 << 20;
  return out;
}

EntraRequest service_principal_request(const AcasConfig& config) {
  const char* source = "service_principal";
  const std::string tenant = required_env(source, "AZURE_TENANT_ID");
  const std::string client = required_env(source, "AZURE_CLIENT_ID");
  const std::string secret = required_env(source, "AZURE_CLIENT_SECRET");
  return entra_request(config, tenant, client, "client_secret=" + url_encode(secret));
}

// Workload identity: the projected token rotates, so the file is read at every fetch. Its content is
// a secret: neither it nor the read error is quoted.
EntraRequest workload_identity_request(const AcasConfig& config) {
  const char* source = "workload_identity";
  const std::string file = required_env(source, "AZURE_FEDERATED_TOKEN_FILE");
  const std::string client = required_env(source, "AZURE_CLIENT_ID");
  const std::string tenant = required_env(source, "AZURE_TENANT_ID");
  std::string assertion;
  if (std::FILE* f = std::fopen(file.c_str(), "rb")) {
    char buffer[4096];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0 && assertion.size() < (1u << 20)) assertion.append(buffer, n);
    std::fclose(f);
  } else {
    throw AcasCredentialError(said("workload_identity could not read $AZURE_FEDERATED_TOKEN_FILE '") + file + "'");
  }
  while (!assertion.empty() && std::isspace(static_cast<unsigned char>(assertion.back()))) assertion.pop_back();
  if (assertion.empty())
    throw AcasCredentialError(said("workload_identity found $AZURE_FEDERATED_TOKEN_FILE '") + file + "' empty");
  return entra_request(config, tenant, client,
                       "client_assertion_type=" + url_encode("urn:ietf:params:oauth:client-assertion-type:jwt-bearer") +
                           "&client_assertion=" + url_encode(assertion));
}

}  // namespace

std::string Service::remember(const TokenAnswer& answer, Clock::time_point now) {
  Clock::time_point expires = now + std::chrono::hours(1);
  if (answer.expires_on)
    expires = now + std::chrono::seconds(*answer.expires_on - static_cast<std::int64_t>(std::time(nullptr)));
  else if (answer.expires_in)
    expires = now + std::chrono::seconds(*answer.expires_in);
  return store_token(answer.token, expires);
}

boost::asio::awaitable<TokenAnswer> Service::entra_grant(HttpRequest request, std::string source) {
  HttpOutcome o = co_await http_->perform(std::move(request));
  co_return token_answer(o, source);
}

boost::asio::awaitable<TokenAnswer> Service::service_principal_token() {
  EntraRequest sp = service_principal_request(config_);
  std::string source = said("the service-principal token endpoint '") + sp.where + "'";
  co_return co_await entra_grant(std::move(sp.request), std::move(source));
}

boost::asio::awaitable<TokenAnswer> Service::workload_identity_token() {
  EntraRequest wi = workload_identity_request(config_);
  std::string source = said("the workload-identity token endpoint '") + wi.where + "'";
  co_return co_await entra_grant(std::move(wi.request), std::move(source));
}

boost::asio::awaitable<TokenAnswer> Service::managed_identity_token() {
  IdentityRequest ir = identity_request(config_);
  const std::string source = said("the managed-identity endpoint '") + ir.where + "'" +
                             (ir.app_service ? " ($IDENTITY_ENDPOINT)" : " (IMDS)");
  HttpOutcome o = co_await http_->perform(std::move(ir.request));
  co_return token_answer(o, source);
}

boost::asio::awaitable<HttpResponse> Service::call(ServiceCall c) {
  std::string u = url(c.path, c.query);
  co_return co_await send_url(u, c);
}

boost::asio::awaitable<HttpResponse> Service::send_url(const std::string& u, const ServiceCall& c) {
  auto executor = co_await boost::asio::this_coro::executor;
  std::string bearer = co_await token();
  const auto cap = ms_of(config_.retry_after_cap_seconds);
  std::chrono::milliseconds backoff{200};
  for (int attempt = 1;; ++attempt) {
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - Clock::now());
    if (remaining.count() <= 0) throw DeadlineBeforeSend(said(c.what + " timed out (deadline reached)"));
    HttpRequest r;
    r.method = c.method;
    r.url = u;
    r.headers = base_headers(bearer);
    if (c.body) r.headers.push_back("Content-Type: " + c.content_type);
    if (c.exec_headers) r.headers.push_back("Accept-Encoding: identity");
    r.body = c.body;
    r.timeout = remaining;
    r.max_body = c.max_body;
    HttpOutcome o = co_await http_->perform(std::move(r));
    std::optional<std::chrono::milliseconds> wait;
    bool throttled = false;
    if (o.failure != HttpFailure::None) {
      if (o.failure == HttpFailure::TimedOut) throw TimeoutError(said(c.what + " timed out (deadline reached)"));
      bool may_retry = c.retry == RetryClass::Read || (!o.maybe_sent && c.retry != RetryClass::Exec);
      if (!may_retry || attempt >= 6)
        throw AcasTransportError(said(c.what + " failed without an answer: " + o.error), o.maybe_sent);
    } else {
      wait = parse_retry_after(o.response.retry_after, o.response.retry_after_ms, cap);
      throttled = o.response.status == 429;
      if (!retryable(c.retry, o.response.status, wait.has_value()) || attempt >= 6) co_return std::move(o.response);
    }
    auto delay = wait.value_or(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    if (Clock::now() + delay >= c.deadline) {
      if (throttled)
        throw AcasThrottledPastDeadline(said(c.what + " was throttled (429) and its Retry-After outlasts the deadline"));
      if (o.failure != HttpFailure::None)
        throw AcasTransportError(said(c.what + " failed without an answer: " + o.error), o.maybe_sent);
      co_return std::move(o.response);
    }
    boost::asio::steady_timer timer(executor, delay);
    co_await timer.async_wait(boost::asio::use_awaitable);
  }
}

boost::asio::awaitable<std::vector<nlohmann::json>> Service::list_all(
    std::string path, std::vector<std::pair<std::string, std::string>> query, Clock::time_point deadline,
    std::string what) {
  std::vector<nlohmann::json> items;
  std::string next = url(path, query);
  const std::string origin = origin_of(next);
  const std::string collection = path_of(next);
  std::vector<std::string> seen;
  while (!next.empty()) {
    ServiceCall c{"GET", {}, {}, std::nullopt, "application/json", RetryClass::Read, deadline, std::size_t{64} << 20, what};
    auto response = co_await send_url(next, c);
    expect(response, {200}, what);
    auto page = parse_list_page(response.body, what);
    for (auto& item : page.items) items.push_back(std::move(item));
    seen.push_back(next);
    next = page.next_link;
    if (next.empty()) break;
    // the bearer follows the link, so it must stay on this endpoint and collection.
    if (origin_of(next) != origin || path_of(next) != collection)
      throw AcasResponseInvalid(said(what + " returned a nextLink off the endpoint or collection"));
    for (const auto& s : seen)
      if (s == next) throw AcasResponseInvalid(said(what + " returned a repeated nextLink"));
  }
  co_return items;
}

void Service::expect(const HttpResponse& response, std::initializer_list<int> ok, const std::string& what) {
  for (int s : ok)
    if (response.status == s) return;
  throw AcasServiceError(said(what + " answered HTTP " + std::to_string(response.status) + ": " +
                              problem_summary(response.body)),
                         response.status);
}

}  // namespace maf::sandbox::acas::detail

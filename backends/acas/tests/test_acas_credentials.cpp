// A-60…A-62 and the workload-identity source against the emulator: the host's credential resolver (one binding
// per operation, asserted per request by token alias), the client cache (eviction, the
// capacity wait), close (drain, refuse, never twice, never a DELETE) and the
// workload-identity token source against a tiny local token endpoint.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "acas_fixture.hpp"
#include "maf/sandbox/support/sleep.hpp"

using namespace acas_test;
using maf::sandbox::BlockingRunner;
using maf::sandbox::ExecResult;
using maf::sandbox::Sandbox;
using maf::sandbox::acas::AcasAccessToken;
using maf::sandbox::acas::AcasClientCloseError;
using maf::sandbox::acas::AcasCredentialBinding;
using maf::sandbox::acas::AcasCredentialError;
using maf::sandbox::acas::AcasCredentialOperation;
using maf::sandbox::acas::AcasCredentialRequest;
using maf::sandbox::acas::AcasTokenSource;
using maf::sandbox::acas::AcasTokenSourceFactory;

namespace {

// A token source that counts its clients: one made per client built, one closed per close.
struct Counts {
  std::atomic<int> made{0};
  std::atomic<int> closed{0};
};

class CountingSource final : public AcasTokenSource {
public:
  CountingSource(std::string token, std::shared_ptr<Counts> counts) : token_(std::move(token)), counts_(std::move(counts)) {}
  boost::asio::awaitable<AcasAccessToken> get_token(std::string) override { co_return AcasAccessToken{token_, {}}; }
  void close() override { ++counts_->closed; }

private:
  std::string token_;
  std::shared_ptr<Counts> counts_;
};

AcasTokenSourceFactory counting(std::string token, std::shared_ptr<Counts> counts) {
  return [token, counts] {
    ++counts->made;
    return std::make_shared<CountingSource>(token, counts);
  };
}

class ThrowingSource final : public AcasTokenSource {
public:
  boost::asio::awaitable<AcasAccessToken> get_token(std::string) override {
    throw std::runtime_error("source-secret");
    co_return AcasAccessToken{};
  }
};

// A token source that counts its fetches and takes its time over each, so that callers
// arriving together all find the cache empty.
class SlowCountingSource final : public AcasTokenSource {
public:
  SlowCountingSource(std::string token, std::atomic<int>& fetched) : token_(std::move(token)), fetched_(fetched) {}
  boost::asio::awaitable<AcasAccessToken> get_token(std::string) override {
    ++fetched_;
    co_await maf::sandbox::support::sleep_for(std::chrono::milliseconds(200));
    co_return AcasAccessToken{token_, {}};
  }

private:
  std::string token_;
  std::atomic<int>& fetched_;
};

// The token alias of every data-plane request after `since`.
std::set<std::string> aliases(const Fixture& f, std::uint64_t since) {
  std::set<std::string> out;
  for (const auto& r : f.emulator->control("GET", "/requests"))
    if (r.value("seq", std::uint64_t{0}) > since && r.value("route", "") != "identity")
      out.insert(r["alias"].is_string() ? r["alias"].get<std::string>() : "<none>");
  return out;
}

// An exec started beside the caller's work on the same executor, and how it ended.
struct Background {
  std::optional<ExecResult> result;
  std::exception_ptr failure;
  bool done() const { return result || failure; }
};

boost::asio::awaitable<void> exec_into(std::shared_ptr<Sandbox> sb, std::string command, std::shared_ptr<Background> out) {
  try {
    out->result = co_await sb->exec(std::move(command));
  } catch (...) {
    out->failure = std::current_exception();
  }
}

// Starts `command` on `sb` in the background, gives it a moment to be admitted and sent,
// runs `then`, and waits for the exec to end. Returns the exec's outcome and whether it had
// ended by the time `then` returned.
template <typename Then>
boost::asio::awaitable<std::pair<std::shared_ptr<Background>, bool>> beside_exec(std::shared_ptr<Sandbox> sb,
                                                                                 std::string command, Then then) {
  auto bg = std::make_shared<Background>();
  auto executor = co_await boost::asio::this_coro::executor;
  boost::asio::co_spawn(executor, exec_into(sb, std::move(command), bg), boost::asio::detached);
  co_await maf::sandbox::support::sleep_for(std::chrono::milliseconds(200));
  co_await then();
  const bool ended_first = bg->done();
  while (!bg->done()) co_await maf::sandbox::support::sleep_for(std::chrono::milliseconds(20));
  co_return std::pair{bg, ended_first};
}

}  // namespace

TEST_CASE("A-60/A-62: the resolver's binding per operation (acquire and exec carry alias A, dispose B; the sandbox keeps A after rotation); close() drains an in-flight exec, closes each client once, refuses later work, deletes nothing") {
  Fixture f;
  f.emulator->control("PUT", "/config", {{"tokens", {{"A", "token-a"}, {"A2", "token-a2"}, {"B", "token-b"}}}});
  std::vector<AcasCredentialRequest> asked;
  std::string generation = "1", acquire_token = "token-a";
  auto a = std::make_shared<Counts>();
  auto b = std::make_shared<Counts>();
  auto config = f.config();  // its `token` would work: it must never be used
  config.credential_resolver = [&](const AcasCredentialRequest& r) {
    asked.push_back(r);
    if (r.operation == AcasCredentialOperation::Acquire)
      return AcasCredentialBinding{"acquirer", generation, counting(acquire_token, a)};
    return AcasCredentialBinding{"cleaner", "1", counting("token-b", b)};
  };
  auto backend = f.backend(config);
  auto since = f.last_seq();
  auto sb = f.run([&] { return backend->acquire(f.key(), exec_spec()); });
  CHECK(f.requests("create", since).size() == 1);
  CHECK(aliases(f, since) == std::set<std::string>{"A"});

  // The host rotates: new acquires use generation 2; the held sandbox keeps its binding.
  generation = "2";
  acquire_token = "token-a2";
  since = f.last_seq();
  CHECK(f.run([&] { return sb->exec(std::string("echo hi")); }).stdout_bytes == "hi\n");
  CHECK(aliases(f, since) == std::set<std::string>{"A"});
  since = f.last_seq();
  // FILES_LIST alone: a create without probes keeps this second acquire cheap.
  const maf::sandbox::SandboxSpec listing(
      {.kind = "acas-test", .image = "busybox", .requires_capabilities = {maf::sandbox::Capability::FilesList}});
  f.run([&] { return backend->acquire(f.key("other"), listing); });
  CHECK(f.requests("create", since).size() == 1);
  CHECK(aliases(f, since) == std::set<std::string>{"A2"});
  CHECK(a->made == 2);  // one client per (executor, authority, generation)

  since = f.last_seq();
  CHECK_FALSE(f.run([&] { return backend->dispose(f.key("other"), std::nullopt, std::nullopt); }));
  CHECK(f.requests("delete", since).size() == 1);
  CHECK(aliases(f, since) == std::set<std::string>{"B"});
  REQUIRE(asked.size() == 3);
  CHECK(asked[0].operation == AcasCredentialOperation::Acquire);
  CHECK(asked[0].scope == f.scope);
  CHECK(asked[0].thread_id == f.thread);
  CHECK(asked[0].agent_id == std::optional<std::string>("agent"));
  CHECK(asked[0].kind == std::optional<std::string>("acas-test"));
  CHECK(asked[2].operation == AcasCredentialOperation::Dispose);
  CHECK(asked[2].agent_id == std::optional<std::string>("other"));

  // A-62: an exec delayed 2 s is in flight when close() begins.
  since = f.last_seq();
  f.fault({{"route", "exec"}, {"action", "delay"}, {"delayMs", 2000}, {"times", 1}});
  auto [bg, ended_first] = f.run([&] {
    return beside_exec(sb, "echo drained", [&]() -> boost::asio::awaitable<void> { co_await backend->close(); });
  });
  CHECK(ended_first);  // close() returned only after the admitted exec had finished
  REQUIRE(bg->result);
  CHECK(bg->result->stdout_bytes == "drained\n");
  CHECK(a->closed == 2);
  CHECK(b->closed == 1);
  CHECK_THAT(refusal<AcasCredentialError>([&] { f.run([&] { return backend->acquire(f.key(), exec_spec()); }); }),
             Catch::Contains("closing or closed"));
  CHECK_THROWS_AS(f.run([&] { return sb->exec(std::string("true")); }), AcasCredentialError);
  f.run([&] { return backend->close(); });  // nothing left, nothing closed twice
  CHECK(a->made == 2);
  CHECK(a->closed == 2);
  CHECK(b->closed == 1);
  CHECK(f.requests("delete", since).empty());
  CHECK(f.live() == 1);
}

TEST_CASE("A-60: a failing resolver, factory or token source is an AcasCredentialError without its text, never the default chain, zero requests") {
  Fixture f;
  auto config = f.config();  // config.token works: a fall-back would show as requests
  auto expect_refusal = [&](maf::sandbox::acas::AcasCredentialResolver resolver, const std::string& secret,
                            const std::string& says) {
    auto c = config;
    c.credential_resolver = std::move(resolver);
    auto backend = f.backend(c);
    const auto since = f.last_seq();
    const auto acquire = refusal<AcasCredentialError>(
        [&] { f.run([&] { return backend->acquire(f.key(), exec_spec()); }); });
    CHECK_THAT(acquire, Catch::Contains(says));
    CHECK_THAT(acquire, !Catch::Contains(secret));
    // A resolver or factory failure refuses dispose_scope; a token failure is its listing's.
    std::string purge;
    try {
      auto result = f.run([&] { return backend->dispose_scope(f.scope, f.thread); });
      REQUIRE(result.undisposed);
      purge = result.undisposed->to_string();
    } catch (const AcasCredentialError& e) {
      purge = e.what();
    }
    CHECK_THAT(purge, Catch::Contains(says));
    CHECK_THAT(purge, !Catch::Contains(secret));
    CHECK(f.last_seq() == since);
  };
  expect_refusal([](const AcasCredentialRequest&) -> AcasCredentialBinding { throw std::runtime_error("resolver-secret"); },
                 "resolver-secret", "the credential resolver failed for");
  expect_refusal(
      [](const AcasCredentialRequest&) {
        return AcasCredentialBinding{"host", "7", []() -> std::shared_ptr<AcasTokenSource> {
                                       throw std::runtime_error("factory-secret");
                                     }};
      },
      "factory-secret", "the credential factory of authority 'host' (generation '7') failed");
  expect_refusal(
      [](const AcasCredentialRequest&) {
        return AcasCredentialBinding{"host", "7", [] { return std::make_shared<ThrowingSource>(); }};
      },
      "source-secret", "the token source of authority 'host' failed");
  expect_refusal([](const AcasCredentialRequest&) { return AcasCredentialBinding{"host", "", {}}; }, "<none>",
                 "incomplete binding");
}

TEST_CASE("A-61: at max_clients_per_loop=1 the idle client is evicted (closed once, no sandbox touched) and rebuilt; a busy one makes the caller wait, bounded, 'limit 1 clients per loop'") {
  Fixture f;
  f.emulator->control("PUT", "/config", {{"tokens", {{"A", "token-a"}, {"B", "token-b"}}}});
  auto a = std::make_shared<Counts>();
  auto b = std::make_shared<Counts>();
  auto config = f.config();
  config.max_clients_per_loop = 1;
  config.client_wait_seconds = 0.5;
  config.credential_resolver = [&](const AcasCredentialRequest& r) {
    if (r.operation == AcasCredentialOperation::Acquire) return AcasCredentialBinding{"A", "1", counting("token-a", a)};
    return AcasCredentialBinding{"B", "1", counting("token-b", b)};
  };
  auto backend = f.backend(config);
  // Capacity 1: the acquire's helpers (work dir, removal probe, command probes) and the
  // sandbox's writes and reads share the operation's one lease.
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  f.run([&] { return sb->write_file("f.txt", std::string("abc")); });
  CHECK(f.run([&] { return sb->read_file("f.txt", ".", 1024); }) == "abc");
  CHECK(a->made == 1);

  // Another authority: A is idle, so it is closed on its executor and B built.
  auto since = f.last_seq();
  CHECK_FALSE(f.run([&] { return backend->dispose(f.key("nobody"), std::nullopt, std::nullopt); }));
  CHECK(a->closed == 1);
  CHECK(b->made == 1);
  CHECK(f.requests("delete", since).empty());
  CHECK(f.live() == 1);
  // The wrapper survives the eviction: its next exec rebuilds a client of its binding.
  since = f.last_seq();
  CHECK(f.run([&] { return sb->exec(std::string("cat f.txt")); }).stdout_bytes == "abc");
  CHECK(a->made == 2);
  CHECK(b->closed == 1);
  CHECK(aliases(f, since) == std::set<std::string>{"A"});

  // A busy client is never evicted: B's caller waits client_wait_seconds, then is refused.
  f.fault({{"route", "exec"}, {"action", "delay"}, {"delayMs", 1500}, {"times", 1}});
  std::string refused;
  auto bg = f.run([&] {
    return beside_exec(sb, "echo busy", [&]() -> boost::asio::awaitable<void> {
      try {
        co_await backend->dispose(f.key("nobody"), std::nullopt, std::nullopt);
      } catch (const AcasCredentialError& e) {
        refused = e.what();
      }
    });
  }).first;
  CHECK_THAT(refused, Catch::Contains("limit 1 clients per loop"));  // A was busy: never evicted
  REQUIRE(bg->result);
  CHECK(bg->result->stdout_bytes == "busy\n");
  CHECK(b->made == 1);
}

TEST_CASE("A-62: a client whose owner executor is not running is left open by close() (AcasClientCloseError) and closed by a later close(); a destroyed executor closes its clients") {
  Fixture f;
  auto counts = std::make_shared<Counts>();
  auto config = f.config();
  config.client_close_seconds = 0.3;
  config.credential_resolver = [&](const AcasCredentialRequest&) {
    return AcasCredentialBinding{"host", "1", counting("emulator-token", counts)};
  };
  auto backend = f.backend(config);
  {
    BlockingRunner gone;
    gone([&] { return backend->dispose_scope(f.scope, f.thread); });
  }
  CHECK(counts->made == 1);
  CHECK(counts->closed == 1);  // its io_context was destroyed: nothing may be posted to it

  BlockingRunner other;  // owns a client, then stops running
  other([&] { return backend->dispose_scope(f.scope, f.thread); });
  CHECK(counts->made == 2);
  const auto message = refusal<AcasClientCloseError>([&] { f.run([&] { return backend->close(); }); });
  CHECK_THAT(message, Catch::Contains("owner executor is not running"));
  CHECK_THAT(message, Catch::Contains("authority 'host'"));
  CHECK(counts->closed == 1);
  other([&] { return backend->close(); });  // the owner runs again: the close completes, once
  CHECK(counts->closed == 2);
  CHECK_THROWS_AS(other([&] { return backend->dispose_scope(f.scope, f.thread); }), AcasCredentialError);
}

namespace {

// A token endpoint on loopback: answers every request with `status` and `body`, records
// each request's path and form.
class TokenEndpoint {
public:
  TokenEndpoint() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd_, 8) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~TokenEndpoint() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void answer(int status, std::string body) {
    std::lock_guard g(m_);
    status_ = status;
    body_ = std::move(body);
  }
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> seen() {
    std::lock_guard g(m_);
    return seen_;
  }

private:
  static std::string decode(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '+') out += ' ';
      else if (s[i] == '%' && i + 2 < s.size()) out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)), i += 2;
      else out += s[i];
    }
    return out;
  }
  void serve() {
    for (;;) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string in;
      char buf[4096];
      std::size_t header_end = std::string::npos, want = 0;
      for (;;) {
        auto n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
        if (header_end == std::string::npos && (header_end = in.find("\r\n\r\n")) != std::string::npos) {
          auto cl = in.find("Content-Length: ");
          want = cl == std::string::npos ? 0 : std::stoul(in.substr(cl + 16));
        }
        if (header_end != std::string::npos && in.size() >= header_end + 4 + want) break;
      }
      std::map<std::string, std::string> form;
      const std::string body = header_end == std::string::npos ? "" : in.substr(header_end + 4);
      std::size_t pos = 0;
      while (pos < body.size()) {
        auto amp = body.find('&', pos);
        auto pair = body.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
        auto eq = pair.find('=');
        form[decode(pair.substr(0, eq))] = eq == std::string::npos ? "" : decode(pair.substr(eq + 1));
        pos = amp == std::string::npos ? body.size() : amp + 1;
      }
      std::string reply;
      {
        std::lock_guard g(m_);
        seen_.emplace_back(in.substr(in.find(' ') + 1, in.find(' ', in.find(' ') + 1) - in.find(' ') - 1), form);
        reply = "HTTP/1.1 " + std::to_string(status_) + " X\r\nContent-Type: application/json\r\nContent-Length: " +
                std::to_string(body_.size()) + "\r\nConnection: close\r\n\r\n" + body_;
      }
      [[maybe_unused]] auto w = ::write(c, reply.data(), reply.size());
      ::close(c);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex m_;
  int status_ = 200;
  std::string body_;
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> seen_;
};

}  // namespace

TEST_CASE("§1.1 #3: the workload-identity source exchanges the federated token file at the token endpoint; refusals are AcasCredentialErrors quoting neither file nor answer") {
  Fixture f;
  f.emulator->control("PUT", "/config", {{"tokens", {{"wi", "workload-token"}}}});
  TokenEndpoint endpoint;
  endpoint.answer(200, R"({"token_type":"Bearer","access_token":"workload-token","expires_in":3600})");
  const std::string file = "/tmp/acas-federated-" + random_hex(8);
  std::ofstream(file) << "federated-assertion\n";
  auto config = f.config();
  config.token.clear();
  config.workload_identity = true;
  ::setenv("AZURE_FEDERATED_TOKEN_FILE", file.c_str(), 1);
  ::setenv("AZURE_CLIENT_ID", "wi-client", 1);
  ::setenv("AZURE_TENANT_ID", "tenant-9", 1);
  ::setenv("AZURE_AUTHORITY_HOST", endpoint.url().c_str(), 1);
  {
    auto backend = f.backend(config);
    f.run([&] { return backend->dispose_scope(f.scope, f.thread); });
    f.run([&] { return backend->dispose_scope(f.scope, f.thread); });  // the token is cached
    auto seen = endpoint.seen();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].first == "/tenant-9/oauth2/v2.0/token");
    auto& form = seen[0].second;
    CHECK(form["grant_type"] == "client_credentials");
    CHECK(form["client_id"] == "wi-client");
    CHECK(form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
    CHECK(form["client_assertion"] == "federated-assertion");
    CHECK(form["scope"] == "https://dynamicsessions.io/.default");
    CHECK(form.count("client_secret") == 0);
    CHECK(f.requests("list").size() == 2);
    CHECK(f.requests("list").back()["alias"] == "wi");
  }
  endpoint.answer(401, R"({"error":"invalid_client","error_description":"endpoint-detail"})");
  auto since = f.last_seq();
  auto refused = [&] {
    auto backend = f.backend(config);
    return refusal<AcasCredentialError>([&] { f.run([&] { return backend->acquire(f.key(), exec_spec()); }); });
  };
  auto message = refused();
  CHECK_THAT(message, Catch::Contains("workload-identity token endpoint") && Catch::Contains("answered HTTP 401"));
  CHECK_THAT(message, !Catch::Contains("endpoint-detail") && !Catch::Contains("federated-assertion"));
  CHECK(f.last_seq() == since);
  CHECK(endpoint.seen().size() == 2);
  std::remove(file.c_str());
  message = refused();
  CHECK_THAT(message, Catch::Contains("could not read $AZURE_FEDERATED_TOKEN_FILE"));
  CHECK(endpoint.seen().size() == 2);
  ::unsetenv("AZURE_FEDERATED_TOKEN_FILE");
  CHECK_THAT(refused(), Catch::Contains("$AZURE_FEDERATED_TOKEN_FILE is not set"));
  CHECK(f.last_seq() == since);
  for (const char* v : {"AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_AUTHORITY_HOST"}) ::unsetenv(v);
  CHECK(maf::sandbox::acas::parse_acas_config(json{{"workload_identity", true}}).workload_identity);
  CHECK_THROWS_AS(maf::sandbox::acas::parse_acas_config(json{{"workload_identity", 1}}), maf::sandbox::ValueError);
}

TEST_CASE("A-61 / §1.1: one io_context run on four threads shares one client; sixteen purges arriving together fetch its token once") {
  Fixture f;
  f.emulator->control("PUT", "/config", {{"tokens", {{"A", "token-a"}}}});
  std::atomic<int> fetched{0};
  std::atomic<int> resolved{0};
  std::atomic<int> made{0};
  auto config = f.config();
  config.credential_resolver = [&](const AcasCredentialRequest&) {
    ++resolved;
    AcasTokenSourceFactory factory = [&fetched, &made] {
      ++made;
      return std::make_shared<SlowCountingSource>("token-a", fetched);
    };
    return AcasCredentialBinding{"A", "1", factory};
  };
  auto backend = f.backend(config);
  const auto since = f.last_seq();
  {
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) threads.emplace_back([&io] { io.run(); });
    // Each purge lists the group by label (a data-plane request, so it needs the token).
    std::vector<std::future<maf::sandbox::ScopePurge>> purges;
    for (int i = 0; i < 16; ++i)
      purges.push_back(boost::asio::co_spawn(io, backend->dispose_scope(f.scope, "nobody-" + std::to_string(i)),
                                             boost::asio::use_future));
    std::vector<bool> clean;
    for (auto& p : purges) clean.push_back(p.get() == maf::sandbox::ScopePurge{0, std::nullopt});
    work.reset();
    for (auto& t : threads) t.join();
    CHECK(clean == std::vector<bool>(16, true));
  }
  CHECK(resolved == 16);  // A-60: one resolution per operation
  CHECK(made == 1);       // one client for the context...
  CHECK(fetched == 1);    // ...and one refresh of its token
  CHECK(aliases(f, since) == std::set<std::string>{"A"});
}

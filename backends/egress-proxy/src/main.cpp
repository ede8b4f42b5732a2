// maf-sandbox-egress-proxy: the allowlist-filtering CONNECT/HTTP proxy the Docker backend
// runs next to an ALLOWLIST sandbox (docs/backends/egress-proxy.md).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <chrono>

#include <nlohmann/json.hpp>

#include "control.hpp"
#include "decision_log.hpp"
#include "forwarding_check.hpp"
#include "inherited_listener.hpp"
#include "options.hpp"
#include "proxy_server.hpp"

namespace asio = boost::asio;
using namespace maf::sandbox::egress_proxy;

namespace {

/// CRED-7/CRED-8: wait (bounded) for the values file, read it, unlink it, load the values;
/// then terminate every allowed host, so a placeholder sent anywhere is seen and refused.
void load_credential_values(ProxyOptions& options) {
  const std::string& path = *options.credential_values_file;
  const auto deadline = std::chrono::steady_clock::now() + options.credential_values_wait;
  std::string text;
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::ostringstream all;
      all << in.rdbuf();
      text = all.str();
      // The backend writes the file whole (one tar entry); an empty read is a write in flight.
      if (!text.empty()) break;
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw std::invalid_argument("the credential values file '" + path + "' did not appear within " +
                                  std::to_string(options.credential_values_wait.count() / 1000) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::remove(path.c_str());
  options.credentials.load_values(text);
  std::fill(text.begin(), text.end(), '\0');
  for (const auto& entry : options.allow.entries())
    if (!options.rules.find(true, entry.wildcard ? "x." + entry.host : entry.host, entry.port.value_or(443)))
      options.rules.add_whole(entry);
}

}  // namespace

int main(int argc, char** argv) {
  ProxyOptions options;
  std::optional<InheritedListener> inherited;  // --listen-fd (inherited_listener.hpp)
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    inherited = take_inherited_listener(args);
    options = parse_options(
        std::move(args),
        [](const char* name) -> std::optional<std::string> {
          const char* v = std::getenv(name);
          return v ? std::optional<std::string>(v) : std::nullopt;
        },
        [](const std::string& path) {
          std::ifstream in(path, std::ios::binary);
          if (!in) throw std::invalid_argument("cannot read hosts file '" + path + "'");
          std::ostringstream text;
          text << in.rdbuf();
          return text.str();
        });
  } catch (const std::invalid_argument& e) {
    std::cerr << "maf-sandbox-egress-proxy: refusing to start: " << e.what() << "\n" << usage();
    return 2;
  }
  if (options.help) {
    std::cout << usage();
    return 0;
  }
  if (options.features) {
    std::cout << kFeatures << "\n";
    return 0;
  }
  if (options.control_send) return control_send(options.control_send->first, options.control_send->second);
  if (!options.allow_forwarding && !(inherited && inherited->unix_domain)) {
    const auto problem = forwarding_problem([](const std::string& path) -> std::optional<std::string> {
      std::ifstream in(path);
      if (!in) return std::nullopt;
      std::ostringstream text;
      text << in.rdbuf();
      return text.str();
    });
    if (problem) {
      // Verbatim on stderr: the backends read this line back as the reason the proxy is absent.
      std::cerr << "maf-sandbox-egress-proxy: refusing to start: " << *problem << "\n";
      return 3;
    }
  }
  std::FILE* out = stdout;
  if (options.log_path) {
    out = std::fopen(options.log_path->c_str(), "a");
    if (!out) {
      std::cerr << "maf-sandbox-egress-proxy: cannot open log file '" << *options.log_path << "'\n";
      return 2;
    }
  }
  DecisionLog log(out);
  if (!options.credentials.empty()) {
    // CRED-7: the values arrive in a file the backend writes into this container after it
    // starts; read once, then unlinked, so nothing of them stays on any file system.
    try {
      load_credential_values(options);
    } catch (const std::exception& e) {
      std::cerr << "maf-sandbox-egress-proxy: refusing to start: " << e.what() << "\n";
      return 2;
    }
  }
  try {
    asio::io_context io(1);
    asio::ip::tcp::acceptor acceptor(io);
    if (inherited) {
      // Only accept and stream I/O are used on it, so a unix-domain listener serves as is.
      acceptor.assign(asio::ip::tcp::v4(), inherited->fd);
      options.listen_address = inherited->unix_domain ? "unix" : "inherited";
      options.listen_port = 0;
    } else {
      const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(options.listen_address), options.listen_port);
      acceptor = asio::ip::tcp::acceptor(io, endpoint);  // SO_REUSEADDR by default
    }
    // Hosts with method/path rules are terminated: the per-sandbox CA is made here, in
    // memory, and only its certificate is printed (in the readiness line).
    std::unique_ptr<Terminator> terminator;
    if (!options.rules.empty()) terminator = std::make_unique<Terminator>(io, options, log);
    if (options.pass_through)
      std::cerr << "maf-sandbox-egress-proxy: --unsafe-pass-through: terminated hosts are NOT checked (a test double)\n";
    ProxyServer server(io, options, log, terminator.get());
    // EGU-1: the host's channel, a unix socket only this container (network namespace) reaches.
    std::unique_ptr<ControlChannel> control;
    if (options.control_address) {
      control = std::make_unique<ControlChannel>(io, options, log, [&server] { return server.close_disallowed(); });
      control->listen(*options.control_address);
      server.attach_control(control.get());
    }
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int) {
      boost::system::error_code ec;
      acceptor.close(ec);
      io.stop();
    });
    nlohmann::ordered_json ready;
    ready["event"] = "listening";
    ready["address"] = options.listen_address;
    ready["port"] = options.listen_port;
    ready["allowing"] = options.allow.describe();
    if (!options.credentials.empty()) {
      std::string names;
      for (const auto& c : options.credentials.list()) names += (names.empty() ? "" : ",") + c.name;
      ready["credentials"] = names;  // names only: the values are never printed
    }
    if (terminator) {
      std::string rules;
      for (const auto& r : options.rules.rules()) rules += (rules.empty() ? "" : "; ") + r.describe();
      ready["rules"] = rules;
      ready["ca_certificate"] = terminator->ca_certificate_pem();
    }
    if (control) ready["control"] = *options.control_address;
    log.line(ready.dump());
    asio::co_spawn(io, server.run(std::move(acceptor)), asio::detached);
    io.run();
  } catch (const std::exception& e) {
    std::cerr << "maf-sandbox-egress-proxy: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

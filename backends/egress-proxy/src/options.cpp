// The proxy's command line (options.hpp).
#include "options.hpp"

#include <stdexcept>

namespace maf::sandbox::egress_proxy {
namespace {

unsigned long long parse_count(const std::string& flag, const std::string& text, unsigned long long min,
                               unsigned long long max) {
  if (text.empty() || text.size() > 12 || text.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument(flag + " expects a whole number, got '" + text + "'");
  const auto v = std::stoull(text);
  if (v < min || v > max)
    throw std::invalid_argument(flag + " must be from " + std::to_string(min) + " to " + std::to_string(max) +
                                ", got " + text);
  return v;
}

std::chrono::milliseconds parse_seconds(const std::string& flag, const std::string& text) {
  return std::chrono::milliseconds(parse_count(flag, text, 1, 86'400) * 1000);
}

}  // namespace

ProxyOptions parse_options(const std::vector<std::string>& args, const GetEnv& env, const ReadFile& read_file) {
  ProxyOptions o;
  if (auto port = env("MAF_SANDBOX_PROXY_PORT"))
    o.listen_port = static_cast<std::uint16_t>(parse_count("MAF_SANDBOX_PROXY_PORT", *port, 1, 65535));
  for (const char* var : {"MAF_EGRESS_ALLOW", "MAF_SANDBOX_ALLOW"})
    if (auto list = env(var)) o.allow.add(Allowlist::parse(*list));
  if (auto rules = env("MAF_SANDBOX_RULES")) o.rules.add(L7Rules::parse_json(*rules));
  o.upstream_ca_pem = env("MAF_SANDBOX_UPSTREAM_CA_PEM");
  if (auto creds = env("MAF_SANDBOX_CREDENTIALS")) o.credentials = Credentials::parse_json(*creds);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "-h" || flag == "--help") {
      o.help = true;
      continue;
    }
    if (flag == "--features") {
      o.features = true;
      continue;
    }
    if (flag == "--unsafe-pass-through") {
      o.pass_through = true;
      continue;
    }
    if (flag == "--unsafe-broken-control") {
      o.broken_control = true;
      continue;
    }
    if (flag == "--control-send") {
      if (i + 2 >= args.size()) throw std::invalid_argument("--control-send expects ADDR and a JSON line");
      o.control_send = std::make_pair(args[i + 1], args[i + 2]);
      i += 2;
      continue;
    }
    if (flag == "--unsafe-allow-forwarding") {
      o.allow_forwarding = true;
      continue;
    }
    if (i + 1 >= args.size()) throw std::invalid_argument("unknown argument or missing value: '" + flag + "'");
    const std::string& value = args[++i];
    if (flag == "--allow") {
      o.allow.add(Allowlist::parse(value));
    } else if (flag == "--rules") {
      o.rules.add(L7Rules::parse_json(value));
    } else if (flag == "--credentials") {
      if (!o.credentials.empty()) throw std::invalid_argument("--credentials given twice (or with MAF_SANDBOX_CREDENTIALS)");
      o.credentials = Credentials::parse_json(value);
    } else if (flag == "--credential-values") {
      o.credential_values_file = value;
    } else if (flag == "--upstream-ca") {
      o.upstream_ca_file = value;
    } else if (flag == "--resolve") {
      o.pins.add_pin(value);
    } else if (flag == "--hosts-file") {
      o.pins.add_hosts_text(read_file(value));
    } else if (flag == "--listen") {
      // ADDR:PORT or PORT.
      const auto colon = value.rfind(':');
      if (colon != std::string::npos) {
        o.listen_address = value.substr(0, colon);
        if (o.listen_address.size() > 2 && o.listen_address.front() == '[')
          o.listen_address = o.listen_address.substr(1, o.listen_address.size() - 2);
        if (!canonical_ip(o.listen_address))
          throw std::invalid_argument("--listen address '" + o.listen_address + "' is not an IP literal");
      }
      o.listen_port = static_cast<std::uint16_t>(
          parse_count("--listen", colon == std::string::npos ? value : value.substr(colon + 1), 1, 65535));
    } else if (flag == "--control") {
      if (value.empty() || value == "@") throw std::invalid_argument("--control expects a socket path or @name");
      o.control_address = value;
    } else if (flag == "--decider-timeout-ms") {
      o.decider_timeout = std::chrono::milliseconds(parse_count(flag, value, 1, 600'000));
    } else if (flag == "--log") {
      o.log_path = value;
    } else if (flag == "--max-connections") {
      o.max_connections = parse_count(flag, value, 1, 65536);
    } else if (flag == "--max-head-bytes") {
      o.max_head_bytes = parse_count(flag, value, 512, 1 << 20);
    } else if (flag == "--head-timeout") {
      o.head_timeout = parse_seconds(flag, value);
    } else if (flag == "--connect-timeout") {
      o.connect_timeout = parse_seconds(flag, value);
    } else if (flag == "--idle-timeout") {
      o.idle_timeout = parse_seconds(flag, value);
    } else {
      throw std::invalid_argument("unknown argument '" + flag + "'");
    }
  }
  if (!o.credentials.empty() && !o.credential_values_file)
    throw std::invalid_argument("credentials are named but --credential-values names no file for their values");
  return o;
}

std::string usage() {
  return "usage: maf-sandbox-egress-proxy [--allow host[:port],...]... [--rules JSON]... [--upstream-ca FILE]\n"
         "         [--resolve host=ip]... [--hosts-file PATH] [--features]\n"
         "         [--credentials JSON --credential-values FILE]\n"
         "         [--control ADDR [--decider-timeout-ms N]] | --control-send ADDR JSON\n"
         "         [--listen [ADDR:]PORT] [--log PATH] [--max-connections N] [--max-head-bytes N]\n"
         "         [--head-timeout S] [--connect-timeout S] [--idle-timeout S] [--unsafe-allow-forwarding]\n"
         "environment: MAF_EGRESS_ALLOW, MAF_SANDBOX_ALLOW (allowlists, unioned with --allow),\n"
         "             MAF_SANDBOX_RULES (method/path rules, JSON, unioned with --rules),\n"
         "             MAF_SANDBOX_UPSTREAM_CA_PEM (upstream trust store as PEM text),\n"
         "             MAF_SANDBOX_CREDENTIALS (brokered credentials, JSON; values from --credential-values),\n"
         "             MAF_SANDBOX_PROXY_PORT (listen port, default 3128)\n"
         "A bare host allows CONNECT to 443 and plain HTTP to 80; host:port allows that port only.\n"
         "A host with a method/path rule is TLS-terminated with a per-run CA and each request checked.\n"
         "It refuses to start where its network namespace forwards packets (tests only: --unsafe-allow-forwarding).\n";
}

}  // namespace maf::sandbox::egress_proxy

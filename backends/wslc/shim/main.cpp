// wslc-shim: an executable named `wslc` that accepts exactly the CLI surface the wslc
// backend uses (wslc.md C-10…C-22) and drives the local Docker engine, printing wslc's
// output shapes and error symbols (S-1…S-11). Linux tests only; it is never installed.
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "docker_call.hpp"
#include "maf/sandbox/support/tar.hpp"
#include "render.hpp"

namespace wslc_shim {
namespace {

constexpr const char* kSessionLabel = "wslc-shim.session";
constexpr const char* kMetadataLabel = "com.microsoft.wsl.container.metadata";
constexpr const char* kInhibitIpv4 = "com.docker.network.bridge.inhibit_ipv4";
constexpr const char* kMetadataValue = R"({"V1":{"Flags":0,"InitProcessFlags":0,"Ports":[],"Volumes":[]}})";

std::vector<std::string> g_argv;
bool g_unsupported = false;  // logged, so engine tests can assert none happened (S-1)

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string session() { return env_or("WSLC_SHIM_SESSION", "default"); }

/// S-11: one JSON line per call; `exit` is null when the shim became docker (exec, logs).
void log_call(std::optional<int> exit_code) {
  const char* path = std::getenv("WSLC_SHIM_LOG");
  if (!path || !*path) return;
  nlohmann::json line{{"argv", g_argv},
                      {"exit", exit_code ? nlohmann::json(*exit_code) : nlohmann::json()},
                      {"unsupported", g_unsupported}};
  std::ofstream(path, std::ios::app) << line.dump() << '\n';
}

[[noreturn]] void finish(int code) {
  std::cout.flush();
  log_call(code);
  std::exit(code);
}

[[noreturn]] void fail(std::string_view message, std::string_view symbol) {
  std::cerr << error_text(message, symbol);
  finish(1);
}

[[noreturn]] void unsupported() {
  g_unsupported = true;
  fail("wslc-shim: unsupported invocation " + nlohmann::json(g_argv).dump(), "E_INVALIDARG");
}

[[noreturn]] void become_docker(const std::vector<std::string>& args) {
  log_call(std::nullopt);
  exec_docker(args);
}

void print_line(std::string_view text) { std::cout << text << newline(); }

bool contains(std::string_view haystack, std::string_view needle) { return haystack.find(needle) != std::string::npos; }

/// C-5: options before the first positional; after it every token is positional.
struct Parsed {
  std::map<std::string, std::vector<std::string>> options;
  std::vector<std::string> positional;
  bool has(const std::string& o) const { return options.count(o) > 0; }
  std::optional<std::string> one(const std::string& o) const {
    auto it = options.find(o);
    if (it == options.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
  }
};

/// `aliases` maps every accepted spelling to its canonical name; `valued` lists canonical
/// names that take a value. Anything else is an unsupported invocation.
Parsed parse(std::size_t from, const std::map<std::string, std::string>& aliases, const std::set<std::string>& valued) {
  Parsed p;
  std::size_t i = from;
  for (; i < g_argv.size(); ++i) {
    std::string token = g_argv[i];
    if (token.size() < 2 || token[0] != '-') break;  // a lone "-" is positional
    std::optional<std::string> inline_value;
    if (auto eq = token.find('='); token.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = token.substr(eq + 1);
      token.resize(eq);
    }
    auto alias = aliases.find(token);
    if (alias == aliases.end()) unsupported();
    const std::string& name = alias->second;
    if (valued.count(name)) {
      if (!inline_value) {
        if (++i >= g_argv.size()) unsupported();
        inline_value = g_argv[i];
      }
      p.options[name].push_back(*inline_value);
    } else {
      if (inline_value) unsupported();
      p.options[name];
    }
  }
  p.positional.assign(g_argv.begin() + static_cast<std::ptrdiff_t>(i), g_argv.end());
  return p;
}

/// S-9: `WSLC_SHIM_FAULTS="verb=SYMBOL,…"` fails a verb before Docker is touched;
/// `exec=hang` never returns.
void maybe_fault(const std::string& verb) {
  const std::string faults = env_or("WSLC_SHIM_FAULTS", "");
  std::size_t start = 0;
  while (start < faults.size()) {
    std::size_t comma = faults.find(',', start);
    if (comma == std::string::npos) comma = faults.size();
    const std::string item = faults.substr(start, comma - start);
    start = comma + 1;
    const auto eq = item.find('=');
    if (eq == std::string::npos || item.substr(0, eq) != verb) continue;
    const std::string symbol = item.substr(eq + 1);
    if (symbol == "hang") {
      log_call(std::nullopt);
      for (;;) ::pause();
    }
    fail("wslc-shim: injected fault for '" + verb + "'", symbol);
  }
}

struct Container {
  std::string id;
  bool running = false;
  nlohmann::json doc;
};

/// S-2, S-3: a container exists for this shim only if it carries this session's label.
std::optional<Container> inspect_container(const std::string& name) {
  auto r = run_docker({"container", "inspect", "--format", "{{json .}}", name});
  if (r.exit_code != 0) return std::nullopt;
  try {
    auto doc = nlohmann::json::parse(r.out);
    auto labels = doc["Config"]["Labels"];
    if (!labels.is_object() || labels.value(kSessionLabel, "") != session()) return std::nullopt;
    return Container{doc.value("Id", ""), doc["State"].value("Running", false), doc};
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

Container require_container(const std::string& name) {
  auto c = inspect_container(name);
  if (!c) fail(container_not_found(name), "WSLC_E_CONTAINER_NOT_FOUND");
  return *c;
}

// ---- container verbs --------------------------------------------------------------------

/// `--cpus` as wslc reads it (GetNanoCpusFromString): std::from_chars in fixed notation over
/// the whole text — no sign, exponent or space — more than 0, and cpus * 1e9 truncated to
/// nano-CPUs, which is what reaches the engine (HostConfig.NanoCpus). Docker's own --cpus
/// takes a decimal, so the shim hands it those nano-CPUs back as one: the container gets
/// what wslc would give it, no more (S-4).
std::string wslc_cpus(const std::string& text) {
  constexpr double kNanosPerCpu = 1'000'000'000.0;
  constexpr double kMaxCpus = static_cast<double>(std::numeric_limits<std::int64_t>::max()) / kNanosPerCpu;
  double cpus = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, cpus, std::chars_format::fixed);
  if (r.ec != std::errc{} || r.ptr != end || !(cpus > 0.0) || cpus > kMaxCpus)
    fail("Invalid value for --cpus: '" + text + "'", "E_INVALIDARG");
  const auto nanos = static_cast<std::int64_t>(cpus * kNanosPerCpu);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld.%09lld", static_cast<long long>(nanos / 1'000'000'000),
                static_cast<long long>(nanos % 1'000'000'000));
  return buf;
}

[[noreturn]] void container_run(std::size_t at) {
  auto p = parse(at, {{"-d", "-d"}, {"--detach", "-d"}, {"--name", "--name"}, {"--network", "--network"},
                      {"-e", "-e"}, {"--env", "-e"}, {"-l", "-l"}, {"--label", "-l"}, {"--sysctl", "--sysctl"},
                      {"--cpus", "--cpus"}},
                 {"--name", "--network", "-e", "-l", "--sysctl", "--cpus"});
  if (!p.has("-d") || !p.one("--name") || p.positional.empty()) unsupported();
  // An argument wslc cannot take fails before any service call, as wslc's validation does.
  const std::optional<std::string> cpus = p.one("--cpus") ? std::optional(wslc_cpus(*p.one("--cpus"))) : std::nullopt;
  maybe_fault("run");
  std::vector<std::string> args{"run", "-d", "--pull", "never", "--name", *p.one("--name")};
  const std::string network = p.one("--network").value_or("bridge");
  args.insert(args.end(), {"--network", network});
  // C-23: --cpus exists and is forwarded as wslc converts it. --memory and --pids-limit are
  // not accepted here: the backend never sends them (wslc has no --pids-limit; its --memory
  // does not bound swap, so the backend does not declare memory).
  if (cpus) args.insert(args.end(), {"--cpus", *cpus});
  for (const auto& e : p.options["-e"]) args.insert(args.end(), {"-e", e});
  // Passed through as given: the egress proxy's forwarding-off settings (issue 22).
  // WSLC_SHIM_IGNORE_SYSCTL=1 plays a wslc that accepts and drops them (the EG-3 double).
  if (env_or("WSLC_SHIM_IGNORE_SYSCTL", "") != "1")
    for (const auto& k : p.options["--sysctl"]) args.insert(args.end(), {"--sysctl", k});
  for (const auto& l : p.options["-l"]) {
    if (l.rfind(std::string(kMetadataLabel) + "=", 0) == 0 || l.rfind(std::string(kSessionLabel) + "=", 0) == 0)
      fail("label '" + l + "' is reserved", "E_INVALIDARG");
    args.insert(args.end(), {"--label", l});
  }
  args.insert(args.end(), {"--label", std::string(kSessionLabel) + "=" + session(), "--label",
                           std::string(kMetadataLabel) + "=" + kMetadataValue});
  args.insert(args.end(), p.positional.begin(), p.positional.end());
  auto r = run_docker(args);
  if (r.exit_code == 0) {
    std::string id = r.out;
    while (!id.empty() && (id.back() == '\n' || id.back() == '\r')) id.pop_back();
    print_line(id);
    finish(0);
  }
  const std::string message = clean_docker_message(r.err);
  if (contains(r.err, "Conflict.")) fail(message, "ERROR_ALREADY_EXISTS");
  if (contains(r.err, "No such image") || contains(r.err, "Unable to find image") ||
      contains(r.err, "pull access denied"))
    fail(message, "WSLC_E_IMAGE_NOT_FOUND");
  if (contains(r.err, "network") && contains(r.err, "not found"))
    fail(network_not_found(network), "WSLC_E_NETWORK_NOT_FOUND");
  fail(message, "E_FAIL");
}

[[noreturn]] void container_start(std::size_t at) {
  auto p = parse(at, {}, {});
  if (p.positional.size() != 1) unsupported();
  maybe_fault("start");
  const std::string& name = p.positional[0];
  require_container(name);
  auto r = run_docker({"start", name});
  if (r.exit_code != 0) fail(clean_docker_message(r.err), "E_FAIL");
  print_line(name);
  finish(0);
}

[[noreturn]] void container_exec(std::size_t at) {
  auto p = parse(at, {{"-u", "--user"}, {"--user", "--user"}, {"-w", "-w"}, {"--workdir", "-w"}}, {"--user", "-w"});
  if (p.positional.size() < 2) unsupported();
  maybe_fault("exec");
  const std::string& name = p.positional[0];
  Container c = require_container(name);
  if (!c.running) fail(container_not_running(c.id), "WSLC_E_CONTAINER_NOT_RUNNING");
  std::vector<std::string> args{"exec"};
  if (auto u = p.one("--user")) args.insert(args.end(), {"-u", *u});
  if (auto w = p.one("-w")) args.insert(args.end(), {"-w", *w});
  args.insert(args.end(), p.positional.begin(), p.positional.end());
  become_docker(args);  // no -i: stdin is not forwarded (C-12)
}

bool path_absent(const std::string& err) {
  return contains(err, "Could not find the file") || contains(err, "No such container:path");
}

[[noreturn]] void copy_in(const std::string& destination) {
  const auto colon = destination.find(':');
  if (colon == std::string::npos) unsupported();
  const std::string name = destination.substr(0, colon);
  if (::isatty(0)) fail("The standard input is a console; pipe a tar archive", "E_INVALIDARG");
  require_container(name);
  auto r = run_docker({"cp", "-", destination}, /*inherit_stdin=*/true);
  if (r.exit_code == 0) finish(0);
  fail(clean_docker_message(r.err), path_absent(r.err) ? "ERROR_PATH_NOT_FOUND" : "E_FAIL");
}

/// C-14: no stdout form; one regular file's bytes land in `target` (relative to the cwd,
/// `-` included); a directory or several entries refuse after the whole download.
[[noreturn]] void copy_out(const std::string& source, const std::string& target) {
  const auto colon = source.find(':');
  if (colon == std::string::npos) unsupported();
  const std::string name = source.substr(0, colon);
  const std::string path = source.substr(colon + 1);
  Container c = require_container(name);
  auto r = run_docker({"cp", source, "-"});
  if (r.exit_code != 0) {
    if (path_absent(r.err)) fail("Could not find the file " + path + " in container " + c.id, "ERROR_PATH_NOT_FOUND");
    fail(clean_docker_message(r.err), "E_FAIL");
  }
  maf::sandbox::support::TarReader reader;
  reader.feed(r.out);
  reader.finish();
  int entries = 0;
  bool first_is_regular = false, first_is_directory = false;
  std::string body;
  try {
    for (auto ev = reader.next(); ev.kind != ev.need_more && ev.kind != ev.end; ev = reader.next()) {
      if (ev.kind == ev.header) {
        if (++entries == 1) {
          first_is_regular = ev.entry->type == maf::sandbox::support::TarEntryType::file;
          first_is_directory = ev.entry->type == maf::sandbox::support::TarEntryType::directory;
        }
      } else if (ev.kind == ev.body && entries == 1 && first_is_regular) {
        body.append(ev.data);
      }
    }
  } catch (const std::exception& e) {
    fail(std::string("Unreadable container archive: ") + e.what(), "E_FAIL");
  }
  if (first_is_directory || entries > 1)
    fail("Cannot copy a directory to a file path. Use a directory target (with trailing separator) instead.",
         "E_FAIL");
  if (entries == 0) fail("No file extracted from container archive", "E_FAIL");
  std::ofstream(target, std::ios::binary | std::ios::trunc) << body;
  finish(0);
}

[[noreturn]] void container_cp(std::size_t at) {
  auto p = parse(at, {}, {});
  if (p.positional.size() != 2) unsupported();
  maybe_fault("cp");
  if (p.positional[0] == "-") copy_in(p.positional[1]);
  copy_out(p.positional[0], p.positional[1]);
}

[[noreturn]] void container_list(std::size_t at) {
  auto p = parse(at, {{"-a", "-a"}, {"--all", "-a"}, {"--format", "--format"}, {"--filter", "--filter"}},
                 {"--format", "--filter"});
  if (!p.positional.empty() || p.one("--format") != std::optional<std::string>("json")) unsupported();
  maybe_fault("list");
  std::vector<std::string> args{"ps"};
  if (p.has("-a")) args.push_back("-a");
  args.insert(args.end(), {"--filter", "label=" + std::string(kSessionLabel) + "=" + session()});
  for (const auto& f : p.options["--filter"]) {
    const std::string key = f.substr(0, f.find('='));
    if (key != "name" && key != "label" && key != "id" && key != "status") fail("invalid filter '" + f + "'", "E_INVALIDARG");
    args.insert(args.end(), {"--filter", f});
  }
  args.insert(args.end(), {"--format", "{{json .}}"});
  auto r = run_docker(args);
  if (r.exit_code != 0) fail(clean_docker_message(r.err), "E_FAIL");
  std::vector<nlohmann::json> lines;
  std::size_t start = 0;
  while (start < r.out.size()) {
    std::size_t nl = r.out.find('\n', start);
    if (nl == std::string::npos) nl = r.out.size();
    const std::string line = r.out.substr(start, nl - start);
    start = nl + 1;
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  const ListShape shape = list_shape();
  if (shape == ListShape::Docker) {
    std::cout << render_from_ps(lines);
    finish(0);
  }
  std::vector<nlohmann::json> docs;
  if (!lines.empty()) {
    std::vector<std::string> inspect{"container", "inspect", "--format", "{{json .}}"};
    for (const auto& l : lines) inspect.push_back(l.value("ID", ""));
    auto i = run_docker(inspect);
    // A container removed since `ps` is simply absent from the answer.
    std::size_t s = 0;
    while (s < i.out.size()) {
      std::size_t nl = i.out.find('\n', s);
      if (nl == std::string::npos) nl = i.out.size();
      const std::string line = i.out.substr(s, nl - s);
      s = nl + 1;
      if (!line.empty()) docs.push_back(nlohmann::json::parse(line));
    }
  }
  std::cout << render_from_inspect(docs, shape);
  finish(0);
}

[[noreturn]] void container_remove(std::size_t at) {
  auto p = parse(at, {{"-f", "-f"}, {"--force", "-f"}}, {});
  if (p.positional.size() != 1) unsupported();
  maybe_fault("remove");
  const std::string& name = p.positional[0];
  require_container(name);  // C-16: missing exits 1 even with -f
  auto r = run_docker({"rm", p.has("-f") ? "-f" : "--", name});
  if (r.exit_code != 0) {
    if (contains(r.err, "cannot remove a running container") || contains(r.err, "You cannot remove a running"))
      fail(clean_docker_message(r.err), "WSLC_E_CONTAINER_IS_RUNNING");
    fail(clean_docker_message(r.err), "E_FAIL");
  }
  print_line(name);
  finish(0);
}

[[noreturn]] void container_logs(std::size_t at) {
  auto p = parse(at, {{"--tail", "--tail"}, {"-n", "--tail"}}, {"--tail"});
  if (p.positional.size() != 1) unsupported();
  maybe_fault("logs");
  require_container(p.positional[0]);
  std::vector<std::string> args{"logs"};
  if (auto t = p.one("--tail")) args.insert(args.end(), {"--tail", *t});
  args.push_back(p.positional[0]);
  become_docker(args);
}

// ---- network verbs ----------------------------------------------------------------------

[[noreturn]] void network_create(std::size_t at) {
  auto p = parse(at, {{"--internal", "--internal"}, {"-l", "-l"}, {"--label", "-l"}}, {"-l"});
  if (p.positional.size() != 1) unsupported();
  maybe_fault("network-create");
  const std::string& name = p.positional[0];
  if (name == "bridge" || name == "host" || name == "none") fail("The parameter is incorrect. ", "E_INVALIDARG");
  std::vector<std::string> args{"network", "create"};
  // The shim stands in for the session VM's engine. There an internal network's gateway
  // lives inside the utility VM; here it would be an address of this very host, reachable
  // from the workload. inhibit_ipv4 keeps the bridge free of any host address (the
  // Engine-20.10 form of gateway_mode_ipv4=isolated; docker.md §egress), IPv6 stays off, so
  // the workload's only peer is its proxy — what wslc promises, not a Linux accident.
  if (p.has("--internal")) args.insert(args.end(), {"--internal", "-o", std::string(kInhibitIpv4) + "=true"});
  for (const auto& l : p.options["-l"]) args.insert(args.end(), {"--label", l});
  args.insert(args.end(), {"--label", std::string(kSessionLabel) + "=" + session(), "--label",
                           "com.microsoft.wsl.network.managed=true", name});
  auto r = run_docker(args);
  if (r.exit_code != 0) {
    if (contains(r.err, "already exists")) fail("Cannot create a file when that file already exists. ", "ERROR_ALREADY_EXISTS");
    fail(clean_docker_message(r.err), "E_FAIL");
  }
  print_line(name);
  finish(0);
}

[[noreturn]] void network_remove(std::size_t at) {
  auto p = parse(at, {{"--force", "--force"}, {"-f", "--force"}}, {});
  if (p.positional.size() != 1) unsupported();
  maybe_fault("network-remove");
  const std::string& name = p.positional[0];
  auto r = run_docker({"network", "rm", name});
  if (r.exit_code == 0) {
    print_line(name);
    finish(0);
  }
  if (contains(r.err, "not found") || contains(r.err, "No such network")) {
    if (p.has("--force")) finish(0);  // C-19: --force suppresses only absence
    fail(network_not_found(name), "");  // localized, no symbol
  }
  fail(clean_docker_message(r.err), "E_FAIL");
}

[[noreturn]] void network_connect(std::size_t at) {
  auto p = parse(at, {}, {});
  if (p.positional.size() != 2) unsupported();
  maybe_fault("network-connect");
  const std::string& network = p.positional[0];
  Container c = require_container(p.positional[1]);
  const std::string mode = c.doc["HostConfig"].value("NetworkMode", "");
  if (mode == "none" || mode == "host") fail("The parameter is incorrect. ", "E_INVALIDARG");
  // wslc's `bridge` is the session VM's NAT network, not this host's docker0 (which an engine
  // may not even have): a test names the network that plays it, so the proxy's outbound leg
  // reaches the test's own servers and nothing leaves the machine.
  const std::string engine_network = network == "bridge" ? env_or("WSLC_SHIM_BRIDGE_NETWORK", "bridge") : network;
  auto r = run_docker({"network", "connect", engine_network, p.positional[1]});
  if (r.exit_code == 0) finish(0);
  if (contains(r.err, "not found") || contains(r.err, "No such network"))
    fail(network_not_found(network), "WSLC_E_NETWORK_NOT_FOUND");
  fail(clean_docker_message(r.err), "E_FAIL");
}

[[noreturn]] void dispatch() {
  if (g_argv.empty()) unsupported();
  const std::string& verb = g_argv[0];
  if (verb == "version" && g_argv.size() == 1) {
    maybe_fault("version");
    print_line("wslc " + shim_version());
    finish(0);
  }
  if (verb == "build" || (verb == "image" && g_argv.size() > 1 && g_argv[1] == "build")) {
    maybe_fault("build");
    std::vector<std::string> args{"build"};
    args.insert(args.end(), g_argv.begin() + (verb == "build" ? 1 : 2), g_argv.end());
    become_docker(args);
  }
  if (g_argv.size() < 2) unsupported();
  const std::string& sub = g_argv[1];
  if (verb == "container") {
    if (sub == "run") container_run(2);
    if (sub == "start") container_start(2);
    if (sub == "exec") container_exec(2);
    if (sub == "cp") container_cp(2);
    if (sub == "list" || sub == "ls" || sub == "ps") container_list(2);
    if (sub == "remove" || sub == "rm" || sub == "delete") container_remove(2);
    if (sub == "logs") container_logs(2);
  }
  if (verb == "network") {
    if (sub == "create") network_create(2);
    if (sub == "remove" || sub == "rm" || sub == "delete") network_remove(2);
    if (sub == "connect") network_connect(2);
  }
  unsupported();
}

}  // namespace
}  // namespace wslc_shim

int main(int argc, char** argv) {
  wslc_shim::g_argv.assign(argv + 1, argv + argc);
  try {
    wslc_shim::dispatch();
  } catch (const std::exception& e) {
    wslc_shim::fail(std::string("wslc-shim: ") + e.what(), "E_FAIL");
  }
}

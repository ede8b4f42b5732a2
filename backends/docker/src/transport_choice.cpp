#include "maf/sandbox/docker/transport_choice.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace maf::sandbox::docker {
namespace {

constexpr const char* kDefaultSocket = "/var/run/docker.sock";

/// True when a unix-socket connection to `path` is accepted (then closed unused): the
/// endpoint exists, listens, and this process's credentials may open it.
bool socket_opens(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) return false;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

/// The client's current context when one is named: DOCKER_CONTEXT, else config.json's
/// `currentContext` (DOCKER_CONFIG, else ~/.docker). "" or "default" mean none.
std::string current_context() {
  if (std::string named = env("DOCKER_CONTEXT"); !named.empty()) return named;
  std::filesystem::path dir = env("DOCKER_CONFIG");
  if (dir.empty()) {
    const std::string home = env("HOME");
    if (home.empty()) return "";
    dir = std::filesystem::path(home) / ".docker";
  }
  std::ifstream in(dir / "config.json");
  if (!in) return "";
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "";
  const auto it = j.find("currentContext");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

TransportChoice chosen(DockerTransportKind kind, std::string reason) { return {kind, std::move(reason)}; }

}  // namespace

const char* to_string(DockerTransportKind kind) noexcept {
  switch (kind) {
    case DockerTransportKind::Cli: return "cli";
    case DockerTransportKind::Api: return "api";
    case DockerTransportKind::Auto: break;
  }
  return "auto";
}

TransportChoice choose_transport(const DockerConfig& config) {
  using K = DockerTransportKind;
  if (config.transport == K::Cli) return chosen(K::Cli, "configured \"transport\": \"cli\"");
  if (config.transport == K::Api) return chosen(K::Api, "configured \"transport\": \"api\"");
  if (config.docker_host) return chosen(K::Api, "auto: docker_host '" + *config.docker_host + "' is read by the API");
  if (std::filesystem::path(config.docker_path).filename() != "docker")
    return chosen(K::Cli, "auto: docker_path '" + config.docker_path + "' is not docker's own client");
  if (const std::string host = env("DOCKER_HOST"); !host.empty()) {
    if (host.rfind("unix://", 0) == 0 && socket_opens(host.substr(7)))
      return chosen(K::Api, "auto: DOCKER_HOST '" + host + "' is a local socket this process can open");
    return chosen(K::Cli, "auto: DOCKER_HOST '" + host + "' is not a local socket this process can open");
  }
  if (const std::string context = current_context(); !context.empty() && context != "default")
    return chosen(K::Cli, "auto: the client's current context is '" + context + "'");
  if (socket_opens(kDefaultSocket))
    return chosen(K::Api, std::string("auto: the default socket ") + kDefaultSocket + " opens");
  return chosen(K::Cli, std::string("auto: the default socket ") + kDefaultSocket + " does not open");
}

}  // namespace maf::sandbox::docker

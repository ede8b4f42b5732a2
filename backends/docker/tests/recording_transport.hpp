#pragma once
// A DockerTransport double for offline tests: records every call, answers from a small map
// of containers; tests set the proxy's removal outcome and failures, or derive from it to
// script an engine behaviour (unit_docker_freeze).
#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "maf/sandbox/docker/transport.hpp"
#include "maf/sandbox/errors.hpp"

namespace docker_test {

using namespace maf::sandbox;
using namespace maf::sandbox::docker;

/// Records every call; the proxy's removal outcome and failures are set per test.
class RecordingTransport : public DockerTransport {
public:
  std::vector<std::string> calls;
  std::map<std::string, std::string> containers;  ///< name -> inspect JSON (present ones)
  std::string proxy_id = "proxy-id";
  RemoveOutcome proxy_removal = RemoveOutcome::Removed;
  bool inspect_fails = false;
  bool stop_cancels = false;
  std::string proxy_log;

  void add(const std::string& name, const std::string& id, const std::map<std::string, std::string>& labels) {
    containers[name] = nlohmann::json{{"Id", id},
                                      {"Name", "/" + name},
                                      {"Created", "2020-01-01T00:00:00.5Z"},
                                      {"Config", {{"Labels", labels}}}}
                           .dump();
  }
  bool present(const std::string& name_or_id) const {
    return std::any_of(containers.begin(), containers.end(), [&](const auto& c) {
      return c.first == name_or_id || nlohmann::json::parse(c.second)["Id"] == name_or_id;
    });
  }

  using A = boost::asio::awaitable<void>;
  // A remote endpoint on an Engine 28: the topology needs no host-side bridge check.
  boost::asio::awaitable<std::string> endpoint() override { co_return "tcp://engine.test:2375"; }
  boost::asio::awaitable<std::string> server_version() override { co_return "28.0.0"; }
  boost::asio::awaitable<std::string> server_os() override { co_return "linux"; }
  boost::asio::awaitable<std::optional<ContainerState>> container_state(std::string c) override {
    calls.push_back("state " + c);
    if (!present(c)) co_return std::nullopt;
    co_return ContainerState{"id", "running", true, false, ""};
  }
  boost::asio::awaitable<std::string> config_user(std::string) override { co_return ""; }
  boost::asio::awaitable<std::optional<std::string>> inspect_container(std::string c) override {
    calls.push_back("inspect " + c);
    if (inspect_fails) throw OSError("engine gone");
    for (const auto& [name, doc] : containers)
      if (name == c || nlohmann::json::parse(doc)["Id"] == c) co_return doc;
    co_return std::nullopt;
  }
  boost::asio::awaitable<bool> image_present(std::string) override { co_return true; }
  A pull_image(std::string) override { co_return; }
  boost::asio::awaitable<CreateResult> create_and_start(CreateRequest q) override {
    calls.push_back("run " + q.name);
    co_return CreateResult{CreateOutcome::Created, {}};
  }
  boost::asio::awaitable<bool> start(std::string, std::string&) override { co_return true; }
  boost::asio::awaitable<RemoveResult> remove_container(std::string c) override {
    calls.push_back("rm " + c);
    if (c == proxy_id) co_return RemoveResult{proxy_removal, proxy_removal == RemoveOutcome::Refused ? "busy" : ""};
    co_return RemoveResult{RemoveOutcome::Removed, {}};
  }
  A pause(std::string) override { co_return; }
  A unpause(std::string) override { co_return; }
  boost::asio::awaitable<ExecOutcome> exec(ExecCall) override { co_return ExecOutcome{}; }
  boost::asio::awaitable<ArchiveGet> archive_get(std::string, std::string, std::size_t) override {
    co_return ArchiveGet{};
  }
  A archive_put(std::string, std::string, std::string) override { co_return; }
  boost::asio::awaitable<std::vector<LabelledResource>> list_containers(std::vector<std::string>,
                                                                        std::optional<std::string>) override {
    calls.push_back("ps");
    std::vector<LabelledResource> out;
    for (const auto& [name, doc] : containers) {
      const auto j = nlohmann::json::parse(doc);
      out.push_back(LabelledResource{j["Id"].get<std::string>(), name,
                                     j["Config"]["Labels"].get<std::map<std::string, std::string>>(),
                                     j["Created"].get<std::string>()});
    }
    co_return out;
  }
  boost::asio::awaitable<std::vector<LabelledResource>> list_networks(std::vector<std::string>) override {
    co_return std::vector<LabelledResource>{};
  }
  std::map<std::string, std::string> network_labels;  ///< what the adopted network carries
  boost::asio::awaitable<CreateResult> create_network(NetworkRequest) override {
    co_return CreateResult{CreateOutcome::NameInUse, {}};
  }
  boost::asio::awaitable<std::optional<std::string>> inspect_network(std::string) override {
    co_return nlohmann::json{{"Id", std::string(64, 'c')},
                             {"Internal", true},
                             {"EnableIPv6", false},
                             {"Options",
                              {{"com.docker.network.bridge.gateway_mode_ipv4", "isolated"},
                               {"com.docker.network.bridge.gateway_mode_ipv6", "isolated"}}},
                             {"Labels", network_labels}}
        .dump();
  }
  A connect_network(std::string, std::string) override { co_return; }
  boost::asio::awaitable<RemoveResult> remove_network(std::string n) override {
    calls.push_back("network rm " + n);
    co_return RemoveResult{RemoveOutcome::Removed, {}};
  }
  bool has_egress_plane() const noexcept override { return true; }
  A stop_container(std::string c, std::chrono::seconds grace) override {
    calls.push_back("stop -t " + std::to_string(grace.count()) + " " + c);
    if (stop_cancels) throw Cancelled();
    co_return;
  }
  boost::asio::awaitable<std::string> container_logs(std::string c, std::size_t) override {
    calls.push_back("logs " + c);
    co_return proxy_log;
  }
};

}  // namespace docker_test

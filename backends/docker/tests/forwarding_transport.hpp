#pragma once
// A DockerTransport that forwards every operation to a real one, for test doubles that
// change one or two of them (issue 22's weakened proxy, issue 45's pass-through proxy).
// creates_unstarted() keeps the base's false, so every create comes through
// create_and_start, where a double applies its change; image_labels is forwarded.
#include <memory>
#include <string>
#include <vector>

#include "maf/sandbox/docker/transport.hpp"

namespace docker_test {

class ForwardingTransport : public maf::sandbox::docker::DockerTransport {
public:
  explicit ForwardingTransport(std::shared_ptr<maf::sandbox::docker::DockerTransport> real) : real_(std::move(real)) {}
  using A = boost::asio::awaitable<void>;
  template <class T>
  using Aw = boost::asio::awaitable<T>;

  Aw<maf::sandbox::docker::CreateResult> create_and_start(maf::sandbox::docker::CreateRequest q) override {
    return real_->create_and_start(std::move(q));
  }
  Aw<std::string> endpoint() override { return real_->endpoint(); }
  Aw<std::string> server_os() override { return real_->server_os(); }
  Aw<std::optional<maf::sandbox::docker::ContainerState>> container_state(std::string c) override {
    return real_->container_state(std::move(c));
  }
  Aw<std::string> config_user(std::string c) override { return real_->config_user(std::move(c)); }
  Aw<std::optional<std::string>> inspect_container(std::string c) override {
    return real_->inspect_container(std::move(c));
  }
  Aw<bool> image_present(std::string i) override { return real_->image_present(std::move(i)); }
  A pull_image(std::string i) override { return real_->pull_image(std::move(i)); }
  Aw<bool> start(std::string c, std::string& detail) override { return real_->start(std::move(c), detail); }
  Aw<maf::sandbox::docker::RemoveResult> remove_container(std::string c) override { return real_->remove_container(std::move(c)); }
  A pause(std::string c) override { return real_->pause(std::move(c)); }
  A unpause(std::string c) override { return real_->unpause(std::move(c)); }
  Aw<maf::sandbox::docker::ExecOutcome> exec(maf::sandbox::docker::ExecCall call) override { return real_->exec(std::move(call)); }
  Aw<maf::sandbox::docker::ExecStreamEnd> exec_stream(maf::sandbox::docker::ExecStreamCall call, maf::sandbox::docker::ExecChunkSink sink) override {
    return real_->exec_stream(std::move(call), std::move(sink));
  }
  Aw<maf::sandbox::docker::ArchiveGet> archive_get(std::string c, std::string path, std::size_t limit) override {
    return real_->archive_get(std::move(c), std::move(path), limit);
  }
  Aw<maf::sandbox::docker::PathStat> path_stat(std::string c, std::string path) override {
    return real_->path_stat(std::move(c), std::move(path));
  }
  A archive_put(std::string c, std::string d, std::string tar) override {
    return real_->archive_put(std::move(c), std::move(d), std::move(tar));
  }
  A archive_put_upload(std::string c, std::string d, maf::sandbox::docker::TarUpload u) override {
    return real_->archive_put_upload(std::move(c), std::move(d), std::move(u));
  }
  Aw<std::vector<maf::sandbox::docker::LabelledResource>> list_containers(std::vector<std::string> f,
                                                            std::optional<std::string> r) override {
    return real_->list_containers(std::move(f), std::move(r));
  }
  Aw<std::vector<maf::sandbox::docker::LabelledResource>> list_networks(std::vector<std::string> f) override {
    return real_->list_networks(std::move(f));
  }
  Aw<std::optional<std::string>> inspect_network(std::string n) override { return real_->inspect_network(std::move(n)); }
  Aw<maf::sandbox::docker::RemoveResult> remove_network(std::string n) override { return real_->remove_network(std::move(n)); }
  std::size_t idle_connections() const override { return real_->idle_connections(); }
  bool has_egress_plane() const noexcept override { return real_->has_egress_plane(); }
  Aw<std::string> server_version() override { return real_->server_version(); }
  Aw<maf::sandbox::docker::CreateResult> create_network(maf::sandbox::docker::NetworkRequest q) override {
    return real_->create_network(std::move(q));
  }
  A connect_network(std::string n, std::string c) override { return real_->connect_network(std::move(n), std::move(c)); }
  Aw<std::string> container_logs(std::string c, std::size_t max) override {
    return real_->container_logs(std::move(c), max);
  }
  A stop_container(std::string c, std::chrono::seconds grace) override {
    return real_->stop_container(std::move(c), grace);
  }

  Aw<std::optional<std::string>> image_labels(std::string image) override {
    return real_->image_labels(std::move(image));
  }

protected:
  std::shared_ptr<maf::sandbox::docker::DockerTransport> real_;
};

}  // namespace docker_test

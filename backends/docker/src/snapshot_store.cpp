// The Docker backend's snapshot store (snapshot_store.hpp).
#include "snapshot_store.hpp"

#include <cerrno>
#include <cstring>
#include <random>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::docker::detail {
namespace {

constexpr const char* kResetId = "reset";  // never a snapshot() id: those are snap-<16 hex>

std::string fresh_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char digits[] = "0123456789abcdef";
  std::string out = "snap-";
  for (int i = 0; i < 16; ++i) out += digits[rng() % 16];
  return out;
}

std::string budget_text(std::uint64_t n) { return std::to_string(n) + " bytes"; }

}  // namespace

void DockerSnapshots::configure(std::uint64_t budget_bytes, std::chrono::seconds ttl) {
  std::lock_guard lock(mutex_);
  budget_ = budget_bytes;
  ttl_ = ttl;
}

void DockerSnapshots::prune_locked() {
  const auto now = std::chrono::system_clock::now();
  for (auto c = by_container_.begin(); c != by_container_.end();) {
    for (auto h = c->second.begin(); h != c->second.end();)
      h = h->second.info.expires_at <= now ? c->second.erase(h) : std::next(h);
    c = c->second.empty() ? by_container_.erase(c) : std::next(c);
  }
}

std::uint64_t DockerSnapshots::used_locked() const {
  std::uint64_t used = 0;
  for (const auto& [name, held] : by_container_)
    for (const auto& [id, h] : held) used += static_cast<std::uint64_t>(h.info.size_bytes);
  return used;
}

std::uint64_t DockerSnapshots::room() {
  std::lock_guard lock(mutex_);
  prune_locked();
  const std::uint64_t used = used_locked();
  return used >= budget_ ? 0 : budget_ - used;
}

SnapshotInfo DockerSnapshots::keep(const std::string& container, const std::string& container_id,
                                   const KeptTree& tree, bool reset) {
  std::lock_guard lock(mutex_);
  prune_locked();
  std::uint64_t used = used_locked();
  auto& held = by_container_[container];
  if (reset) {
    if (auto it = held.find(kResetId); it != held.end()) {
      used -= static_cast<std::uint64_t>(it->second.info.size_bytes);
      held.erase(it);
    }
  }
  const std::uint64_t size = tree.tar.size();
  if (used + size > budget_) {
    if (held.empty()) by_container_.erase(container);
    throw SandboxSnapshotBudgetExceeded("backend 'docker': a snapshot of container " + container + " holds " +
                                        budget_text(size) + "; with the " + budget_text(used) +
                                        " already held it would pass snapshot_budget_bytes=" + budget_text(budget_) +
                                        "; nothing was kept");
  }
  Held h;
  h.info.id = reset ? kResetId : fresh_id();
  h.info.fidelity = kDockerSnapshotFidelity;
  h.info.size_bytes = static_cast<std::int64_t>(size);
  h.info.expires_at = std::chrono::system_clock::now() + ttl_;
  h.container_id = container_id;
  h.absent = tree.absent;
  h.file = std::shared_ptr<std::FILE>(std::tmpfile(), [](std::FILE* f) {
    if (f) std::fclose(f);
  });
  if (!h.file) throw OSError("backend 'docker': no temporary file for a snapshot: " + std::string(std::strerror(errno)));
  if (size && std::fwrite(tree.tar.data(), 1, size, h.file.get()) != size)
    throw OSError("backend 'docker': writing a snapshot of " + budget_text(size) + " to its temporary file failed: " +
                  std::strerror(errno));
  std::fflush(h.file.get());
  SnapshotInfo info = h.info;
  held[h.info.id] = std::move(h);
  return info;
}

KeptTree DockerSnapshots::read_locked(const Held& h) const {
  KeptTree tree;
  tree.absent = h.absent;
  tree.tar.resize(static_cast<std::size_t>(h.info.size_bytes));
  std::rewind(h.file.get());
  if (!tree.tar.empty() && std::fread(tree.tar.data(), 1, tree.tar.size(), h.file.get()) != tree.tar.size())
    throw OSError("backend 'docker': reading snapshot " + h.info.id + " back from its temporary file failed");
  return tree;
}

KeptTree DockerSnapshots::tree_of(const std::string& container, const std::string& container_id,
                                  const std::string& id) {
  std::lock_guard lock(mutex_);
  prune_locked();
  if (id != kResetId)
    if (auto c = by_container_.find(container); c != by_container_.end())
      if (auto h = c->second.find(id); h != c->second.end() && h->second.container_id == container_id)
        return read_locked(h->second);
  throw SandboxSnapshotNotFound("backend 'docker': container " + container + " holds no snapshot '" + id +
                                "' (never taken here, released, expired, or its container was replaced)");
}

std::optional<KeptTree> DockerSnapshots::reset_tree(const std::string& container, const std::string& container_id) {
  std::lock_guard lock(mutex_);
  prune_locked();
  if (auto c = by_container_.find(container); c != by_container_.end())
    if (auto h = c->second.find(kResetId); h != c->second.end() && h->second.container_id == container_id)
      return read_locked(h->second);
  return std::nullopt;
}

void DockerSnapshots::release(const std::string& container, const std::string& container_id, const std::string& id) {
  std::lock_guard lock(mutex_);
  prune_locked();
  if (id != kResetId)
    if (auto c = by_container_.find(container); c != by_container_.end())
      if (auto h = c->second.find(id); h != c->second.end() && h->second.container_id == container_id) {
        c->second.erase(h);
        if (c->second.empty()) by_container_.erase(c);
        return;
      }
  throw SandboxSnapshotNotFound("backend 'docker': container " + container + " holds no snapshot '" + id +
                                "' to release");
}

std::vector<SnapshotInfo> DockerSnapshots::held(const std::string& container, const std::string& container_id) {
  std::lock_guard lock(mutex_);
  prune_locked();
  std::vector<SnapshotInfo> out;
  if (auto c = by_container_.find(container); c != by_container_.end())
    for (const auto& [id, h] : c->second)
      if (id != kResetId && h.container_id == container_id) out.push_back(h.info);
  return out;
}

void DockerSnapshots::forget(const std::string& container) {
  std::lock_guard lock(mutex_);
  by_container_.erase(container);
}

}  // namespace maf::sandbox::docker::detail

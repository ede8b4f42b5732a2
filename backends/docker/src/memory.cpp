// DockerMemory (memory.hpp): the per-container facts, pruned with their sandbox, and the
// per-image cache.
#include "memory.hpp"

#include "maf/sandbox/support/labels.hpp"

namespace maf::sandbox::docker::detail {
namespace {

std::string key_string(const SandboxKey& key) {
  return support::length_prefixed({key.scope, key.thread_id, key.agent_id, key.call_id});
}

}  // namespace

DockerMemory::ContainerFacts& DockerMemory::container_locked(const std::string& container, const std::string& id) {
  ContainerFacts& facts = containers_[container];
  if (facts.id != id) facts = ContainerFacts{id, {}, std::nullopt};
  return facts;
}

bool DockerMemory::probe_passed(const std::string& container, const std::string& id, const std::string& fresh_image,
                                const std::string& probe) {
  std::lock_guard lock(mutex_);
  ContainerFacts& facts = container_locked(container, id);
  if (facts.probes_passed.contains(probe)) return true;
  if (fresh_image.empty()) return false;
  auto image = images_.find(fresh_image);
  if (image == images_.end() || !image->second.probes_passed.contains(probe)) return false;
  facts.probes_passed.insert(probe);
  return true;
}

void DockerMemory::record_probe(const std::string& container, const std::string& id, const std::string& fresh_image,
                                const std::string& probe) {
  std::lock_guard lock(mutex_);
  container_locked(container, id).probes_passed.insert(probe);
  if (!fresh_image.empty()) images_[fresh_image].probes_passed.insert(probe);
}

bool DockerMemory::image_passed_all(const std::string& image_id, const std::vector<std::string>& probes) {
  std::lock_guard lock(mutex_);
  auto image = images_.find(image_id);
  if (image == images_.end()) return probes.empty();
  const auto& passed = image->second.probes_passed;
  for (const auto& name : probes)
    if (!passed.contains(name) && !(name == "sh" && passed.contains("host-tools"))) return false;
  return true;
}

std::optional<GuestUser> DockerMemory::guest_user(const std::string& container, const std::string& id,
                                                  const std::string& fresh_image) {
  std::lock_guard lock(mutex_);
  ContainerFacts& facts = container_locked(container, id);
  if (!facts.user && !fresh_image.empty())
    if (auto image = images_.find(fresh_image); image != images_.end()) facts.user = image->second.user;
  return facts.user;
}

void DockerMemory::record_guest_user(const std::string& container, const std::string& id,
                                     const std::string& fresh_image, const GuestUser& user) {
  std::lock_guard lock(mutex_);
  container_locked(container, id).user = user;
  if (!fresh_image.empty()) images_[fresh_image].user = user;
}

std::optional<GuestUser> DockerMemory::image_user(const std::string& image_id) {
  std::lock_guard lock(mutex_);
  auto image = images_.find(image_id);
  return image == images_.end() ? std::nullopt : image->second.user;
}

void DockerMemory::record_work_dir(const std::string& image_id, const std::string& base, std::size_t first_missing) {
  std::lock_guard lock(mutex_);
  images_[image_id].work_dir_suffix.try_emplace(base, first_missing);
}

std::optional<std::size_t> DockerMemory::work_dir_suffix(const std::string& image_id, const std::string& base) {
  std::lock_guard lock(mutex_);
  auto image = images_.find(image_id);
  if (image == images_.end()) return std::nullopt;
  auto suffix = image->second.work_dir_suffix.find(base);
  if (suffix == image->second.work_dir_suffix.end()) return std::nullopt;
  return suffix->second;
}

bool DockerMemory::work_dir_known(const std::string& base) {
  std::lock_guard lock(mutex_);
  for (const auto& [id, image] : images_)
    if (image.work_dir_suffix.contains(base)) return true;
  return false;
}

void DockerMemory::remember(const SandboxKey& key, const std::string& container) {
  std::lock_guard lock(mutex_);
  acquired_[key_string(key)].insert(container);
}

std::vector<std::string> DockerMemory::remembered(const SandboxKey& key, bool forget) {
  std::lock_guard lock(mutex_);
  auto it = acquired_.find(key_string(key));
  if (it == acquired_.end()) return {};
  std::vector<std::string> out(it->second.begin(), it->second.end());
  if (forget) {
    acquired_.erase(it);
    for (const auto& name : out) {
      containers_.erase(name);
      snapshots.forget(name);
    }
  }
  return out;
}

void DockerMemory::forget(const std::string& container) {
  snapshots.forget(container);
  std::lock_guard lock(mutex_);
  forget_locked(container);
}

void DockerMemory::forget_locked(const std::string& container) {
  containers_.erase(container);
  for (auto it = acquired_.begin(); it != acquired_.end();) {
    it->second.erase(container);
    it = it->second.empty() ? acquired_.erase(it) : std::next(it);
  }
}

}  // namespace maf::sandbox::docker::detail

#pragma once
// What this process remembers of the containers it acquired and the images it created them
// from (issue 24), shared by the backend and its sandboxes: a sandbox records its storage
// base's walk (do_prepare_storage_base) and forgets its container when it is abandoned
// (EXE-2). Only successes are remembered (D-24); every fact is a saving, never a decision.
//
// Per container (by name, for the container ID the facts are of): pruned when the sandbox
// goes — dispose, scope purge, reap, abandon, a ttl expiry (forget). Per image ID: a cache
// bounded by the images this process created containers from, kept for the backend's life
// (a fact of the image, not of any one sandbox).

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "maf/sandbox/key.hpp"
#include "snapshot_store.hpp"

namespace maf::sandbox::docker::detail {

/// The image user's uid:gid inputs are owned by (D-14, D-25); `resolved` false means the
/// root fallback, which is never remembered.
struct GuestUser {
  long long uid = 0;
  long long gid = 0;
  bool resolved = false;
};

class DockerMemory {
public:
  // Probes (D-24). `fresh_image`: the image ID of a container this acquire created, else
  // empty — what a fresh container of that image passed counts for this one.
  /// Passed by this container, or by a fresh container of `fresh_image` (then remembered
  /// for this container too).
  bool probe_passed(const std::string& container, const std::string& id, const std::string& fresh_image,
                    const std::string& probe);
  void record_probe(const std::string& container, const std::string& id, const std::string& fresh_image,
                    const std::string& probe);
  /// Every one of `probes` was passed by a fresh container of `image_id` (host-tools passing
  /// stands for sh).
  bool image_passed_all(const std::string& image_id, const std::vector<std::string>& probes);

  // The image user (D-25), the same way.
  std::optional<GuestUser> guest_user(const std::string& container, const std::string& id,
                                      const std::string& fresh_image);
  void record_guest_user(const std::string& container, const std::string& id, const std::string& fresh_image,
                         const GuestUser& user);
  std::optional<GuestUser> image_user(const std::string& image_id);

  // The work directory: (image ID, base) -> index in the base's component chain of the first
  // component a fresh container of that image lacked (the chain's size: none). Only the
  // first finding is kept: a later fresh container whose directory was uploaded before its
  // start shows the upload, not the image.
  void record_work_dir(const std::string& image_id, const std::string& base, std::size_t first_missing);
  std::optional<std::size_t> work_dir_suffix(const std::string& image_id, const std::string& base);
  /// Some image's fact about `base` is known (else not even the inspect is worth it).
  bool work_dir_known(const std::string& base);

  // The names this process acquired, per key (dispose's fallback when a listing fails).
  void remember(const SandboxKey& key, const std::string& container);
  /// The key's names; with `forget`, the key's entry and its containers' facts go too.
  std::vector<std::string> remembered(const SandboxKey& key, bool forget);

  /// `container` is gone: its facts, its acquired entry and its snapshots are dropped.
  void forget(const std::string& container);

  /// The snapshots this process holds (issue 49), pruned with the rest by forget.
  DockerSnapshots snapshots;

private:
  struct ContainerFacts {
    std::string id;  ///< the facts are this container ID's; a recreated name starts over
    std::set<std::string> probes_passed;
    std::optional<GuestUser> user;
  };
  struct ImageFacts {
    std::set<std::string> probes_passed;
    std::optional<GuestUser> user;
    std::map<std::string, std::size_t> work_dir_suffix;  ///< per base
  };
  ContainerFacts& container_locked(const std::string& container, const std::string& id);
  void forget_locked(const std::string& container);

  std::mutex mutex_;
  std::map<std::string, ContainerFacts> containers_;  ///< per container name: pruned by forget
  std::map<std::string, ImageFacts> images_;          ///< per image ID: a cache, kept (bounded by images)
  std::map<std::string, std::set<std::string>> acquired_;  ///< length-prefixed key -> names; pruned by forget
};

}  // namespace maf::sandbox::docker::detail

#include "snapshots.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "guest_snapshot.hpp"
#include "guest_tree.hpp"
#include "maf/sandbox/errors.hpp"
#include "process_sandbox.hpp"
#include "said.hpp"

namespace maf::sandbox::process {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kIdPrefix = "snap-";

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string fresh_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(kIdPrefix);
  for (int i = 0; i < 16; ++i) out += digits[rng() % 16];
  return out;
}

/// An id names a directory: only ids of the shape this backend makes are looked up, so no
/// caller's string can name `..` or another path.
bool well_formed(const std::string& id) {
  if (id.size() != kIdPrefix.size() + 16 || id.rfind(kIdPrefix, 0) != 0) return false;
  for (std::size_t i = kIdPrefix.size(); i < id.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(id[i]))) return false;
  return true;
}

fs::path store_of(const fs::path& sandbox_dir) { return sandbox_dir / "snapshots"; }

struct Stored {
  SnapshotInfo info;
  std::int64_t expires_unix = 0;
};

std::optional<Stored> read_stored(const fs::path& dir) {
  std::ifstream in(dir / "meta.json");
  if (!in) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(in);
    Stored s;
    s.info.id = dir.filename().string();
    s.info.fidelity = kProcessSnapshotFidelity;
    s.info.size_bytes = j.at("size_bytes").get<std::int64_t>();
    s.expires_unix = j.at("expires_unix").get<std::int64_t>();
    s.info.expires_at = std::chrono::system_clock::time_point(std::chrono::seconds(s.expires_unix));
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// The unexpired snapshots; expired ones (and half-taken ones left by a killed host, which
/// have no meta.json and are older than a minute) are removed on the way (SNAP-6).
std::vector<Stored> prune(const fs::path& sandbox_dir) {
  std::vector<Stored> out;
  std::error_code ec;
  const std::int64_t now = unix_now();
  for (const auto& entry : fs::directory_iterator(store_of(sandbox_dir), ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_symlink(ec) || !entry.is_directory(ec)) continue;
    if (name.rfind(".taking-", 0) == 0) {
      struct stat st {};
      if (::lstat(entry.path().c_str(), &st) == 0 && st.st_mtime + 60 < now) remove_host_tree(entry.path().string());
      continue;
    }
    auto stored = read_stored(entry.path());
    if (stored && stored->expires_unix > now) out.push_back(std::move(*stored));
    else remove_host_tree(entry.path().string());
  }
  return out;
}

/// Bytes of the regular files under `root` (links not followed): what a copy would hold.
std::int64_t tree_bytes(const fs::path& root) {
  std::int64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += st.st_size;
  }
  return total;
}

[[noreturn]] void not_found(const fs::path& sandbox_dir, const std::string& id) {
  throw SandboxSnapshotNotFound(said("sandbox ") + sandbox_dir.filename().string() + " holds no snapshot '" + id +
                                "' (never taken, released, or past its ttl)");
}

}  // namespace

std::vector<SnapshotInfo> held_snapshots(const fs::path& sandbox_dir) {
  std::vector<SnapshotInfo> out;
  for (auto& s : prune(sandbox_dir)) out.push_back(std::move(s.info));
  return out;
}

fs::path snapshot_tree(const fs::path& sandbox_dir, const std::string& id) {
  if (!well_formed(id)) not_found(sandbox_dir, id);
  for (const auto& s : prune(sandbox_dir))
    if (s.info.id == id) return store_of(sandbox_dir) / id / "tree";
  not_found(sandbox_dir, id);
}

SnapshotInfo take_guest_snapshot(const fs::path& sandbox_dir, std::uint64_t budget_bytes, std::chrono::seconds ttl) {
  std::int64_t held = 0;
  for (const auto& s : prune(sandbox_dir)) held += s.info.size_bytes;
  const std::int64_t size = tree_bytes(sandbox_dir / "root");
  if (static_cast<std::uint64_t>(held + size) > budget_bytes)
    throw SandboxSnapshotBudgetExceeded(said("a snapshot of sandbox ") + sandbox_dir.filename().string() + " would hold " +
                                        std::to_string(size) + " bytes beside the " + std::to_string(held) +
                                        " its snapshots hold, past the snapshot budget of " +
                                        std::to_string(budget_bytes) + " bytes (snapshot_budget_bytes); release one");
  const std::string id = fresh_id();
  const fs::path store = store_of(sandbox_dir);
  const fs::path taking = store / (".taking-" + id);
  if (::mkdir(store.c_str(), 0700) != 0 && errno != EEXIST)
    throw OSError(said("cannot create '") + store.string() + "': " + std::strerror(errno));
  if (::mkdir(taking.c_str(), 0700) != 0)
    throw OSError(said("cannot create '") + taking.string() + "': " + std::strerror(errno));
  SnapshotInfo info{id, kProcessSnapshotFidelity, 0, {}};
  try {
    info.size_bytes = copy_guest_tree((sandbox_dir / "root").string(), (taking / "tree").string());
    const std::int64_t expires = unix_now() + ttl.count();
    info.expires_at = std::chrono::system_clock::time_point(std::chrono::seconds(expires));
    std::ofstream meta(taking / "meta.json");
    meta << nlohmann::json{{"size_bytes", info.size_bytes}, {"expires_unix", expires},
                           {"fidelity", std::string(to_string(info.fidelity))}}
                .dump();
    meta.close();
    if (!meta) throw OSError(said("cannot write the snapshot record in '") + taking.string() + "'");
    if (::rename(taking.c_str(), (store / id).c_str()) != 0)
      throw OSError(said("cannot put snapshot '") + id + "' in place: " + std::strerror(errno));
  } catch (...) {
    remove_host_tree(taking.string());
    throw;
  }
  return info;
}

void release_guest_snapshot(const fs::path& sandbox_dir, const std::string& id) {
  remove_host_tree(snapshot_tree(sandbox_dir, id).parent_path().string());
}

// ProcessSandbox's snapshot and pause hooks: one at a time per sandbox object, with RESET.

void ProcessSandbox::copy_snapshot_to(const std::string& id, const std::string& to) {
  std::lock_guard lock(reset_mutex_);
  copy_host_tree(snapshot_tree(sandbox_dir_, id).string(), to);
}

boost::asio::awaitable<SnapshotInfo> ProcessSandbox::do_snapshot() {
  std::lock_guard lock(reset_mutex_);
  co_return take_guest_snapshot(sandbox_dir_, config_->snapshot_budget_bytes, config_->snapshot_ttl);
}

boost::asio::awaitable<void> ProcessSandbox::do_restore(const std::string& snapshot_id, std::chrono::milliseconds timeout,
                                                        std::chrono::steady_clock::time_point deadline) {
  if (std::chrono::steady_clock::now() >= deadline)
    throw TimeoutError("restore of process sandbox (kind '" + kind() + "') found its timeout of " +
                       std::to_string(timeout.count()) + " ms already spent");
  std::lock_guard lock(reset_mutex_);
  const fs::path tree = snapshot_tree(sandbox_dir_, snapshot_id);
  // SNAP-3: `filesystem` keeps no process, so none runs after the restore — and none could
  // write into the restored tree through a descriptor it held.
  kill_guest_processes(tree_.root_dir());
  if (!config_->test_only_broken_snapshots) restore_tree(sandbox_dir_, tree.string());
  co_return;
}

boost::asio::awaitable<void> ProcessSandbox::do_release_snapshot(const std::string& snapshot_id) {
  std::lock_guard lock(reset_mutex_);
  if (config_->test_only_broken_snapshots) {
    (void)snapshot_tree(sandbox_dir_, snapshot_id);  // the broken double keeps it
    co_return;
  }
  release_guest_snapshot(sandbox_dir_, snapshot_id);
  co_return;
}

boost::asio::awaitable<std::vector<SnapshotInfo>> ProcessSandbox::do_snapshots() {
  std::lock_guard lock(reset_mutex_);
  co_return held_snapshots(sandbox_dir_);
}

boost::asio::awaitable<void> ProcessSandbox::do_pause() {
  if (!boundary_->freezer) throw NotImplementedError(said("this host has no usable cgroup freezer; pause is not offered"));
  boundary_->freezer->freeze(sandbox_dir_);
  co_return;
}

boost::asio::awaitable<void> ProcessSandbox::do_resume() {
  if (!boundary_->freezer) throw NotImplementedError(said("this host has no usable cgroup freezer; resume is not offered"));
  boundary_->freezer->thaw(sandbox_dir_);
  co_return;
}

}  // namespace maf::sandbox::process

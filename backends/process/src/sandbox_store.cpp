#include "sandbox_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/spec_json.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "said.hpp"

namespace maf::sandbox::process {
namespace fs = std::filesystem;
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

/// The names in `dir` (no `.`/`..`), from one readdir walk; empty when there is no such
/// directory. Throws OSError when it exists and cannot be listed (a disposal must not take
/// "unreadable" for "empty").
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    if (errno == ENOENT) return out;
    throw OSError(said("cannot list '") + dir.string() + "': " + std::strerror(errno));
  }
  while (const dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n != "." && n != "..") out.emplace_back(n);
  }
  ::closedir(d);
  return out;
}

/// A real directory (never a link) at `path`.
bool is_real_directory(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void collect(const fs::path& dir, std::vector<Record>& out) {
  for (const auto& n : names_in(dir)) {
    if (!starts_with(n, kNamePrefix) || starts_with(n, kConversationPrefix)) continue;
    const fs::path entry = dir / n;
    if (!is_real_directory(entry)) continue;
    if (auto r = read_record(entry)) out.push_back(std::move(*r));
  }
}

std::int64_t ns(const timespec& t) { return std::int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; }

}  // namespace

std::optional<RecordVersion> record_version(const fs::path& dir) {
  struct stat st {};
  if (::stat((dir / "meta.json").c_str(), &st) != 0) return std::nullopt;
  return RecordVersion{st.st_dev, st.st_ino, ns(st.st_ctim), ns(st.st_mtim), st.st_size};
}

std::optional<Record> read_record(const fs::path& dir) {
  std::ifstream in(dir / "meta.json");
  if (!in) return std::nullopt;
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    return Record{dir,
                  SandboxKey{j.at("scope"), j.at("thread_id"), j.at("agent_id"), j.at("call_id")},
                  j.at("kind"),
                  j.at("instance_id"),
                  j.at("work_base"),
                  j.at("created_unix"),
                  j.contains("resources") ? resources_from_json(j.at("resources")) : ResourceLimits{}};
  } catch (const std::exception&) {
    return std::nullopt;  // half-written or foreign: never guessed at
  }
}

fs::path SandboxStore::conversation_dir(std::string_view scope, std::string_view thread_id) const {
  // The one name mapping every backend uses, over (scope, thread) alone: length-prefixed, so
  // no two conversations share a name by concatenation.
  return root_ / support::sandbox_name(kConversationPrefix, SandboxKey{std::string(scope), std::string(thread_id), "", ""},
                                       "");
}

std::vector<Record> SandboxStore::conversation_records(std::string_view scope, std::string_view thread_id) const {
  std::vector<Record> out;
  collect(conversation_dir(scope, thread_id), out);
  return out;
}

std::vector<Record> SandboxStore::all_records() const {
  std::vector<Record> out;
  collect(root_, out);  // the pre-issue-55 layout, should an older replica still write it
  for (const auto& n : names_in(root_))
    if (starts_with(n, kConversationPrefix) && is_real_directory(root_ / n)) collect(root_ / n, out);
  return out;
}

void SandboxStore::forget_empty_conversations() const noexcept {
  try {
    for (const auto& n : names_in(root_))
      if (starts_with(n, kConversationPrefix)) ::rmdir((root_ / n).c_str());  // only the empty ones go
  } catch (const std::exception&) {
    // An unlistable root was reported by the purge that walked it.
  }
}

int SandboxStore::place(const fs::path& staging, const fs::path& dir) const {
  const fs::path conversation = dir.parent_path();
  for (int attempt = 0; attempt < 16; ++attempt) {
    // Searchable, not listable, whatever the umask: bubblewrap (as host_uid on a root host)
    // reaches the guest root through it by path.
    if (::mkdir(conversation.c_str(), 0711) == 0) ::chmod(conversation.c_str(), 0711);
    else if (errno != EEXIST) return errno;
    if (::rename(staging.c_str(), dir.c_str()) == 0) return 0;
    if (errno != ENOENT) return errno;
    // The conversation directory went between mkdir and rename (a disposal found it
    // empty): make it again.
  }
  return ENOENT;
}

void SandboxStore::forget_conversation_if_empty(const fs::path& sandbox_dir) const {
  const fs::path conversation = sandbox_dir.parent_path();
  if (conversation == root_ || !starts_with(conversation.filename().string(), kConversationPrefix)) return;
  ::rmdir(conversation.c_str());  // ENOTEMPTY: another sandbox of it (or one being placed) keeps it
}

void SandboxStore::forget_conversation_if_empty(std::string_view scope, std::string_view thread_id) const {
  ::rmdir(conversation_dir(scope, thread_id).c_str());
}

int SandboxStore::migrate_flat_layout() const {
  int moved = 0;
  for (const auto& n : names_in(root_)) {
    if (!starts_with(n, kNamePrefix) || starts_with(n, kConversationPrefix)) continue;
    const fs::path from = root_ / n;
    if (!is_real_directory(from)) continue;
    const auto r = read_record(from);
    if (!r) {
      logger()->warn("backend 'process': '{}' has no readable record; left where it is (reap removes it by age "
                     "only if it gets one)",
                     from.string());
      continue;
    }
    const fs::path to = sandbox_dir(r->key, n);
    if (const int err = place(from, to); err != 0) {
      logger()->warn("backend 'process': cannot move '{}' into its conversation directory '{}': {}", from.string(),
                     to.string(), std::strerror(err));
      continue;
    }
    ++moved;
  }
  if (moved > 0)
    logger()->info("backend 'process': moved {} sandbox(es) of root '{}' into the by-conversation layout", moved,
                   root_.string());
  return moved;
}

}  // namespace maf::sandbox::process

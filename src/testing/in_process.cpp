// The in-process test double (C-108…C-117). Policy lives in the Sandbox base class; the hooks
// here only answer shapes, so the double exercises exactly the checks real backends get.
#include "maf/sandbox/testing/in_process.hpp"

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/exec_result.hpp"
#include "maf/sandbox/paths.hpp"

namespace maf::sandbox::testing {
namespace {

/// "/a/b" -> "/a/b/"; "/" stays "/": the prefix every path strictly below `dir` starts with.
std::string child_prefix(const std::string& dir) { return dir == "/" ? dir : dir + "/"; }

bool has_prefix(const std::string& s, const std::string& prefix) {
  return s.size() > prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// The stored path of a set element or of a map entry, so one walk serves all four stores.
const std::string& key_of(const std::string& element) { return element; }
const std::string& key_of(const std::pair<const std::string, std::string>& entry) { return entry.first; }

template <class Container>
bool any_below(const Container& store, const std::string& prefix) {
  auto it = store.lower_bound(prefix);
  return it != store.end() && has_prefix(key_of(*it), prefix);
}

boost::asio::awaitable<std::vector<std::string>> ready(std::vector<std::string> names) { co_return names; }

}  // namespace

InProcessSandbox::InProcessSandbox(InProcessSandboxOptions options)
    : Sandbox(Descriptor{.backend_name = options.backend_name,
                         .kind = options.kind,
                         .capabilities = options.capabilities,
                         .storage_base = options.storage_base,
                         .instance_id = options.instance_id}),
      outputs_(std::move(options.outputs)),
      raises_(std::move(options.raises)),
      raises_factory_(std::move(options.raises_factory)),
      default_stdout_(std::move(options.default_stdout)) {
  // C-53: the storage base exists before the first call, as on every shipped backend.
  directories_.insert(storage_base());
  for (auto& [path, value] : options.seed_files) seed(path, std::move(value));
  snapshot_ = Snapshot{contents_, symlinks_, non_regular_, directories_};
}

std::string InProcessSandbox::absolute(const std::string& path) const {
  return normalize_guest_path(join_guest_path(storage_base(), path));
}

// --- recorded calls and canned answers ---

std::vector<RecordedCommand> InProcessSandbox::commands() const {
  std::lock_guard lock(mutex_);
  return commands_;
}
std::vector<RecordedProgram> InProcessSandbox::programs() const {
  std::lock_guard lock(mutex_);
  return programs_;
}
HookCounts InProcessSandbox::hook_counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}
void InProcessSandbox::set_raises(std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  raises_ = std::move(error);
}
void InProcessSandbox::set_raises_factory(RaisesFactory factory) {
  std::lock_guard lock(mutex_);
  raises_factory_ = std::move(factory);
}
void InProcessSandbox::set_outputs(std::vector<std::pair<std::string, std::string>> outputs) {
  std::lock_guard lock(mutex_);
  outputs_ = std::move(outputs);
}
void InProcessSandbox::set_default_stdout(std::string text) {
  std::lock_guard lock(mutex_);
  default_stdout_ = std::move(text);
}
void InProcessSandbox::set_operation_hook(std::function<void(FileOperation)> hook) {
  std::lock_guard lock(mutex_);
  operation_hook_ = std::move(hook);
}

ExecResult InProcessSandbox::answer(const std::string& text) {
  std::exception_ptr error;
  std::string out;
  {
    std::lock_guard lock(mutex_);
    if (raises_factory_) {
      // Called under the lock: a factory must not call back into the double.
      error = raises_factory_();
    } else {
      error = raises_;
    }
    if (!error) {
      out = default_stdout_;
      for (const auto& [marker, stdout_text] : outputs_) {
        if (text.find(marker) != std::string::npos) {
          out = stdout_text;
          break;
        }
      }
    }
  }
  if (error) std::rethrow_exception(error);
  return ExecResult::from_text(std::move(out));
}

boost::asio::awaitable<ExecReport> InProcessSandbox::do_exec(const ExecRequest& request) {
  {
    std::lock_guard lock(mutex_);
    ++counts_.exec;
    // C-110: an argv is already POSIX-joined in shell_line, so the record is always a string.
    commands_.push_back({request.shell_line, request.working_directory, request.timeout});
  }
  co_return answer(request.shell_line);
}

boost::asio::awaitable<ExecReport> InProcessSandbox::do_run_code(const std::string& code,
                                                                 std::chrono::milliseconds timeout,
                                                                 std::chrono::steady_clock::time_point) {
  {
    std::lock_guard lock(mutex_);
    ++counts_.run_code;
    programs_.push_back({code, timeout});  // C-111: never into commands
  }
  co_return answer(code);
}

// --- guest state ---

std::map<std::string, std::string> InProcessSandbox::contents() const {
  std::lock_guard lock(mutex_);
  return contents_;
}
std::map<std::string, std::string> InProcessSandbox::files() const {
  auto copy = contents();
  for (const auto& [path, bytes] : copy)
    if (!is_valid_utf8(bytes)) throw ValueError("guest file '" + path + "' does not hold valid UTF-8 text");
  return copy;
}
std::set<std::string> InProcessSandbox::symlinks() const {
  std::lock_guard lock(mutex_);
  return symlinks_;
}
std::set<std::string> InProcessSandbox::non_regular() const {
  std::lock_guard lock(mutex_);
  return non_regular_;
}
std::set<std::string> InProcessSandbox::directories() const {
  std::lock_guard lock(mutex_);
  return directories_;
}

void InProcessSandbox::seed(const std::string& path, SeedValue value) {
  const std::string p = absolute(path);
  std::lock_guard lock(mutex_);
  erase_locked(p, false);
  if (auto* bytes = std::get_if<std::string>(&value)) {
    contents_[p] = std::move(*bytes);
    return;
  }
  switch (std::get<EntryKind>(value)) {
    case EntryKind::Symlink: symlinks_.insert(p); break;
    case EntryKind::Directory: directories_.insert(p); break;
    case EntryKind::File:  // C-109: a bare kind carries no bytes, so it is "any other kind"
    case EntryKind::Other: non_regular_.insert(p); break;
  }
}

void InProcessSandbox::erase(const std::string& path) {
  const std::string p = absolute(path);
  std::lock_guard lock(mutex_);
  erase_locked(p, true);
}

void InProcessSandbox::erase_locked(const std::string& path, bool with_children) {
  contents_.erase(path);
  symlinks_.erase(path);
  non_regular_.erase(path);
  directories_.erase(path);
  if (!with_children) return;
  const std::string prefix = child_prefix(path);
  auto drop = [&](auto& store) {
    auto it = store.lower_bound(prefix);
    while (it != store.end() && has_prefix(key_of(*it), prefix)) it = store.erase(it);
  };
  drop(contents_);
  drop(symlinks_);
  drop(non_regular_);
  drop(directories_);
}

std::optional<GuestStat> InProcessSandbox::lstat_locked(const std::string& path) const {
  // C-112: lookup order contents, symlinks, non_regular, then (explicit or implicit) directory.
  if (auto it = contents_.find(path); it != contents_.end())
    return GuestStat{EntryKind::File, static_cast<std::int64_t>(it->second.size())};
  if (symlinks_.contains(path)) return GuestStat{EntryKind::Symlink, std::nullopt};
  if (non_regular_.contains(path)) return GuestStat{EntryKind::Other, std::nullopt};
  const std::string prefix = child_prefix(path);
  if (directories_.contains(path) || any_below(contents_, prefix) || any_below(symlinks_, prefix) ||
      any_below(non_regular_, prefix) || any_below(directories_, prefix))
    return GuestStat{EntryKind::Directory, std::nullopt};
  return std::nullopt;
}

std::optional<GuestStat> InProcessSandbox::lstat_now(const std::string& absolute_path) const {
  std::lock_guard lock(mutex_);
  return lstat_locked(normalize_guest_path(absolute_path));
}

// --- file hooks: reached only through the base class's checks ---

boost::asio::awaitable<void> InProcessSandbox::do_file_operation(FileOperation operation,
                                                                 std::function<boost::asio::awaitable<void>()> body) {
  std::function<void(FileOperation)> hook;
  {
    std::lock_guard lock(mutex_);
    hook = operation_hook_;
  }
  if (hook) hook(operation);
  co_await body();
}

boost::asio::awaitable<std::optional<GuestStat>> InProcessSandbox::do_lstat(const std::string& absolute_path) {
  std::lock_guard lock(mutex_);
  ++counts_.lstat;
  co_return lstat_locked(absolute_path);
}

boost::asio::awaitable<void> InProcessSandbox::do_write_file(const std::string& absolute_path,
                                                             const std::string& content) {
  std::lock_guard lock(mutex_);
  ++counts_.write_file;
  if (auto s = lstat_locked(absolute_path); s && s->kind == EntryKind::Directory)
    throw IsADirectoryError("guest path '" + absolute_path + "' is a directory; cannot write a file over it");
  // A FIFO or socket at the leaf is replaced: the write creates a regular file, never a
  // special one (C-42: nothing the call creates can be a link or other special entry).
  non_regular_.erase(absolute_path);
  contents_[absolute_path] = content;
  co_return;
}

boost::asio::awaitable<std::string> InProcessSandbox::do_read_file(const std::string& absolute_path,
                                                                   std::int64_t max_bytes) {
  std::lock_guard lock(mutex_);
  ++counts_.read_file;
  auto it = contents_.find(absolute_path);
  // The base class just saw a FILE here; a concurrent removal reads as missing.
  if (it == contents_.end()) throw FileNotFoundError("guest file '" + absolute_path + "' vanished before it was read");
  // Stop after max_bytes + 1, like a streaming backend: enough for the caller to refuse.
  const auto limit = static_cast<std::size_t>(max_bytes) + 1;
  std::string out = it->second.size() > limit ? it->second.substr(0, limit) : it->second;
  counts_.bytes_read += static_cast<std::int64_t>(out.size());
  co_return out;
}

boost::asio::awaitable<std::vector<GuestDirEntry>> InProcessSandbox::do_list_dir(const std::string& absolute_path) {
  std::lock_guard lock(mutex_);
  ++counts_.list_dir;
  const std::string prefix = child_prefix(absolute_path);
  std::set<std::string> names;
  auto collect = [&](const auto& store) {
    for (auto it = store.lower_bound(prefix); it != store.end() && has_prefix(key_of(*it), prefix); ++it) {
      const std::string rest = key_of(*it).substr(prefix.size());
      names.insert(rest.substr(0, rest.find('/')));  // one level: a subtree is one entry
    }
  };
  collect(contents_);
  collect(symlinks_);
  collect(non_regular_);
  collect(directories_);
  std::vector<GuestDirEntry> out;  // sorted by name, hence by path (C-113)
  for (const auto& name : names) out.push_back({name, *lstat_locked(prefix + name)});
  co_return out;
}

boost::asio::awaitable<void> InProcessSandbox::do_remove(const std::string& absolute_path, bool recursive) {
  std::lock_guard lock(mutex_);
  ++counts_.remove;
  const auto s = lstat_locked(absolute_path);
  // C-50/C-113: a link has no children and is unlinked; only a directory takes its subtree.
  erase_locked(absolute_path, recursive && s && s->kind == EntryKind::Directory);
  co_return;
}

// --- cleanup rungs (docs/tools.md "The cleanup ladder") ---

void InProcessSandbox::set_reclaim_error(std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  reclaim_error_ = std::move(error);
}
void InProcessSandbox::set_reset_error(std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  reset_error_ = std::move(error);
}
std::vector<InProcessSandbox::RecordedReclaim> InProcessSandbox::reclaimed() const {
  std::lock_guard lock(mutex_);
  return reclaimed_;
}

boost::asio::awaitable<void> InProcessSandbox::do_reclaim(const std::string& absolute_directory,
                                                          std::chrono::milliseconds timeout,
                                                          std::chrono::steady_clock::time_point) {
  std::lock_guard lock(mutex_);
  ++counts_.reclaim;
  reclaimed_.push_back({absolute_directory, timeout});
  if (reclaim_error_) std::rethrow_exception(reclaim_error_);
  erase_locked(absolute_directory, true);  // missing is success, as for rm -rf
  co_return;
}

boost::asio::awaitable<void> InProcessSandbox::do_reset(std::chrono::milliseconds,
                                                        std::chrono::steady_clock::time_point) {
  std::lock_guard lock(mutex_);
  ++counts_.reset;
  if (reset_error_) std::rethrow_exception(reset_error_);
  contents_ = snapshot_.contents;
  symlinks_ = snapshot_.symlinks;
  non_regular_ = snapshot_.non_regular;
  directories_ = snapshot_.directories;
  co_return;
}

boost::asio::awaitable<void> InProcessSandbox::do_prepare_storage_base(const StorageBaseWalk& walk) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = walk.first_missing; i < walk.chain.size(); ++i) directories_.insert(walk.chain[i]);
  co_return;
}

// --- backend (C-115, C-116) ---

InProcessSandboxBackend::InProcessSandboxBackend(InProcessSandboxBackendOptions options)
    : sandbox_(options.sandbox ? std::move(options.sandbox) : std::make_shared<InProcessSandbox>()),
      name_(std::move(options.name)),
      isolation_(std::move(options.isolation)),
      declarations_(std::move(options.declarations)) {}

boost::asio::awaitable<std::shared_ptr<Sandbox>> InProcessSandboxBackend::do_acquire(SandboxKey key, SandboxSpec spec,
                                                                                  AcquirePlan) {
  {
    std::lock_guard lock(mutex_);
    if (acquire_error_) std::rethrow_exception(acquire_error_);
    keys_.push_back(std::move(key));
    specs_.push_back(std::move(spec));
  }
  co_return sandbox_;
}

boost::asio::awaitable<std::optional<DisposalFailure>> InProcessSandboxBackend::dispose(
    SandboxKey key, std::optional<std::string> kind, std::optional<std::string> instance_id) {
  std::lock_guard lock(mutex_);
  dispose_requests_.push_back({std::move(key), std::move(kind), std::move(instance_id)});
  // A real backend never throws here; the double can, so tests prove the router copes.
  if (dispose_error_) std::rethrow_exception(dispose_error_);
  co_return dispose_failure_;
}

boost::asio::awaitable<ScopePurge> InProcessSandboxBackend::dispose_scope(std::string scope, std::string thread_id) {
  std::lock_guard lock(mutex_);
  purged_.emplace_back(std::move(scope), std::move(thread_id));
  co_return ScopePurge{purge_count_, purge_failure_};
}

std::vector<SandboxKey> InProcessSandboxBackend::keys() const {
  std::lock_guard lock(mutex_);
  return keys_;
}
std::vector<SandboxSpec> InProcessSandboxBackend::specs() const {
  std::lock_guard lock(mutex_);
  return specs_;
}
std::vector<SandboxKey> InProcessSandboxBackend::disposed() const {
  std::lock_guard lock(mutex_);
  std::vector<SandboxKey> out;
  for (const auto& r : dispose_requests_) out.push_back(r.key);
  return out;
}
std::vector<DisposeRequest> InProcessSandboxBackend::dispose_requests() const {
  std::lock_guard lock(mutex_);
  return dispose_requests_;
}
std::vector<std::pair<std::string, std::string>> InProcessSandboxBackend::purged() const {
  std::lock_guard lock(mutex_);
  return purged_;
}
void InProcessSandboxBackend::set_acquire_error(std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  acquire_error_ = std::move(error);
}
void InProcessSandboxBackend::set_dispose_error(std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  dispose_error_ = std::move(error);
}
void InProcessSandboxBackend::set_dispose_failure(std::optional<DisposalFailure> failure) {
  std::lock_guard lock(mutex_);
  dispose_failure_ = std::move(failure);
}
void InProcessSandboxBackend::set_purge_count(int count) {
  std::lock_guard lock(mutex_);
  purge_count_ = count;
}
void InProcessSandboxBackend::set_purge_failure(std::optional<DisposalFailure> failure) {
  std::lock_guard lock(mutex_);
  purge_failure_ = std::move(failure);
}

// --- host store (C-117) ---

std::optional<std::string> InMemoryStore::read(const std::string& name) const {
  auto it = files_.find(name);
  if (it == files_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> InMemoryStore::list() const {
  std::vector<std::string> out;
  out.reserve(files_.size());
  for (const auto& [name, bytes] : files_) out.push_back(name);
  return out;
}

std::function<boost::asio::awaitable<std::vector<std::string>>(std::string)> InMemoryStore::list_files() const {
  // The listing is taken when called, so the awaitable owns its result.
  return [this](std::string) { return ready(list()); };
}

}  // namespace maf::sandbox::testing

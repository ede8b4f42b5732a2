// A third-party backend plugin, built out of tree against the installed maf-sandbox:
// `hostdir` gives each sandbox a private directory on the host and runs commands there
// with `sh -c` as ordinary host children.
//
// It draws no isolation boundary at all, and says so: isolation `none` (so only a host that
// lowers its floor to `none` can route to it) and one egress mode, `unrestricted` — commands
// share the host's network, the one posture it keeps — so a spec asking `closed` or an
// allowlist is refused (by the router, and by the core's acquire for a direct caller) rather
// than run on the host's network. Everything it declares — exec, files in/out/list/delete,
// posix, both isolation scopes — the conformance runner attacks and this backend passes; the
// egress suites are not run because their gates (allowlist, closed) are not met. Honest
// declarations, not strong ones, are the point.
//
// What the core does for it: `acquire` refuses a spec these declarations do not serve,
// serialises acquires of one (key, kind) and walks the storage base before handing the
// sandbox out; the public Sandbox methods check the capability, confine every path lexically
// and walk its ancestors through do_lstat, and enforce read caps before any hook runs. What
// is left here: a deadline on exec, no-follow opens in the hooks, and state that a second
// process can find (a key.json per sandbox) so dispose_scope works across processes.
#include <maf/sandbox/plugin.hpp>
#include <maf/sandbox/support/labels.hpp>
#include <maf/sandbox/support/subprocess.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace hostdir {
namespace fs = std::filesystem;
using namespace maf::sandbox;

constexpr const char* kName = "hostdir";
constexpr const char* kPrefix = "maf-sandbox-hostdir-";

/// Throws the core's OSError subtype for `err`, naming the backend, the kind and the path.
[[noreturn]] void fail(int err, const std::string& what, const std::string& kind, const std::string& path) {
  const std::string message = std::string("backend 'hostdir': ") + what + " '" + path + "' for kind '" + kind +
                              "': " + std::strerror(err);
  switch (err) {
    case ENOENT: throw FileNotFoundError(message);
    case EISDIR: throw IsADirectoryError(message);
    case ENOTDIR: throw NotADirectoryError(message);
    case EACCES:
    case EPERM: throw PermissionError(message);
    default: throw OSError(message);
  }
}

/// Closes a descriptor on every path out of a hook.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

class HostDirSandbox final : public Sandbox {
public:
  HostDirSandbox(const std::string& kind, const fs::path& work, const std::string& instance_id)
      : Sandbox(Descriptor{.backend_name = kName,
                         .kind = kind,
                         .capabilities = CapabilitySet{Capability::Exec, Capability::FilesIn, Capability::FilesOut,
                                                       Capability::FilesList, Capability::FilesDelete},
                         .storage_base = work.string(),
                         .instance_id = instance_id}) {}

protected:
  boost::asio::awaitable<ExecReport> do_exec(const ExecRequest& request) override {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(request.deadline -
                                                                            std::chrono::steady_clock::now());
    support::SubprocessOptions options;
    options.argv = {"sh", "-c", request.shell_line};
    options.cwd = request.working_directory;
    options.timeout = std::max(left, std::chrono::milliseconds(1));
    const std::size_t cap_stdout = options.max_stdout;
    const std::size_t cap_stderr = options.max_stderr;
    support::SubprocessResult r;
    bool timed_out = false;
    try {
      r = co_await support::run_subprocess(std::move(options));
    } catch (const support::SubprocessTimeout&) {
      timed_out = true;  // the subprocess runner has already killed the command's whole group
    }
    // Report how it ended, never throw for it: the core raises one error type per ending,
    // the same on every backend (EXE-1).
    if (timed_out) co_return ExecReport::group_killed_at_deadline("its process group was killed");
    if (r.stdout_overflowed) co_return ExecReport::over_cap("max_stdout", cap_stdout, "stdout", "it was killed");
    if (r.stderr_overflowed) co_return ExecReport::over_cap("max_stderr", cap_stderr, "stderr", "it was killed");
    co_return ExecResult{std::move(r.stdout_bytes), std::move(r.stderr_bytes), r.exit_code, {}};
  }

  boost::asio::awaitable<std::optional<GuestStat>> do_lstat(const std::string& path) override {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) co_return std::nullopt;
      fail(errno, "cannot stat", kind(), path);
    }
    GuestStat out;
    if (S_ISREG(st.st_mode)) out = {EntryKind::File, static_cast<std::int64_t>(st.st_size)};
    else if (S_ISDIR(st.st_mode)) out.kind = EntryKind::Directory;
    else if (S_ISLNK(st.st_mode)) out.kind = EntryKind::Symlink;
    co_return out;
  }

  boost::asio::awaitable<void> do_write_file(const std::string& path, const std::string& content) override {
    // The core has already refused a linked ancestor; create_directories only makes what is
    // missing, and O_NOFOLLOW refuses a link swapped in at the leaf.
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) fail(ec.value(), "cannot create the parents of", kind(), path);
    Fd f{::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644)};
    if (f.fd < 0) fail(errno, "cannot write", kind(), path);
    for (std::size_t done = 0; done < content.size();) {
      const ssize_t n = ::write(f.fd, content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail(errno, "cannot write", kind(), path);
      done += static_cast<std::size_t>(n);
    }
    co_return;
  }

  boost::asio::awaitable<std::string> do_read_file(const std::string& path, std::int64_t max_bytes) override {
    // O_NONBLOCK: a FIFO planted by a command cannot hang the host.
    Fd f{::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
    if (f.fd < 0) fail(errno, "cannot read", kind(), path);
    std::string out;
    char buffer[65536];
    // One byte past the cap is enough for the core to refuse an over-cap read.
    while (static_cast<std::int64_t>(out.size()) <= max_bytes) {
      const ssize_t n = ::read(f.fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail(errno, "cannot read", kind(), path);
      if (n == 0) break;
      out.append(buffer, static_cast<std::size_t>(n));
    }
    co_return out;
  }

  boost::asio::awaitable<std::vector<GuestDirEntry>> do_list_dir(const std::string& path) override {
    std::vector<GuestDirEntry> out;
    std::error_code ec;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string child = it->path().string();
      if (auto st = co_await do_lstat(child)) out.push_back({it->path().filename().string(), *st});
    }
    if (ec) fail(ec.value(), "cannot list", kind(), path);
    co_return out;
  }

  boost::asio::awaitable<void> do_remove(const std::string& path, bool recursive) override {
    std::error_code ec;
    // remove_all unlinks links it meets instead of following them.
    if (recursive) fs::remove_all(path, ec);
    else fs::remove(path, ec);
    if (ec) fail(ec.value(), "cannot remove", kind(), path);
    co_return;
  }
};

/// Who a sandbox directory belongs to, stored beside it so any process can find it.
struct Owner {
  SandboxKey key;
  std::string kind;
};

class HostDirBackend final : public SandboxBackend {
public:
  explicit HostDirBackend(fs::path root) : root_(std::move(root)) {
    declarations_.capabilities = CapabilitySet{Capability::Exec, Capability::FilesIn, Capability::FilesOut,
                                               Capability::FilesList, Capability::FilesDelete};
    declarations_.os_families = OsFamilySet{OsFamily::Posix};
    declarations_.isolation_scopes = IsolationScopeSet{IsolationScope::Conversation, IsolationScope::Call};
    // Commands share the host's network: unrestricted is all it can promise, and all it says.
    declarations_.egress_modes = EgressSet{Egress::Unrestricted};
  }

  std::string name() const override { return kName; }
  std::string isolation() const override { return "none"; }
  const BackendDeclarations& declarations() const override { return declarations_; }

  boost::asio::awaitable<std::optional<DisposalFailure>> dispose(SandboxKey key, std::optional<std::string> kind,
                                                                 std::optional<std::string> instance_id) override {
    co_return remove_where([&](const std::string& name, const Owner& o) {
      return o.key == key && (!kind || o.kind == *kind) && (!instance_id || name == *instance_id);
    }).undisposed;
  }

  boost::asio::awaitable<ScopePurge> dispose_scope(std::string scope, std::string thread_id) override {
    co_return remove_where(
        [&](const std::string&, const Owner& o) { return o.key.scope == scope && o.key.thread_id == thread_id; });
  }

protected:
  /// Only the engine work: the directory is the sandbox, so an acquire of a (key, kind) that
  /// has one — made by this process or another — finds it again.
  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey key, SandboxSpec spec, AcquirePlan) override {
    if (spec.work_dir())
      throw SandboxCapabilityNotSupported("backend 'hostdir' chooses its own working directory; kind '" + spec.kind() +
                                          "' asks for work_dir '" + *spec.work_dir() + "'");
    // Every key field, call_id included, names the sandbox (C-15).
    const std::string name = support::sandbox_name(kPrefix, key, spec.kind());
    const fs::path dir = root_ / name;
    std::error_code ec;
    fs::create_directories(dir / "work", ec);
    if (ec) fail(ec.value(), "cannot create the sandbox directory", spec.kind(), (dir / "work").string());
    const nlohmann::json owner{{"scope", key.scope}, {"thread_id", key.thread_id}, {"agent_id", key.agent_id},
                               {"call_id", key.call_id}, {"kind", spec.kind()}};
    std::ofstream(dir / "key.json") << owner.dump();
    // The core walks the storage base's ancestors for links, so hand it the resolved path.
    const fs::path work = fs::canonical(dir / "work", ec);
    if (ec) fail(ec.value(), "cannot resolve", spec.kind(), (dir / "work").string());
    co_return std::make_shared<HostDirSandbox>(spec.kind(), work, name);
  }

private:
  /// Removes every sandbox directory under root whose key.json matches; never throws.
  template <class Match>
  ScopePurge remove_where(Match match) {
    ScopePurge purge;
    std::vector<DisposalFailure> failures;
    std::error_code ec;
    for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!name.starts_with(kPrefix)) continue;
      const auto owner = read_owner(it->path() / "key.json");
      if (!owner || !match(name, *owner)) continue;
      std::error_code rm;
      fs::remove_all(it->path(), rm);
      if (rm) failures.push_back({kDisposalRefused, "backend 'hostdir': " + name + ": " + rm.message()});
      else ++purge.disposed;
    }
    // A root that cannot be listed may hide sandboxes: say the sweep was partial.
    if (ec && ec != std::errc::no_such_file_or_directory)
      failures.push_back({kDisposalUnlisted, "backend 'hostdir': cannot list " + root_.string() + ": " + ec.message()});
    purge.undisposed = fold(failures);
    return purge;
  }

  static std::optional<Owner> read_owner(const fs::path& file) {
    std::ifstream in(file);
    const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return std::nullopt;
    return Owner{SandboxKey{j.value("scope", ""), j.value("thread_id", ""), j.value("agent_id", ""),
                            j.value("call_id", "")},
                 j.value("kind", "")};
  }

  fs::path root_;
  BackendDeclarations declarations_;
};

/// The factory: refuses unknown keys by name and touches nothing (the registry calls it
/// with `{}` just to read the declarations).
std::shared_ptr<HostDirBackend> make_backend(const nlohmann::json& config) {
  require_known_keys(config, {"root"}, kName);
  fs::path root = fs::temp_directory_path() / "maf-sandbox-hostdir";
  if (config.is_object() && config.contains("root")) {
    if (!config["root"].is_string()) throw ValueError("backend 'hostdir': configuration key 'root' must be a string");
    root = config["root"].get<std::string>();
  }
  return std::make_shared<HostDirBackend>(std::move(root));
}

}  // namespace hostdir

MAF_SANDBOX_PLUGIN("hostdir", "0.1.0", "a host directory per sandbox, commands run by the host's sh (no isolation)",
                   hostdir::make_backend)

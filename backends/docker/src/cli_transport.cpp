// The docker-CLI transport: argv building, binding and the classification of client
// messages (docs/backends/docker.md "The CLI runner and its classification"). Everything above the seam (transport.hpp) is CLI-agnostic.
#include "maf/sandbox/docker/cli_transport.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <limits>
#include <sstream>

#include <sys/mman.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "maf/sandbox/support/async_mutex.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/exec_result.hpp"
#include "maf/sandbox/support/subprocess.hpp"
#include "said.hpp"

extern char** environ;

namespace maf::sandbox::docker {

namespace {

using boost::asio::awaitable;
using support::SubprocessOptions;
using support::SubprocessResult;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool contains_ci(std::string_view haystack, std::string_view needle) {
  return lower(haystack).find(lower(needle)) != std::string::npos;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!trim(line).empty()) out.push_back(trim(line));
  return out;
}

std::map<std::string, std::string> snapshot_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env.emplace(std::string(*e, static_cast<std::size_t>(eq - *e)), std::string(eq + 1));
  }
  return env;
}

struct RunOptions {
  std::optional<std::string> stdin_bytes{};
  std::optional<std::chrono::milliseconds> timeout{};  // default: command_timeout
  std::size_t max_stdout = std::size_t{16} << 20;
  std::size_t max_stderr = std::size_t{1} << 20;
  const char* verb = nullptr;
  bool exec = false;  // exec's bound is the caller's, and absent means none
  support::ChunkSource stdin_source{};  // more stdin after stdin_bytes
  std::vector<int> keep_fds{};  // descriptors the client inherits (an exec's --env-file)
};

/// A command's own environment as the client's `--env-file` reads it (ENV-4), in a memfd the
/// client opens as /dev/fd/N: the values are on no command line, in no file, and never in the
/// client's own environment, where a name like DOCKER_HOST or LD_PRELOAD would steer the
/// client itself. The format is one `NAME=VALUE` line each, read as UTF-8 with a trailing CR
/// dropped: a value it cannot carry is refused, naming the variable.
class EnvFile {
public:
  explicit EnvFile(const std::map<std::string, std::string>& env) {
    if (env.empty()) return;
    std::string text;
    for (const auto& [name, value] : env) {
      if (value.find_first_of("\r\n") != std::string::npos || !is_valid_utf8(value))
        throw SandboxEnvironmentRefused(said("environment variable '" + name +
                                             "' has a value the Docker CLI transport cannot carry (a line break "
                                             "or bytes that are not UTF-8; ENV-4): use the Engine API transport"));
      text += name + "=" + value + "\n";
    }
    fd_ = ::memfd_create("maf-exec-env", MFD_CLOEXEC);
    if (fd_ < 0) throw OSError(said(std::string("memfd_create: ") + std::strerror(errno)));
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t n = ::pwrite(fd_, text.data() + done, text.size() - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int e = errno;
        ::close(fd_);
        throw OSError(said(std::string("writing an exec's environment: ") + std::strerror(e)));
      }
      done += static_cast<std::size_t>(n);
    }
  }
  ~EnvFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  EnvFile(const EnvFile&) = delete;
  EnvFile& operator=(const EnvFile&) = delete;
  /// `docker exec` options: `--env-file /dev/fd/N` and, if stdin is given, `-i`.
  void add_options(std::vector<std::string>& args, std::vector<int>& keep_fds, bool with_stdin) const {
    if (with_stdin) args.push_back("-i");
    if (fd_ < 0) return;
    args.insert(args.end(), {"--env-file", "/dev/fd/" + std::to_string(fd_)});
    keep_fds.push_back(fd_);
  }

private:
  int fd_ = -1;
};

class CliTransport final : public DockerTransport {
public:
  explicit CliTransport(DockerConfig config) : config_(std::move(config)), env_(snapshot_environment()) {}

  awaitable<std::string> endpoint() override {
    co_await bind();
    co_return host_;
  }

  awaitable<std::string> server_os() override {
    std::vector<std::string> args{"version", "--format", "{{.Server.Os}}"};
    auto r = co_await run(std::move(args));
    if (!r.ok()) throw OSError(failure("version", r));
    co_return trim(r.stdout_bytes);
  }

  awaitable<std::optional<ContainerState>> container_state(std::string container) override {
    // The image ID rides along in the same call (issue 24: what a fresh container of that
    // image passed is known); one JSON value per field, read in order.
    std::vector<std::string> args{"container", "inspect", "--format", "{{json .Id}} {{json .State}} {{json .Image}}",
                                  container};
    auto r = co_await run(std::move(args));
    if (!r.ok()) {
      if (contains_ci(r.stderr_bytes, "no such container") || contains_ci(r.stderr_bytes, "no such object"))
        co_return std::nullopt;
      throw OSError(failure("container inspect " + container, r));
    }
    std::istringstream out(trim(r.stdout_bytes));
    try {
      nlohmann::json id, state, image;
      out >> id >> state;
      ContainerState s;
      s.id = id.get<std::string>();
      s.status = state.value("Status", "");
      s.running = state.value("Running", false);
      s.paused = state.value("Paused", false);
      // An older answer without the third field leaves the image unknown.
      if (out >> std::ws && out.peek() != std::char_traits<char>::eof()) {
        out >> image;
        if (image.is_string()) s.image_id = image.get<std::string>();
      }
      co_return s;
    } catch (const nlohmann::json::exception& e) {
      throw OSError(said("unreadable state of container " + container + ": " + e.what()));
    }
  }

  awaitable<std::string> config_user(std::string container) override {
    std::vector<std::string> args{"container", "inspect", "--format", "{{json .Config.User}}", container};
    auto r = co_await run(std::move(args));
    if (!r.ok()) throw OSError(failure("container inspect " + container, r));
    try {
      co_return nlohmann::json::parse(trim(r.stdout_bytes)).get<std::string>();
    } catch (const nlohmann::json::exception& e) {
      throw OSError(said("unreadable Config.User of container " + container + ": " + e.what()));
    }
  }

  awaitable<std::optional<std::string>> inspect_container(std::string id_or_name) override {
    std::vector<std::string> args{"container", "inspect", "--format", "{{json .}}", id_or_name};
    auto r = co_await run(std::move(args));
    if (!r.ok()) {
      if (contains_ci(r.stderr_bytes, "no such container") || contains_ci(r.stderr_bytes, "no such object"))
        co_return std::nullopt;
      throw OSError(failure("container inspect " + id_or_name, r));
    }
    co_return trim(r.stdout_bytes);
  }

  awaitable<bool> image_present(std::string image) override {
    std::vector<std::string> args{"image", "inspect", "--format", "{{.Id}}", image};
    auto r = co_await run(std::move(args));
    co_return r.ok();
  }

  awaitable<std::optional<std::string>> image_labels(std::string image) override {
    std::vector<std::string> args{"image", "inspect", "--format", "{{json .Config.Labels}}", image};
    auto r = co_await run(std::move(args));
    if (!r.ok()) {
      if (contains_ci(r.stderr_bytes, "no such image") || contains_ci(r.stderr_bytes, "no such object"))
        co_return std::nullopt;
      throw OSError(failure("image inspect " + image, r));
    }
    co_return trim(r.stdout_bytes);
  }

  awaitable<void> pull_image(std::string image) override {
    std::vector<std::string> args{"image", "pull", image};
    RunOptions options{.timeout = config_.image_pull_timeout(), .verb = "image pull"};
    auto r = co_await run(std::move(args), std::move(options));
    if (!r.ok()) throw OSError(failure("image pull " + image, r));
  }

  awaitable<CreateResult> create_and_start(CreateRequest q) override {
    // --pull never [port decision]: the image was inspected (and pulled explicitly) first;
    // `run` must never fold a pull into the lifecycle timeout (D-9).
    std::vector<std::string> args{"run", "-d", "--pull", "never", "--name", q.name,
                                  "--security-opt", "no-new-privileges", "--pids-limit",
                                  std::to_string(q.pids_limit)};
    if (q.init) args.push_back("--init");
    if (q.cap_drop_all) args.insert(args.end(), {"--cap-drop", "ALL"});
    else
      for (const auto& cap : q.cap_drop) args.insert(args.end(), {"--cap-drop", cap});
    for (const auto& [k, v] : q.sysctls) args.insert(args.end(), {"--sysctl", k + "=" + v});
    if (q.memory) args.insert(args.end(), {"--memory", *q.memory});
    if (q.cpus) args.insert(args.end(), {"--cpus", *q.cpus});
    args.insert(args.end(), {"--network", q.network});
    for (const auto& [k, v] : q.env) args.insert(args.end(), {"-e", k + "=" + v});
    for (const auto& [k, v] : q.labels) args.insert(args.end(), {"--label", k + "=" + v});
    args.push_back(q.image);
    args.insert(args.end(), q.command.begin(), q.command.end());
    auto r = co_await run(std::move(args));
    if (r.ok()) co_return CreateResult{CreateOutcome::Created, {}};
    if (contains_ci(r.stderr_bytes, "already in use")) co_return CreateResult{CreateOutcome::NameInUse, r.stderr_bytes};
    co_return CreateResult{CreateOutcome::Failed, trim(r.stderr_bytes)};
  }

  awaitable<bool> start(std::string container, std::string& detail) override {
    std::vector<std::string> args{"start", container};
    auto r = co_await run(std::move(args));
    if (!r.ok()) detail = trim(r.stderr_bytes);
    co_return r.ok();
  }

  awaitable<RemoveResult> remove_container(std::string id_or_name) override {
    std::vector<std::string> args{"rm", "-f", id_or_name};
    auto r = co_await run(std::move(args));
    // Both clients exit 0 for an absent container; only the text tells (docs/backends/docker.md "The CLI runner and its classification").
    if (contains_ci(r.stderr_bytes, "no such container")) co_return RemoveResult{RemoveOutcome::Absent, {}};
    if (r.ok()) co_return RemoveResult{RemoveOutcome::Removed, {}};
    co_return RemoveResult{RemoveOutcome::Refused, trim(r.stderr_bytes)};
  }

  awaitable<void> pause(std::string container) override {
    std::vector<std::string> args{"pause", container};
    auto r = co_await run(std::move(args));
    if (!r.ok()) throw OSError(failure("pause " + container, r));
  }

  awaitable<void> unpause(std::string container) override {
    std::vector<std::string> args{"unpause", container};
    auto r = co_await run(std::move(args));
    if (!r.ok()) throw OSError(failure("unpause " + container, r));
  }

  awaitable<ExecOutcome> exec(ExecCall call) override {
    std::vector<std::string> args{"exec", "-w", call.working_directory};
    if (call.user) args.insert(args.end(), {"--user", *call.user});
    const EnvFile env_file(call.env);
    std::vector<int> keep_fds;
    env_file.add_options(args, keep_fds, call.stdin_bytes.has_value());
    args.push_back(call.container);
    args.insert(args.end(), call.argv.begin(), call.argv.end());
    SubprocessResult r;
    // Without `-i` the client gives the command a closed stdin (STDIN-1).
    RunOptions options{.stdin_bytes = std::move(call.stdin_bytes), .timeout = call.timeout,
                       .max_stdout = call.max_stdout, .max_stderr = call.max_stderr,
                       .verb = "exec", .exec = true, .keep_fds = std::move(keep_fds)};
    try {
      r = co_await run(std::move(args), std::move(options));
    } catch (const support::SubprocessTimeout&) {
      throw TimeoutError(said("exec in container " + call.container + " did not finish within " +
                              std::to_string(call.timeout ? call.timeout->count() : 0) + " ms"));
    }
    ExecOutcome o;
    o.exit_code = r.exit_code;
    o.stdout_bytes = std::move(r.stdout_bytes);
    o.stderr_bytes = std::move(r.stderr_bytes);
    o.stdout_overflowed = r.stdout_overflowed;
    o.stderr_overflowed = r.stderr_overflowed;
    // The engine's check, or (issue 54) the runtime's own refusal when a pause came after that
    // check: either way the command never started.
    o.paused_refusal = (o.exit_code == 1 && contains_ci(o.stderr_bytes, "is paused, unpause the container")) ||
                       (o.exit_code == 126 && contains_ci(o.stderr_bytes, "cannot exec in a paused state"));
    o.could_not_start = (o.exit_code == 126 || o.exit_code == 127) && contains_ci(o.stderr_bytes, "oci runtime");
    co_return o;
  }

  awaitable<ExecStreamEnd> exec_stream(ExecStreamCall call, ExecChunkSink sink) override {
    co_await bind();
    SubprocessOptions o;
    o.argv = {config_.docker_path, "--context", context_, "exec", "-w", call.working_directory};
    if (call.user) o.argv.insert(o.argv.end(), {"--user", *call.user});
    const EnvFile env_file(call.env);
    env_file.add_options(o.argv, o.keep_fds, call.stdin_bytes.has_value() || call.stdin_fd >= 0);
    o.stdin_bytes = std::move(call.stdin_bytes);
    o.stdin_fd = std::exchange(call.stdin_fd, -1);  // STDIN-6: the client's stdin is the stream's pipe
    o.argv.push_back(call.container);
    o.argv.insert(o.argv.end(), call.argv.begin(), call.argv.end());
    o.env_mode = support::EnvMode::replace;
    o.env = env_;
    // The caps are the caller's (it stops reading through the sink); the client's pipes are
    // read as they fill, so each chunk is what one read of the client's output returned.
    o.max_stdout = o.max_stderr = std::numeric_limits<std::size_t>::max();
    o.on_stdout = [&sink](std::string_view b) { return sink(OutputStream::Stdout, b); };
    o.on_stderr = [&sink](std::string_view b) { return sink(OutputStream::Stderr, b); };
    o.idle_timeout = call.idle_timeout;
    o.timeout = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(call.deadline -
                                                                              std::chrono::steady_clock::now()),
                         std::chrono::milliseconds(1));
    // Only the client is stopped here, and its shutdown says nothing: no grace for it.
    o.kill_grace = std::chrono::milliseconds(100);
    o.stop = call.stop;  // STR-10: the client is killed; the caller kills the group in the container
    SubprocessResult r;
    bool expired = false;
    try {
      r = co_await spawn(std::move(o));
    } catch (const support::SubprocessTimeout&) {
      expired = true;
    } catch (const Cancelled&) {
      r.stopped_early = true;
    }
    ExecStreamEnd end;
    if (expired) end.how = ExecStreamEnd::How::DeadlineExpired;
    else if (r.stopped_early) end.how = ExecStreamEnd::How::Stopped;
    else if (r.idle_expired) end.how = ExecStreamEnd::How::IdleExpired;
    else end.exit_code = r.exit_code;
    co_return end;
  }

  awaitable<ArchiveGet> archive_get(std::string container, std::string path, std::size_t read_limit) override {
    std::vector<std::string> args{"cp", container + ":" + path, "-"};
    RunOptions options{.max_stdout = read_limit, .verb = "cp"};
    auto r = co_await run(std::move(args), std::move(options));
    ArchiveGet g;
    g.cut = r.stdout_overflowed;
    // Killed after the read limit: a nonzero or signal exit with bytes is parsed normally.
    if (!r.stdout_bytes.empty()) {
      g.bytes = std::move(r.stdout_bytes);
      co_return g;
    }
    if (r.ok()) throw OSError(said("cp " + container + ":" + path + " produced no tar stream"));
    const std::string& err = r.stderr_bytes;
    // Absent only when the message names exactly the requested path (D-20).
    const bool old_form = contains_ci(err, "no such container:path: " + container + ":" + path);
    const bool new_form = contains_ci(err, "could not find the file " + path + " in container " + container);
    if (new_form) co_return ArchiveGet{ArchiveStatus::Absent, {}, false};
    if (old_form) {
      // The 20.10 client words a gone container the same way (docs/backends/docker.md "The CLI runner and its classification"): confirm it.
      if (!co_await container_state(container))
        throw OSError(said("container " + container + " is gone (cp " + path + ")"));
      co_return ArchiveGet{ArchiveStatus::Absent, {}, false};
    }
    if (contains_ci(err, "not a directory"))
      // The daemon's message names a host path under /var/lib/docker; keep it out of the text.
      throw NotADirectoryError(said("a component of guest path '" + path + "' is not a directory"));
    throw OSError(failure("cp " + container + ":" + path, r));
  }

  awaitable<void> archive_put(std::string container, std::string destination, std::string tar) override {
    RunOptions options{.stdin_bytes = std::move(tar), .verb = "cp"};
    co_await copy_in(std::move(container), std::move(destination), std::move(options));
  }

  awaitable<void> archive_put_upload(std::string container, std::string destination, TarUpload upload) override {
    // stdin is the head, then the borrowed body in 256 KiB pieces, then the zeros; the
    // source is only called while the client runs, within this call.
    static constexpr std::size_t kPiece = std::size_t{256} << 10;
    RunOptions options{.stdin_bytes = std::move(upload.head), .verb = "cp"};
    options.stdin_source = upload.after_head(kPiece);
    co_await copy_in(std::move(container), std::move(destination), std::move(options));
  }

  awaitable<void> copy_in(std::string container, std::string destination, RunOptions options) {
    std::vector<std::string> args{"cp", "-", container + ":" + destination};
    auto r = co_await run(std::move(args), std::move(options));
    if (!r.ok()) {
      if (contains_ci(r.stderr_bytes, "not a directory"))
        throw NotADirectoryError(said("extracting into container " + container +
                                      " met a component that is not a directory"));
      throw OSError(failure("cp - " + container + ":" + destination, r));
    }
  }

  awaitable<std::vector<LabelledResource>> list_containers(std::vector<std::string> label_filters,
                                                           std::optional<std::string> name_regex) override {
    std::vector<std::string> args{"ps", "-a", "--no-trunc"};
    if (name_regex) args.insert(args.end(), {"--filter", "name=" + *name_regex});
    for (auto& f : label_filters) args.insert(args.end(), {"--filter", "label=" + f});
    args.insert(args.end(), {"--format", "{{.ID}}"});
    auto r = co_await run(std::move(args));
    if (!r.ok()) throw OSError(failure("ps", r));
    std::vector<std::string> verb{"container", "inspect"};
    co_return co_await inspect_many(std::move(verb), lines_of(r.stdout_bytes));
  }

  awaitable<std::vector<LabelledResource>> list_networks(std::vector<std::string> label_filters) override {
    std::vector<std::string> args{"network", "ls", "--no-trunc"};
    for (auto& f : label_filters) args.insert(args.end(), {"--filter", "label=" + f});
    args.insert(args.end(), {"--format", "{{.ID}}"});
    auto r = co_await run(std::move(args));
    if (!r.ok()) throw OSError(failure("network ls", r));
    std::vector<std::string> verb{"network", "inspect"};
    co_return co_await inspect_many(std::move(verb), lines_of(r.stdout_bytes));
  }

  awaitable<std::optional<std::string>> inspect_network(std::string id_or_name) override {
    std::vector<std::string> args{"network", "inspect", "--format", "{{json .}}", id_or_name};
    auto r = co_await run(std::move(args));
    if (!r.ok()) {
      if (contains_ci(r.stderr_bytes, "no such network") || contains_ci(r.stderr_bytes, "not found"))
        co_return std::nullopt;
      throw OSError(failure("network inspect " + id_or_name, r));
    }
    co_return trim(r.stdout_bytes);
  }

  awaitable<RemoveResult> remove_network(std::string id_or_name) override {
    std::vector<std::string> args{"network", "rm", id_or_name};
    auto r = co_await run(std::move(args));
    if (r.ok()) co_return RemoveResult{RemoveOutcome::Removed, {}};
    if (contains_ci(r.stderr_bytes, "no such network") || contains_ci(r.stderr_bytes, "not found"))
      co_return RemoveResult{RemoveOutcome::Absent, {}};
    co_return RemoveResult{RemoveOutcome::Refused, trim(r.stderr_bytes)};
  }

  bool has_egress_plane() const noexcept override { return true; }

  awaitable<std::string> server_version() override {
    std::vector<std::string> args{"version", "--format", "{{.Server.Version}}"};
    auto r = co_await run(std::move(args));
    if (!r.ok()) throw OSError(failure("version", r));
    co_return trim(r.stdout_bytes);
  }

  awaitable<CreateResult> create_network(NetworkRequest q) override {
    std::vector<std::string> args{"network", "create"};
    if (q.internal) args.push_back("--internal");
    args.push_back(q.ipv6 ? "--ipv6=true" : "--ipv6=false");
    for (const auto& [k, v] : q.options) args.insert(args.end(), {"-o", k + "=" + v});
    for (const auto& [k, v] : q.labels) args.insert(args.end(), {"--label", k + "=" + v});
    args.push_back(q.name);
    auto r = co_await run(std::move(args));
    if (r.ok()) co_return CreateResult{CreateOutcome::Created, {}};
    if (contains_ci(r.stderr_bytes, "already exists")) co_return CreateResult{CreateOutcome::NameInUse, r.stderr_bytes};
    co_return CreateResult{CreateOutcome::Failed, trim(r.stderr_bytes)};
  }

  awaitable<void> connect_network(std::string network, std::string container) override {
    std::vector<std::string> args{"network", "connect", network, container};
    auto r = co_await run(std::move(args));
    if (!r.ok()) throw OSError(failure("network connect " + network + " " + container, r));
  }

  awaitable<std::string> container_logs(std::string container, std::size_t max_bytes) override {
    std::vector<std::string> args{"logs", "--tail", std::to_string(kLogTailLines), container};
    RunOptions ro;
    ro.max_stdout = ro.max_stderr = max_bytes;
    auto r = co_await run(std::move(args), std::move(ro));
    if (!r.ok() && !r.stdout_overflowed && !r.stderr_overflowed) throw OSError(failure("logs " + container, r));
    co_return r.stdout_bytes + r.stderr_bytes;
  }

  awaitable<void> stop_container(std::string id_or_name, std::chrono::seconds grace) override {
    std::vector<std::string> args{"stop", "-t", std::to_string(grace.count()), id_or_name};
    auto r = co_await run(std::move(args));
    if (!r.ok() && !contains_ci(r.stderr_bytes, "no such container")) throw OSError(failure("stop " + id_or_name, r));
  }

private:
  std::string failure(const std::string& what, const SubprocessResult& r) const {
    return said("docker " + what + " failed (exit " + std::to_string(r.exit_code) + "): " +
                trim(r.stderr_bytes));
  }

  awaitable<void> bind() {
    if (bound_) co_return;
    auto guard = co_await bind_lock_.scoped();
    if (bound_) co_return;
    SubprocessOptions o;
    o.argv = {config_.docker_path, "context", "inspect", "--format", "{{json .}}"};
    o.env_mode = support::EnvMode::replace;
    o.env = env_;
    o.timeout = config_.command_timeout();
    o.max_stdout = 1 << 20;
    SubprocessResult r;
    try {
      r = co_await spawn(std::move(o));
    } catch (const support::SubprocessTimeout&) {
      // The backend's own bound, not a caller's timeout (C-40): the binding stays unbound.
      throw OSError(said("`" + config_.docker_path +
                         " context inspect` did not answer within command_timeout_seconds=" +
                         std::to_string(config_.command_timeout_seconds)));
    }
    std::string name, host;
    try {
      auto j = nlohmann::json::parse(trim(r.stdout_bytes));
      if (j.is_array() && j.size() == 1) j = j[0];
      if (j.is_object()) {
        name = j.value("Name", "");
        if (auto ep = j.find("Endpoints"); ep != j.end() && ep->is_object())
          if (auto d = ep->find("docker"); d != ep->end() && d->is_object()) host = d->value("Host", "");
      }
    } catch (const nlohmann::json::exception&) {
    }
    if (!r.ok() || name.empty() || host.empty())
      throw OSError(said("the client '" + config_.docker_path +
                         "' could not resolve a context and endpoint (`context inspect` exit " +
                         std::to_string(r.exit_code) + "): " + trim(r.stderr_bytes)));
    context_ = name;
    host_ = host;
    env_["DOCKER_HOST"] = host;  // pinned even if it was unset (D-29)
    bound_ = true;
  }

  awaitable<SubprocessResult> spawn(SubprocessOptions o) {
    try {
      co_return co_await support::run_subprocess(std::move(o));
    } catch (const support::SubprocessSpawnError& e) {
      throw ValueError(said("cannot run docker_path '" + config_.docker_path + "': " + e.what()));
    }
  }

  awaitable<SubprocessResult> run(std::vector<std::string> args, RunOptions ro = RunOptions{}) {
    co_await bind();
    SubprocessOptions o;
    o.argv = {config_.docker_path, "--context", context_};
    o.argv.insert(o.argv.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
    o.stdin_bytes = std::move(ro.stdin_bytes);
    o.stdin_source = std::move(ro.stdin_source);
    o.keep_fds = std::move(ro.keep_fds);
    o.timeout = ro.exec ? ro.timeout : ro.timeout.value_or(config_.command_timeout());
    o.max_stdout = ro.max_stdout;
    o.max_stderr = ro.max_stderr;
    o.env_mode = support::EnvMode::replace;
    o.env = env_;
    const std::string verb = ro.verb ? ro.verb : o.argv[3];
    if (ro.exec) co_return co_await spawn(std::move(o));  // exec's timeout is the caller's
    try {
      co_return co_await spawn(std::move(o));
    } catch (const support::SubprocessTimeout&) {
      // A lifecycle bound is the backend's own ceiling, not the caller's timeout (C-40).
      throw OSError(said("docker " + verb + " did not answer within command_timeout_seconds=" +
                         std::to_string(config_.command_timeout_seconds)));
    }
  }

  awaitable<std::vector<LabelledResource>> inspect_many(std::vector<std::string> verb, std::vector<std::string> ids) {
    std::vector<LabelledResource> out;
    if (ids.empty()) co_return out;
    std::vector<std::string> args = verb;
    args.insert(args.end(), {"--format", "{{json .}}"});
    args.insert(args.end(), ids.begin(), ids.end());
    auto r = co_await run(std::move(args));
    // A resource that vanished since the listing makes the client exit 1 after printing
    // the others; only an answer with nothing usable is a failure.
    for (const auto& line : lines_of(r.stdout_bytes)) {
      try {
        auto j = nlohmann::json::parse(line);
        LabelledResource res;
        res.id = j.value("Id", "");
        res.name = j.value("Name", "");
        if (!res.name.empty() && res.name[0] == '/') res.name.erase(0, 1);
        res.created = j.value("Created", "");
        const nlohmann::json* labels = nullptr;
        if (auto c = j.find("Config"); c != j.end() && c->is_object()) {
          if (auto l = c->find("Labels"); l != c->end() && l->is_object()) labels = &*l;
        } else if (auto l = j.find("Labels"); l != j.end() && l->is_object()) {
          labels = &*l;
        }
        if (labels)
          for (auto& [k, v] : labels->items())
            if (v.is_string()) res.labels.emplace(k, v.get<std::string>());
        out.push_back(std::move(res));
      } catch (const nlohmann::json::exception& e) {
        throw OSError(said("unreadable " + verb[0] + " inspect answer: " + e.what()));
      }
    }
    if (!r.ok() && out.empty() && !contains_ci(r.stderr_bytes, "no such"))
      throw OSError(failure(verb[0] + " inspect", r));
    co_return out;
  }

  DockerConfig config_;
  std::map<std::string, std::string> env_;
  support::AsyncMutex bind_lock_;
  std::atomic<bool> bound_{false};
  std::string context_;
  std::string host_;
};

}  // namespace

std::shared_ptr<DockerTransport> make_cli_transport(const DockerConfig& config) {
  return std::make_shared<CliTransport>(config);
}

}  // namespace maf::sandbox::docker

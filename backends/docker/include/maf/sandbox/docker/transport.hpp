#pragma once
/// @file docker/transport.hpp
/// The seam between the Docker backend's logic and the engine it talks to.
///
/// Everything the backend asks of an engine is one of the operations below, each phrased as
/// what the backend needs to know rather than as a CLI verb, and each *classified by the
/// transport* (absent / conflict / paused refusal / failure) because only the transport
/// knows how its engine says so: the CLI transport reads the client's stderr (docs/backends/docker.md
/// "The CLI runner and its classification"), a later Engine-API transport reads HTTP status codes. Acquire, the freeze, the
/// ancestor walk, identity resolution, disposal and reap are written once above this seam.
///
/// A nonzero answer is a value, never an exception, wherever the caller must classify it;
/// an operation that cannot complete (engine unreachable, timeout, transport failure)
/// throws. Cancellation throws `maf::sandbox::Cancelled`.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/exec_stream.hpp"
#include "maf/sandbox/support/tar.hpp"

namespace maf::sandbox::docker {

/// `.State` of a container (D-11). A paused container reports Running too.
struct ContainerState {
  std::string id;      ///< full 64-hex ID
  std::string status;  ///< "running", "paused", "exited", "created", ...
  bool running = false;
  bool paused = false;
  /// The ID of the image the container was created from (`.Image`); empty when the
  /// transport could not tell. Keys what a fresh container of that image is known to pass
  /// (acquire's probes and image user, issue 24).
  std::string image_id;
};

/// Everything `docker run -d` is given (D-1…D-3). Built by the backend; a transport
/// adds nothing (no volume, no mount, no socket, no published port: D-1).
struct CreateRequest {
  std::string name;
  std::string image;
  std::vector<std::pair<std::string, std::string>> labels;  ///< in argv order
  int pids_limit = 512;
  /// `--cap-drop ALL`; when false, each of `cap_drop` is dropped instead (issue 22: the
  /// backend drops NET_RAW from every workload, so no guest opens a raw socket).
  bool cap_drop_all = false;
  std::vector<std::string> cap_drop;
  /// `--sysctl key=value` (Engine API: `HostConfig.Sysctls`), namespaced network settings
  /// only; the proxy's forwarding-off set (egress_topology.hpp, issue 22).
  std::vector<std::pair<std::string, std::string>> sysctls;
  std::optional<std::string> memory;
  std::optional<std::string> cpus;  ///< already formatted (Python's str(float))
  std::vector<std::string> command{"sleep", "infinity"};
  /// `--init` (Engine API: `HostConfig.Init`): the engine's reaping init runs `command`.
  bool init = false;
  /// `none` (CLOSED) or the sandbox's internal network N (ALLOWLIST, D-31).
  std::string network = "none";
  std::vector<std::pair<std::string, std::string>> env;  ///< `-e NAME=value`, in order
};

/// `docker network create` for an ALLOWLIST sandbox's internal network (D-31, D-32).
struct NetworkRequest {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::pair<std::string, std::string>> options;  ///< `-o key=value`
  bool internal = true;
  bool ipv6 = false;
};

/// How many log lines container_logs reads ([port decision] `--tail 1000`, "Disposal, in order").
inline constexpr int kLogTailLines = 1000;

enum class CreateOutcome { Created, NameInUse, Failed };

/// How DockerTransport::start_created went: `AlreadyRunning` means someone else started the
/// container between its creation and this call (the Engine API's 304), so whatever ran in
/// it meanwhile is not known.
enum class StartOutcome { Started, AlreadyRunning, Failed };

struct CreateResult {
  CreateOutcome outcome = CreateOutcome::Failed;
  std::string detail;  ///< the engine's message on failure
};

/// One `docker exec` (D-12). No `-i`, no tty.
struct ExecCall {
  std::string container;
  std::vector<std::string> argv;
  std::string working_directory;  ///< always passed as `-w`
  std::optional<std::string> user;  ///< `--user`; absent = the image's user
  /// Wall-clock bound on the client call; absent = none.
  std::optional<std::chrono::milliseconds> timeout;
  std::size_t max_stdout = std::size_t{16} << 20;
  std::size_t max_stderr = std::size_t{1} << 20;
  /// The command's own environment (docs/exec-input.md ENV-4): the Engine API's `Env`; the
  /// CLI's `--env-file` on a descriptor. Never on a command line.
  std::map<std::string, std::string> env{};
  /// Bytes for the command's stdin, then end of file (STDIN-1); absent: stdin closed.
  std::optional<std::string> stdin_bytes{};
};

struct ExecOutcome {
  int exit_code = 0;
  std::string stdout_bytes;
  std::string stderr_bytes;
  bool stdout_overflowed = false;
  bool stderr_overflowed = false;
  /// The engine refused because the container is paused (D-22); the command
  /// never started.
  bool paused_refusal = false;
  /// The engine could not start the command (126/127 with an `OCI runtime` message).
  bool could_not_start = false;
};

/// One streamed `docker exec` (exec_stream; docker.md "Streaming exec"). No `-i`, no tty.
struct ExecStreamCall {
  std::string container;
  std::vector<std::string> argv;
  std::string working_directory;
  std::optional<std::string> user;
  /// The command's own deadline (C-40); the transport adds no bound of its own.
  std::chrono::steady_clock::time_point deadline;
  /// The longest silence on both streams together (STR-4).
  std::chrono::milliseconds idle_timeout{60'000};
  /// As ExecCall's.
  std::map<std::string, std::string> env{};
  std::optional<std::string> stdin_bytes{};
  /// The caller's stop (STR-10): once requested the transport stops reading and reports
  /// ExecStreamEnd::How::Stopped; the caller kills the group in the container.
  std::stop_token stop{};
  /// A streamed stdin's read end (docs/exec-input.md STDIN-6), owned by the transport from the
  /// call on: the CLI's `-i` reads it, the API's hijacked connection is fed from it; its end of
  /// file is the command's. Not with `stdin_bytes`.
  int stdin_fd = -1;
};

/// Receives each chunk as the transport reads it; false: stop reading.
using ExecChunkSink = std::function<bool(OutputStream stream, std::string_view bytes)>;

/// How a streamed exec's *client side* ended. Only `Exited` means the command is over: on
/// every other ending the transport stopped reading (killed the client, dropped the
/// connection) and the command may still run in the container — the caller stops it there.
struct ExecStreamEnd {
  enum class How { Exited, DeadlineExpired, IdleExpired, Stopped };
  How how = How::Exited;
  /// For Exited: the exec's status (an engine refusal is 1 with the engine's words sent to
  /// the sink as stderr first, as the CLI prints them).
  int exit_code = 0;
};

enum class ArchiveStatus { Ok, Absent };

/// The start of `docker cp C:path -` (D-17…D-20).
struct ArchiveGet {
  ArchiveStatus status = ArchiveStatus::Ok;
  std::string bytes;   ///< at most `read_limit` bytes of the tar stream
  bool cut = false;    ///< the stream was longer than `read_limit` (reading stopped there)
};

/// What a stat-only probe of one guest path told (issue 9: the Engine API's
/// `HEAD /containers/{id}/archive`, which reads no body). `Unsupported` — the transport has
/// no such probe (the CLI), or the answer was not conclusive — sends the caller to the tar
/// plane, whose classification is the reference. `NotFound` — the probe answered 404, which
/// cannot tell a missing path from a gone container: the caller settles it (a path is
/// absent only if the container, by its ID, is still there).
/// A one-pass tar stream for DockerTransport::archive_put_upload (support/tar.hpp).
using TarUpload = support::TarStream;

enum class PathStatStatus { Unsupported, Ok, NotFound };

struct PathStat {
  PathStatStatus status = PathStatStatus::Unsupported;
  std::uint32_t mode = 0;  ///< Go's os.FileMode bits as the engine reports them
  std::int64_t size = 0;
};

/// A resource that carries the backend's labels, as listed by the engine.
struct LabelledResource {
  std::string id;    ///< full 64-hex ID
  std::string name;  ///< without a leading '/'
  std::map<std::string, std::string> labels;
  std::string created;  ///< RFC 3339 as the engine reports it
};

enum class RemoveOutcome { Removed, Absent, Refused };

struct RemoveResult {
  RemoveOutcome outcome = RemoveOutcome::Refused;
  std::string detail;
};

class DockerTransport {
public:
  virtual ~DockerTransport();

  /// The resolved endpoint this transport is pinned to (D-29), e.g.
  /// "unix:///var/run/docker.sock". Binds on first use. The freeze registry is keyed by it.
  virtual boost::asio::awaitable<std::string> endpoint() = 0;

  /// `Server.Os` as the daemon reports it (trimmed), e.g. "linux".
  virtual boost::asio::awaitable<std::string> server_os() = 0;

  /// Absent when the container does not exist.
  virtual boost::asio::awaitable<std::optional<ContainerState>> container_state(std::string container) = 0;
  /// `Config.User` (may be empty).
  virtual boost::asio::awaitable<std::string> config_user(std::string container) = 0;
  /// The container's full inspect document as JSON text; absent when it does not exist.
  virtual boost::asio::awaitable<std::optional<std::string>> inspect_container(std::string id_or_name) = 0;

  virtual boost::asio::awaitable<bool> image_present(std::string image) = 0;
  /// Explicit pull under the pull timeout (D-9); throws with the engine's text.
  virtual boost::asio::awaitable<void> pull_image(std::string image) = 0;

  virtual boost::asio::awaitable<CreateResult> create_and_start(CreateRequest request) = 0;
  /// Whether create_unstarted/start_created split create_and_start at no extra cost (the
  /// Engine API's create and start are two exchanges either way; the CLI's `run -d` is one
  /// client process, and a `create` + `start` pair would be two). Issue 24: a fresh
  /// container's work directory is uploaded between the two, while nothing runs in it.
  virtual bool creates_unstarted() const noexcept { return false; }
  /// The create half of create_and_start: the container exists, created, nothing started.
  /// The default throws (a transport that says creates_unstarted() overrides both).
  virtual boost::asio::awaitable<CreateResult> create_unstarted(CreateRequest request);
  /// Start a container this process created unstarted, telling a start of ours from one
  /// that found it already running. The default asks start() and, unable to tell, answers
  /// AlreadyRunning (the cautious reading).
  virtual boost::asio::awaitable<StartOutcome> start_created(std::string container, std::string& detail);
  /// Start a stopped container; false with `detail` on failure.
  virtual boost::asio::awaitable<bool> start(std::string container, std::string& detail) = 0;
  /// `rm -f`; absent is its own outcome (the 20.10 client exits 0 either way).
  virtual boost::asio::awaitable<RemoveResult> remove_container(std::string id_or_name) = 0;

  /// Throws on failure ("The freeze": no unfrozen fallback).
  virtual boost::asio::awaitable<void> pause(std::string container) = 0;
  virtual boost::asio::awaitable<void> unpause(std::string container) = 0;

  /// Throws TimeoutError when `call.timeout` expires (the client is killed and reaped).
  virtual boost::asio::awaitable<ExecOutcome> exec(ExecCall call) = 0;
  /// Run `call`, handing each chunk to `sink` in reading order as it is read, never
  /// buffered until exit; stop reading when `sink` returns false, at `call.deadline` and
  /// after `call.idle_timeout` of silence, and say which (no TimeoutError for these). A
  /// failure of the transport itself throws. The default refuses (a test double without it).
  virtual boost::asio::awaitable<ExecStreamEnd> exec_stream(ExecStreamCall call, ExecChunkSink sink);

  /// Read the start of the tar stream of one guest path; reading stops at `read_limit`.
  /// Absent only when the engine says the requested path is not there (D-20); any other
  /// failure throws.
  virtual boost::asio::awaitable<ArchiveGet> archive_get(std::string container, std::string path,
                                                         std::size_t read_limit) = 0;
  /// A stat without a body, where the engine offers one; the default says `Unsupported`.
  /// Never answers "absent": only the tar plane tells a missing path from a gone container.
  virtual boost::asio::awaitable<PathStat> path_stat(std::string container, std::string path);
  /// Extract a tar stream at `destination` (always "/" here). Throws with the engine's text.
  virtual boost::asio::awaitable<void> archive_put(std::string container, std::string destination,
                                                   std::string tar) = 0;

  /// archive_put of an archive whose last file body is the caller's bytes, borrowed: a
  /// transport streams `head`, `body`, then the zeros instead of holding a copy of the body
  /// in the archive (a 32 MiB write peaked at 2x the payload). The default joins them and
  /// calls archive_put, so a transport (or a test double) without streaming still works.
  virtual boost::asio::awaitable<void> archive_put_upload(std::string container, std::string destination,
                                                          TarUpload upload);

  /// Containers (stopped ones included) carrying every `label=value` (or bare `label`)
  /// filter, optionally restricted to names matching `name_regex`.
  virtual boost::asio::awaitable<std::vector<LabelledResource>> list_containers(
      std::vector<std::string> label_filters, std::optional<std::string> name_regex) = 0;
  virtual boost::asio::awaitable<std::vector<LabelledResource>> list_networks(
      std::vector<std::string> label_filters) = 0;
  /// A network's inspect document as JSON text; absent when it does not exist.
  virtual boost::asio::awaitable<std::optional<std::string>> inspect_network(std::string id_or_name) = 0;
  virtual boost::asio::awaitable<RemoveResult> remove_network(std::string id_or_name) = 0;

  /// Connections to the engine held open for reuse between calls (the Engine API's idle
  /// keep-alive pool, bounded); 0 for a transport that keeps none. For diagnostics, and so
  /// a leak check can tell a pooled descriptor from a leaked one.
  virtual std::size_t idle_connections() const { return 0; }

  // The egress plane (D-31): what ALLOWLIST topology needs beyond the rest. A
  // transport without it keeps the defaults, and the backend then declares CLOSED only.
  virtual bool has_egress_plane() const noexcept { return false; }
  /// `Server.Version`, e.g. "20.10.24+dfsg1" (the D-32 engine gate).
  virtual boost::asio::awaitable<std::string> server_version();
  /// Created, NameInUse (adopt, then verify) or Failed with the engine's text.
  virtual boost::asio::awaitable<CreateResult> create_network(NetworkRequest request);
  /// Attach a container to a further network; throws with the engine's text.
  virtual boost::asio::awaitable<void> connect_network(std::string network, std::string container);
  /// The last kLogTailLines lines of the container's log, stdout then stderr, at most
  /// `max_bytes` of each (the proxy's readiness line; its decisions at teardown).
  virtual boost::asio::awaitable<std::string> container_logs(std::string container, std::size_t max_bytes);
  /// `docker stop -t <grace>`: an absent or already stopped container is no error; any other
  /// failure throws with the engine's text (the proxy drain, D-27).
  virtual boost::asio::awaitable<void> stop_container(std::string id_or_name, std::chrono::seconds grace);
  /// An image's `Config.Labels` as JSON text (an object, or `null`); absent when the image is
  /// not there. The egress proxy image's features label (issue 45). The default (a transport
  /// without the egress plane) answers absent.
  virtual boost::asio::awaitable<std::optional<std::string>> image_labels(std::string image);
};

}  // namespace maf::sandbox::docker

// The Engine-API transport (api_transport.hpp): each DockerTransport operation as one or a
// few HTTP exchanges, classified by status code. HTTP itself lives in docker_http.cpp.
#include "maf/sandbox/docker/api_transport.hpp"
#include "maf/sandbox/docker/transport_choice.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "maf/sandbox/support/async_mutex.hpp"
#include "docker_http.hpp"
#include "maf/sandbox/docker/cli_transport.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/exec_result.hpp"
#include "maf/sandbox/support/capture_buffer.hpp"
#include "maf/sandbox/support/sleep.hpp"
#include "said.hpp"

namespace maf::sandbox::docker {

namespace {

using boost::asio::awaitable;
using detail::HttpRequest;
using detail::HttpResponse;
using detail::url_escape;
using nlohmann::json;

/// The newest API version whose shapes this file speaks (engine 20.10).
constexpr int kMaxMinor = 41;

bool contains_ci(std::string_view haystack, std::string_view needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != haystack.end();
}

/// The engine's `{"message": …}`, or the raw body when it is not that shape.
std::string message_of(const HttpResponse& r) {
  try {
    auto j = json::parse(r.body);
    if (j.is_object() && j.contains("message") && j["message"].is_string()) return j["message"].get<std::string>();
  } catch (const json::exception&) {
  }
  std::string text = r.body;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text.empty() ? "HTTP " + std::to_string(r.status) : text;
}

/// Go's os.FileMode type bits (dir, symlink, device, pipe, socket, char device, irregular):
/// none set is a regular file.
constexpr std::uint32_t kGoModeTypeBits =
    (1u << 31) | (1u << 27) | (1u << 26) | (1u << 25) | (1u << 24) | (1u << 21) | (1u << 19);
/// What a one-file tar stream holds beside the body: extended headers (bounded by the tar
/// plane's 64 KiB prefix), the header block, padding and the two end blocks.
constexpr std::size_t kTarOverhead = (64 + 2) * 1024;

/// X-Docker-Container-Path-Stat (base64 JSON); status Unsupported when absent or unreadable.
PathStat decode_path_stat(const std::string& header) {
  PathStat s;
  if (header.empty()) return s;
  try {
    auto j = json::parse(detail::base64_decode(header));
    s.mode = j.at("mode").get<std::uint32_t>();
    s.size = j.at("size").get<std::int64_t>();
    s.status = PathStatStatus::Ok;
  } catch (const json::exception&) {
  }
  return s;
}

/// docker's RAMInBytes: a decimal, an optional binary unit (b k m g t p), an optional "b".
std::optional<std::int64_t> memory_bytes(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  char* end = nullptr;
  const std::string number = text.substr(0, i);
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size()) return std::nullopt;
  std::string unit = text.substr(i);
  if (!unit.empty() && unit[0] == ' ') unit.erase(0, 1);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  static constexpr std::string_view kUnits = "kmgtp";
  double multiplier = 1;
  if (unit.size() == 1 && kUnits.find(unit[0]) != std::string_view::npos)
    multiplier = std::pow(1024.0, static_cast<double>(kUnits.find(unit[0]) + 1));
  else if (!unit.empty())
    return std::nullopt;
  return static_cast<std::int64_t>(value * multiplier);
}

std::string filters_query(const std::vector<std::string>& labels, const std::optional<std::string>& name) {
  json filters = json::object();
  if (!labels.empty()) filters["label"] = labels;
  if (name) filters["name"] = json::array({*name});
  return "filters=" + url_escape(filters.dump());
}

/// The 8-byte-header framing of a multiplexed stream (Tty=false: stream byte, three zeros,
/// big-endian length), split incrementally: each payload piece goes to `on_payload` as soon
/// as it is fed, a frame split across reads included, so a streamed exec never waits for a
/// frame to complete. Stream 2 is stderr, anything else stdout.
struct FrameSplitter {
  std::string header;
  std::size_t body_left = 0;
  int stream = 0;

  /// False as soon as `on_payload` returns false (the rest is not split).
  template <class OnPayload>
  bool feed(std::string_view bytes, OnPayload&& on_payload) {
    while (!bytes.empty()) {
      if (body_left == 0) {
        const std::size_t take = std::min<std::size_t>(8 - header.size(), bytes.size());
        header.append(bytes.substr(0, take));
        bytes.remove_prefix(take);
        if (header.size() < 8) return true;
        stream = static_cast<unsigned char>(header[0]);
        body_left = (std::size_t{static_cast<unsigned char>(header[4])} << 24) |
                    (std::size_t{static_cast<unsigned char>(header[5])} << 16) |
                    (std::size_t{static_cast<unsigned char>(header[6])} << 8) |
                    std::size_t{static_cast<unsigned char>(header[7])};
        header.clear();
        continue;
      }
      const std::size_t take = std::min(body_left, bytes.size());
      if (!on_payload(stream == 2, bytes.substr(0, take))) return false;
      bytes.remove_prefix(take);
      body_left -= take;
    }
    return true;
  }
};

/// The multiplexed exec stream, demultiplexed with per-stream caps. Each stream is captured
/// in a support::CaptureBuffer (no doubling: an exec printing 8 MiB peaked at 2x its
/// output) and moved into `out` by finish().
struct Demux {
  FrameSplitter frames;
  ExecOutcome* out = nullptr;
  std::size_t max_stdout = 0;
  std::size_t max_stderr = 0;
  support::CaptureBuffer stdout_bytes, stderr_bytes;

  /// What was captured, into out->stdout_bytes / stderr_bytes.
  void finish() {
    out->stdout_bytes = stdout_bytes.take();
    out->stderr_bytes = stderr_bytes.take();
  }

  /// False once a cap is passed (reading stops).
  bool feed(std::string_view bytes) {
    return frames.feed(bytes, [this](bool to_stderr, std::string_view payload) {
      support::CaptureBuffer& sink = to_stderr ? stderr_bytes : stdout_bytes;
      const std::size_t cap = to_stderr ? max_stderr : max_stdout;
      const std::size_t room = cap - std::min(cap, sink.size());
      sink.append(payload.substr(0, std::min(payload.size(), room)));
      if (payload.size() > room) {
        (to_stderr ? out->stderr_overflowed : out->stdout_overflowed) = true;
        return false;
      }
      return true;
    });
  }
};

// Every exchange is written in one pattern, because GCC 12 destroys temporaries created inside
// a co_await expression twice: its parts are named locals — `target` (unversioned), `what`
// (the operation as the CLI would name it, for errors; reused by the failure message) and
// `body_text` — awaited in one `call`, whose method is a `const char*` (no temporary). A
// request built by hand does `co_await negotiate()` first and sets
// `request.target = prefix_ + …` outside any co_await.
class ApiTransport final : public DockerTransport {
public:
  ApiTransport(DockerConfig config, detail::HttpEndpoint endpoint)
      : config_(std::move(config)), http_(std::move(endpoint)) {}

  awaitable<std::string> endpoint() override { co_return http_.endpoint().display; }

  awaitable<std::string> server_os() override {
    co_await negotiate();
    co_return os_;
  }

  awaitable<std::optional<ContainerState>> container_state(std::string container) override {
    std::string target = "/containers/" + url_escape(container) + "/json";
    const std::string what = "container inspect " + container;
    auto doc = co_await inspect_json(std::move(target), what);
    if (!doc) co_return std::nullopt;
    try {
      ContainerState s;
      s.id = doc->at("Id").get<std::string>();
      const json& state = doc->at("State");
      s.status = state.value("Status", "");
      s.running = state.value("Running", false);
      s.paused = state.value("Paused", false);
      s.image_id = doc->value("Image", "");
      co_return s;
    } catch (const json::exception& e) {
      throw OSError(said("unreadable state of container " + container + ": " + e.what()));
    }
  }

  awaitable<std::string> config_user(std::string container) override {
    std::string target = "/containers/" + url_escape(container) + "/json";
    const std::string what = "container inspect " + container;
    auto doc = co_await inspect_json(std::move(target), what);
    if (!doc) throw OSError(said("container inspect " + container + " failed: no such container"));
    try {
      const json& cfg = doc->at("Config");
      co_return cfg.contains("User") && cfg["User"].is_string() ? cfg["User"].get<std::string>() : std::string();
    } catch (const json::exception& e) {
      throw OSError(said("unreadable Config.User of container " + container + ": " + e.what()));
    }
  }

  awaitable<std::optional<std::string>> inspect_container(std::string id_or_name) override {
    std::string target = "/containers/" + url_escape(id_or_name) + "/json";
    const std::string what = "container inspect " + id_or_name;
    auto r = co_await call("GET", std::move(target), what);
    if (r.status == 404) co_return std::nullopt;
    if (r.status != 200) throw OSError(failure(what, r));
    co_return std::move(r.body);
  }

  awaitable<bool> image_present(std::string image) override {
    std::string target = "/images/" + url_escape(image, true) + "/json";
    const std::string what = "image inspect " + image;
    auto r = co_await call("GET", std::move(target), what);
    co_return r.status == 200;
  }

  awaitable<std::optional<std::string>> image_labels(std::string image) override {
    std::string target = "/images/" + url_escape(image, true) + "/json";
    const std::string what = "image inspect " + image;
    auto r = co_await call("GET", std::move(target), what);
    if (r.status == 404) co_return std::nullopt;
    if (r.status != 200) throw OSError(failure(what, r));
    try {
      const auto j = nlohmann::json::parse(r.body);
      co_return j.value("Config", nlohmann::json::object()).value("Labels", nlohmann::json()).dump();
    } catch (const nlohmann::json::exception& e) {
      throw OSError(what + ": unreadable answer: " + e.what());
    }
  }

  awaitable<void> pull_image(std::string image) override {
    // The CLI pulls `name:latest` for a bare name; the API would pull every tag of it.
    std::string from = image;
    std::string tag;
    const auto slash = image.rfind('/');
    const auto colon = image.rfind(':');
    if (image.find('@') == std::string::npos) {
      if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
        from = image.substr(0, colon);
        tag = image.substr(colon + 1);
      } else {
        tag = "latest";
      }
    }
    std::string target = "/images/create?fromImage=" + url_escape(from);
    if (!tag.empty()) target += "&tag=" + url_escape(tag);
    HttpRequest request;
    request.method = "POST";
    co_await negotiate();
    request.target = prefix_ + target;
    request.deadline = std::chrono::steady_clock::now() + config_.image_pull_timeout();
    // The progress stream reports failure inside a 200 as `{"error": …}` lines.
    std::string errors;
    std::string pending;
    auto sink = [&](std::string_view bytes) {
      pending.append(bytes);
      for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
        const std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        try {
          auto j = json::parse(line);
          if (j.is_object() && j.contains("error")) errors += j["error"].dump() + " ";
        } catch (const json::exception&) {
        }
      }
      return pending.size() < (std::size_t{1} << 20);
    };
    HttpResponse r;
    try {
      std::function<bool(std::string_view)> progress = sink;
      r = co_await http_.request(std::move(request), std::move(progress));
    } catch (const detail::HttpTimeout&) {
      throw OSError(said("image pull " + image +
                         " did not finish within image_pull_timeout_seconds=" +
                         std::to_string(config_.image_pull_timeout_seconds)));
    } catch (const detail::HttpFailure& e) {
      throw OSError(said("image pull " + image + " via " + http_.endpoint().display + ": " + e.what()));
    }
    if (r.status != 200) throw OSError(failure("image pull " + image, r));
    if (!errors.empty()) throw OSError(said("image pull " + image + " failed: " + errors));
  }

  awaitable<CreateResult> create_and_start(CreateRequest q) override {
    std::string name = q.name;
    auto created = co_await create_unstarted(std::move(q));
    if (created.outcome != CreateOutcome::Created) co_return created;
    std::string detail;
    // Like `docker run -d`, a start failure leaves the created container for the caller.
    if (!co_await start(name, detail)) co_return CreateResult{CreateOutcome::Failed, detail};
    co_return CreateResult{CreateOutcome::Created, {}};
  }

  // create and start are two exchanges anyway: splitting them costs nothing here.
  bool creates_unstarted() const noexcept override { return true; }

  awaitable<CreateResult> create_unstarted(CreateRequest q) override {
    json host = {{"PidsLimit", q.pids_limit},
                 {"SecurityOpt", json::array({"no-new-privileges"})},
                 {"NetworkMode", q.network}};
    if (q.init) host["Init"] = true;
    if (q.cap_drop_all) host["CapDrop"] = json::array({"ALL"});
    else if (!q.cap_drop.empty()) host["CapDrop"] = q.cap_drop;
    if (!q.sysctls.empty()) {
      json sysctls = json::object();
      for (const auto& [k, v] : q.sysctls) sysctls[k] = v;
      host["Sysctls"] = sysctls;
    }
    if (q.memory) {
      auto bytes = memory_bytes(*q.memory);
      if (!bytes) co_return CreateResult{CreateOutcome::Failed, "invalid memory value '" + *q.memory + "'"};
      host["Memory"] = *bytes;
    }
    if (q.cpus) host["NanoCpus"] = static_cast<std::int64_t>(std::llround(std::stod(*q.cpus) * 1e9));
    json labels = json::object();
    for (const auto& [k, v] : q.labels) labels[k] = v;
    json env = json::array();
    for (const auto& [k, v] : q.env) env.push_back(k + "=" + v);
    json body = {{"Image", q.image}, {"Env", env}, {"Labels", labels}, {"HostConfig", host},
                 {"AttachStdout", false}, {"AttachStderr", false}, {"Tty", false}, {"OpenStdin", false}};
    // Like `docker run IMAGE` with no arguments: the image's own command (the proxy's case).
    if (!q.command.empty()) body["Cmd"] = q.command;
    std::string target = "/containers/create?name=" + url_escape(q.name);
    const std::string what = "create " + q.name;
    std::string body_text = body.dump();
    auto r = co_await call("POST", std::move(target), what, std::move(body_text));
    if (r.status == 409) co_return CreateResult{CreateOutcome::NameInUse, message_of(r)};
    if (r.status != 201) co_return CreateResult{CreateOutcome::Failed, message_of(r)};
    co_return CreateResult{CreateOutcome::Created, {}};
  }

  awaitable<StartOutcome> start_created(std::string container, std::string& detail) override {
    std::string target = "/containers/" + url_escape(container) + "/start";
    const std::string what = "start " + container;
    auto r = co_await call("POST", std::move(target), what);
    if (r.status == 204) co_return StartOutcome::Started;
    if (r.status == 304) co_return StartOutcome::AlreadyRunning;  // someone started it first
    detail = message_of(r);
    co_return StartOutcome::Failed;
  }

  awaitable<bool> start(std::string container, std::string& detail) override {
    std::string target = "/containers/" + url_escape(container) + "/start";
    const std::string what = "start " + container;
    auto r = co_await call("POST", std::move(target), what);
    if (r.status == 204 || r.status == 304) co_return true;  // 304: already running
    detail = message_of(r);
    co_return false;
  }

  awaitable<RemoveResult> remove_container(std::string id_or_name) override {
    std::string target = "/containers/" + url_escape(id_or_name) + "?force=1";
    const std::string what = "rm -f " + id_or_name;
    auto r = co_await call("DELETE", std::move(target), what);
    if (r.status == 204) co_return RemoveResult{RemoveOutcome::Removed, {}};
    if (r.status == 404) co_return RemoveResult{RemoveOutcome::Absent, {}};
    co_return RemoveResult{RemoveOutcome::Refused, message_of(r)};
  }

  awaitable<void> pause(std::string container) override {
    std::string target = "/containers/" + url_escape(container) + "/pause";
    const std::string what = "pause " + container;
    auto r = co_await call("POST", std::move(target), what);
    if (r.status != 204) throw OSError(failure(what, r));
  }

  awaitable<void> unpause(std::string container) override {
    std::string target = "/containers/" + url_escape(container) + "/unpause";
    const std::string what = "unpause " + container;
    auto r = co_await call("POST", std::move(target), what);
    if (r.status != 204) throw OSError(failure(what, r));
  }

  awaitable<ExecOutcome> exec(ExecCall c) override {
    // One wall-clock bound over create, the stream and the exit-code inspect.
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (c.timeout) deadline = std::chrono::steady_clock::now() + *c.timeout;
    const auto timed_out = [&] {
      return TimeoutError(said("exec in container " + c.container + " did not finish within " +
                               std::to_string(c.timeout ? c.timeout->count() : 0) + " ms"));
    };
    ExecOutcome o;
    HttpRequest request = co_await exec_create_request(c.container, c.argv, c.working_directory, c.user, deadline,
                                                       c.env, c.stdin_bytes.has_value());
    HttpResponse created;
    try {
      created = co_await http_.request(std::move(request));
    } catch (const detail::HttpTimeout&) {
      throw timed_out();
    } catch (const detail::HttpFailure& e) {
      throw OSError(said("exec in container " + c.container + " via " + http_.endpoint().display + ": " +
                         e.what()));
    }
    if (created.status != 201) {
      // What the client would print and exit 1 with; a paused container is told apart
      // (D-22) and a missing one stays a nonzero value, as with the CLI.
      o.exit_code = 1;
      o.stderr_bytes = "Error response from daemon: " + message_of(created);
      o.paused_refusal = contains_ci(o.stderr_bytes, "is paused, unpause the container");
      co_return o;
    }
    const std::string exec_id = exec_id_of(created, c.container);
    HttpRequest start_request = co_await exec_start_request(exec_id, deadline);
    start_request.stdin_after_header = std::move(c.stdin_bytes);
    Demux demux;
    demux.out = &o;
    demux.max_stdout = c.max_stdout;
    demux.max_stderr = c.max_stderr;
    HttpResponse started;
    try {
      std::function<bool(std::string_view)> feed = [&](std::string_view b) { return demux.feed(b); };
      started = co_await http_.request(std::move(start_request), std::move(feed));
    } catch (const detail::HttpTimeout&) {
      throw timed_out();
    } catch (const detail::HttpFailure& e) {
      throw OSError(said("exec stream in container " + c.container + ": " + e.what()));
    }
    demux.finish();
    if (started.status != 200 && started.status != 101) {
      o.exit_code = 1;
      o.stderr_bytes = "Error response from daemon: " + message_of(started);
      o.paused_refusal = contains_ci(o.stderr_bytes, "is paused, unpause the container");
      co_return o;
    }
    if (o.stdout_overflowed || o.stderr_overflowed) {
      o.exit_code = -9;  // like the killed client: the caller raises on the overflow
      co_return o;
    }
    o.exit_code = co_await exec_exit_code(exec_id, c.container, deadline, timed_out);
    // The engine writes a start failure into the stream as if the command had printed it;
    // the client shows it as its own error, so it is stderr here too.
    if ((o.exit_code == 126 || o.exit_code == 127) && contains_ci(o.stdout_bytes, "oci runtime")) {
      o.stderr_bytes = std::move(o.stdout_bytes) + o.stderr_bytes;
      o.stdout_bytes.clear();
    }
    o.could_not_start = (o.exit_code == 126 || o.exit_code == 127) && contains_ci(o.stderr_bytes, "oci runtime");
    // The runtime's own refusal, when a pause came after the engine's check (issue 54): the
    // command never started.
    o.paused_refusal = o.exit_code == 126 && contains_ci(o.stderr_bytes, "cannot exec in a paused state");
    co_return o;
  }

  awaitable<ExecStreamEnd> exec_stream(ExecStreamCall c, ExecChunkSink sink) override {
    // Create, then start with the attach stream read live: each frame's payload goes to the
    // sink as its bytes arrive. The deadline is the command's and the silence bound re-arms
    // at every read, so nothing of the transport's own cuts a stream that still produces.
    const auto deadline_end = [] { return ExecStreamEnd{ExecStreamEnd::How::DeadlineExpired, 0}; };
    // STDIN-6: the stream's read end is owned from here (closed on every way out).
    auto stdin_pipe = std::make_shared<int>(std::exchange(c.stdin_fd, -1));
    const std::shared_ptr<void> close_pipe(nullptr, [stdin_pipe](void*) {
      if (*stdin_pipe >= 0) ::close(*stdin_pipe);
    });
    HttpRequest request = co_await exec_create_request(c.container, c.argv, c.working_directory, c.user, c.deadline,
                                                       c.env, c.stdin_bytes.has_value() || *stdin_pipe >= 0);
    HttpResponse created;
    bool expired = false;
    try {
      created = co_await http_.request(std::move(request));
    } catch (const detail::HttpTimeout&) {
      expired = true;
    } catch (const detail::HttpFailure& e) {
      throw OSError(said("exec in container " + c.container + " via " + http_.endpoint().display + ": " +
                         e.what()));
    }
    if (expired) co_return deadline_end();
    // A refusal is what the client would print and exit 1 with (the caller classifies it).
    const auto refused = [&](const HttpResponse& r) {
      const std::string text = "Error response from daemon: " + message_of(r) + "\n";
      sink(OutputStream::Stderr, text);
      return ExecStreamEnd{ExecStreamEnd::How::Exited, 1};
    };
    if (created.status != 201) co_return refused(created);
    const std::string exec_id = exec_id_of(created, c.container);
    HttpRequest start_request = co_await exec_start_request(exec_id, c.deadline);
    start_request.stdin_after_header = std::move(c.stdin_bytes);
    start_request.stdin_fd = std::exchange(*stdin_pipe, -1);
    start_request.live = true;
    start_request.idle_timeout = c.idle_timeout;
    start_request.stop = c.stop;
    FrameSplitter frames;
    bool stopped = false;
    std::function<bool(std::string_view)> feed = [&](std::string_view b) {
      const bool more = frames.feed(b, [&](bool to_stderr, std::string_view payload) {
        return sink(to_stderr ? OutputStream::Stderr : OutputStream::Stdout, payload);
      });
      if (!more) stopped = true;
      return more;
    };
    HttpResponse started;
    bool idle = false;
    try {
      started = co_await http_.request(std::move(start_request), std::move(feed));
    } catch (const detail::HttpTimeout&) {
      expired = true;
    } catch (const detail::HttpIdle&) {
      idle = true;
    } catch (const detail::HttpStopped&) {
      stopped = true;  // STR-10: the caller's stop; it kills the group in the container
    } catch (const detail::HttpFailure& e) {
      throw OSError(said("exec stream in container " + c.container + ": " + e.what()));
    }
    if (expired) co_return deadline_end();
    if (idle) co_return ExecStreamEnd{ExecStreamEnd::How::IdleExpired, 0};
    if (stopped) co_return ExecStreamEnd{ExecStreamEnd::How::Stopped, 0};
    if (started.status != 200 && started.status != 101) co_return refused(started);
    const auto timed_out = [&] {
      return TimeoutError(said("exec in container " + c.container + " passed its deadline"));
    };
    int code = 0;
    try {
      code = co_await exec_exit_code(exec_id, c.container, c.deadline, timed_out);
    } catch (const TimeoutError&) {
      expired = true;
    }
    if (expired) co_return deadline_end();
    co_return ExecStreamEnd{ExecStreamEnd::How::Exited, code};
  }

  awaitable<ArchiveGet> archive_get(std::string container, std::string path, std::size_t read_limit) override {
    HttpRequest request;
    request.method = "GET";
    co_await negotiate();
    request.target = prefix_ + "/containers/" + url_escape(container) + "/archive?path=" + url_escape(path);
    request.deadline = std::chrono::steady_clock::now() + config_.command_timeout();
    request.max_body = read_limit;
    // A regular file's stream is its body plus headers, padding and the end blocks: reserved
    // once from the path stat the answer carries (a 32 MiB read held 2x the file while the
    // body grew by doubling). Anything else grows as it comes.
    request.expected_body = [](const HttpResponse& head) -> std::size_t {
      if (head.status != 200) return 0;
      const PathStat stat = decode_path_stat(head.path_stat);
      if (stat.status != PathStatStatus::Ok || (stat.mode & kGoModeTypeBits) || stat.size < 0) return 0;
      return static_cast<std::size_t>(stat.size) + kTarOverhead;
    };
    const std::string what = "cp " + container + ":" + path;
    auto r = co_await send(std::move(request), what);
    if (r.status == 200) {
      if (r.body.empty()) throw OSError(said(what + " produced no tar stream"));
      co_return ArchiveGet{ArchiveStatus::Ok, std::move(r.body), r.cut};
    }
    const std::string message = message_of(r);
    if (r.status == 404) {
      if (contains_ci(message, "no such container"))
        throw OSError(said("container " + container + " is gone (cp " + path + ")"));
      co_return ArchiveGet{ArchiveStatus::Absent, {}, false};  // D-20: only the requested path
    }
    if (contains_ci(message, "not a directory"))
      throw NotADirectoryError(said("a component of guest path '" + path + "' is not a directory"));
    throw OSError(failure(what, r));
  }

  awaitable<PathStat> path_stat(std::string container, std::string path) override {
    HttpRequest request;
    request.method = "HEAD";
    co_await negotiate();
    request.target = prefix_ + "/containers/" + url_escape(container) + "/archive?path=" + url_escape(path);
    request.deadline = std::chrono::steady_clock::now() + config_.command_timeout();
    const std::string what = "stat " + container + ":" + path;
    auto r = co_await send(std::move(request), what);
    // A 404 is a missing path or a gone container (a HEAD carries no message to tell them
    // apart): the caller settles it by the container's ID. Anything else goes to the tar plane.
    if (r.status == 404) co_return PathStat{PathStatStatus::NotFound};
    if (r.status != 200) co_return PathStat{};
    co_return decode_path_stat(r.path_stat);
  }

  awaitable<void> archive_put(std::string container, std::string destination, std::string tar) override {
    TarUpload whole;
    whole.head = std::move(tar);
    co_await archive_put_upload(std::move(container), std::move(destination), std::move(whole));
  }

  awaitable<void> archive_put_upload(std::string container, std::string destination, TarUpload upload) override {
    HttpRequest request;
    request.method = "PUT";
    // What `docker cp - C:/` sends: refuse to replace a directory with a non-directory and
    // keep the tar headers' owners (no copyUIDGID).
    co_await negotiate();
    request.target = prefix_ + "/containers/" + url_escape(container) + "/archive?path=" + url_escape(destination) +
                     "&noOverwriteDirNonDir=true";
    request.body = std::move(upload.head);
    request.borrowed_body = upload.body;  // `upload`'s caller keeps it until this returns
    request.trailing_zeros = upload.tail_zeros;
    request.content_type = "application/x-tar";
    request.deadline = std::chrono::steady_clock::now() + config_.command_timeout();
    const std::string what = "cp - " + container + ":" + destination;
    auto r = co_await send(std::move(request), what);
    if (r.status == 200) co_return;
    if (contains_ci(message_of(r), "not a directory"))
      throw NotADirectoryError(said("extracting into container " + container +
                                    " met a component that is not a directory"));
    throw OSError(failure(what, r));
  }

  awaitable<std::vector<LabelledResource>> list_containers(std::vector<std::string> label_filters,
                                                           std::optional<std::string> name_regex) override {
    std::string target = "/containers/json?all=1&" + filters_query(label_filters, name_regex);
    const std::string what = "ps";
    auto r = co_await call("GET", std::move(target), what);
    if (r.status != 200) throw OSError(failure(what, r));
    std::vector<LabelledResource> out;
    std::vector<std::string> ids;
    try {
      for (const auto& c : json::parse(r.body)) ids.push_back(c.at("Id").get<std::string>());
    } catch (const json::exception& e) {
      throw OSError(said("unreadable container list: ") + e.what());
    }
    // The list reports Created as Unix seconds; inspect gives the RFC 3339 text the CLI
    // transport reports, so reap reads one format.
    for (const auto& id : ids) {
      std::string inspect_target = "/containers/" + id + "/json";
      const std::string inspect_what = "container inspect " + id;
      auto doc = co_await inspect_json(std::move(inspect_target), inspect_what);
      if (!doc) continue;  // removed since the listing
      out.push_back(resource_of(*doc, true));
    }
    co_return out;
  }

  awaitable<std::vector<LabelledResource>> list_networks(std::vector<std::string> label_filters) override {
    std::string target = "/networks?" + filters_query(label_filters, std::nullopt);
    const std::string what = "network ls";
    auto r = co_await call("GET", std::move(target), what);
    if (r.status != 200) throw OSError(failure(what, r));
    std::vector<LabelledResource> out;
    try {
      for (const auto& n : json::parse(r.body)) out.push_back(resource_of(n, false));
    } catch (const json::exception& e) {
      throw OSError(said("unreadable network list: ") + e.what());
    }
    co_return out;
  }

  awaitable<std::optional<std::string>> inspect_network(std::string id_or_name) override {
    std::string target = "/networks/" + url_escape(id_or_name);
    const std::string what = "network inspect " + id_or_name;
    auto r = co_await call("GET", std::move(target), what);
    if (r.status == 404) co_return std::nullopt;
    if (r.status != 200) throw OSError(failure(what, r));
    co_return std::move(r.body);
  }

  awaitable<RemoveResult> remove_network(std::string id_or_name) override {
    std::string target = "/networks/" + url_escape(id_or_name);
    const std::string what = "network rm " + id_or_name;
    auto r = co_await call("DELETE", std::move(target), what);
    if (r.status == 204 || r.status == 200) co_return RemoveResult{RemoveOutcome::Removed, {}};
    if (r.status == 404) co_return RemoveResult{RemoveOutcome::Absent, {}};
    co_return RemoveResult{RemoveOutcome::Refused, message_of(r)};
  }

  std::size_t idle_connections() const override { return http_.idle_connections(); }

  // The egress plane (D-31): the same operations the CLI transport runs as
  // `docker version|network create|network connect|logs|stop`.
  bool has_egress_plane() const noexcept override { return true; }

  awaitable<std::string> server_version() override {
    // Asked afresh each time, like the CLI: the D-32 gate must see the engine as it is now.
    std::string target = "/version";
    const std::string what = "version";
    auto doc = co_await inspect_json(std::move(target), what);
    const std::string version = doc && doc->is_object() ? doc->value("Version", "") : "";
    if (version.empty()) throw OSError(said("docker API version answered no Server.Version"));
    co_return version;
  }

  awaitable<CreateResult> create_network(NetworkRequest q) override {
    json options = json::object();
    for (const auto& [k, v] : q.options) options[k] = v;
    json labels = json::object();
    for (const auto& [k, v] : q.labels) labels[k] = v;
    // CheckDuplicate: before API 1.44 the engine checks names only when asked to, and would
    // otherwise make a second network of the same name instead of answering 409.
    json body = {{"Name", q.name},       {"CheckDuplicate", true}, {"Driver", "bridge"}, {"Internal", q.internal},
                 {"EnableIPv6", q.ipv6}, {"Options", options},     {"Labels", labels}};
    std::string target = "/networks/create";
    const std::string what = "network create " + q.name;
    std::string body_text = body.dump();
    auto r = co_await call("POST", std::move(target), what, std::move(body_text));
    if (r.status == 201 || r.status == 200) co_return CreateResult{CreateOutcome::Created, {}};
    if (r.status == 409) co_return CreateResult{CreateOutcome::NameInUse, message_of(r)};
    co_return CreateResult{CreateOutcome::Failed, message_of(r)};
  }

  awaitable<void> connect_network(std::string network, std::string container) override {
    json body = {{"Container", container}};
    std::string target = "/networks/" + url_escape(network) + "/connect";
    const std::string what = "network connect " + network + " " + container;
    std::string body_text = body.dump();
    auto r = co_await call("POST", std::move(target), what, std::move(body_text));
    if (r.status != 200) throw OSError(failure(what, r));
  }

  awaitable<std::string> container_logs(std::string container, std::size_t max_bytes) override {
    HttpRequest request;
    request.method = "GET";
    co_await negotiate();
    request.target = prefix_ + "/containers/" + url_escape(container) + "/logs?stdout=1&stderr=1&tail=" +
                     std::to_string(kLogTailLines);
    request.deadline = std::chrono::steady_clock::now() + config_.command_timeout();
    // Both streams' caps plus every frame header of the tail (8 bytes per line).
    request.max_body = 2 * max_bytes + 8 * (static_cast<std::size_t>(kLogTailLines) + 1);
    const std::string what = "logs " + container;
    auto r = co_await send(std::move(request), what);
    if (r.status != 200) throw OSError(failure(what, r));
    // Containers made here never have a TTY, so the log is always the multiplexed stream
    // (8-byte frame headers), the same framing as an exec's.
    ExecOutcome split;
    Demux demux;
    demux.out = &split;
    demux.max_stdout = demux.max_stderr = max_bytes;
    demux.feed(r.body);
    demux.finish();
    co_return split.stdout_bytes + split.stderr_bytes;
  }

  awaitable<void> stop_container(std::string id_or_name, std::chrono::seconds grace) override {
    std::string target = "/containers/" + url_escape(id_or_name) + "/stop?t=" + std::to_string(grace.count());
    const std::string what = "stop " + id_or_name;
    auto r = co_await call("POST", std::move(target), what);
    // 304: already stopped; 404: nothing to stop.
    if (r.status != 204 && r.status != 304 && r.status != 404) throw OSError(failure(what, r));
  }

private:
  /// Exec create (both exec forms): attached stdout and stderr, stdin only when given
  /// (closed otherwise, STDIN-1), no tty; the command's own environment in `Env` (ENV-4).
  awaitable<HttpRequest> exec_create_request(const std::string& container, const std::vector<std::string>& argv,
                                             const std::string& working_directory,
                                             const std::optional<std::string>& user,
                                             std::optional<std::chrono::steady_clock::time_point> deadline,
                                             const std::map<std::string, std::string>& env, bool attach_stdin) {
    json create = {{"AttachStdin", attach_stdin}, {"AttachStdout", true}, {"AttachStderr", true}, {"Tty", false},
                   {"Cmd", argv}, {"WorkingDir", working_directory}};
    if (user) create["User"] = *user;
    if (!env.empty()) {
      json list = json::array();
      for (const auto& [name, value] : env) {
        // JSON carries text: bytes that are not UTF-8 would be changed on the way, never passed.
        if (!is_valid_utf8(value))
          throw SandboxEnvironmentRefused(said("environment variable '" + name +
                                               "' has a value that is not UTF-8, which the Engine API cannot carry "
                                               "unchanged (ENV-4)"));
        list.push_back(name + "=" + value);
      }
      create["Env"] = std::move(list);
    }
    HttpRequest request;
    request.method = "POST";
    co_await negotiate();
    request.target = prefix_ + "/containers/" + url_escape(container) + "/exec";
    request.body = create.dump();
    request.content_type = "application/json";
    request.deadline = deadline;
    co_return request;
  }

  static std::string exec_id_of(const HttpResponse& created, const std::string& container) {
    try {
      return json::parse(created.body).at("Id").get<std::string>();
    } catch (const json::exception& e) {
      throw OSError(said("unreadable exec create answer for container " + container + ": " + e.what()));
    }
  }

  /// Exec start with the attach stream (the multiplexed framing, Tty=false).
  awaitable<HttpRequest> exec_start_request(const std::string& exec_id,
                                            std::optional<std::chrono::steady_clock::time_point> deadline) {
    HttpRequest request;
    request.method = "POST";
    co_await negotiate();
    request.target = prefix_ + "/exec/" + exec_id + "/start";
    request.body = R"({"Detach":false,"Tty":false})";
    request.content_type = "application/json";
    request.deadline = deadline;
    co_return request;
  }

  std::string failure(const std::string& what, const HttpResponse& r) const {
    return said("docker API " + what + " failed (HTTP " + std::to_string(r.status) +
                "): " + message_of(r));
  }

  static LabelledResource resource_of(const json& j, bool container) {
    LabelledResource res;
    res.id = j.value("Id", "");
    res.name = j.value("Name", "");
    if (!res.name.empty() && res.name[0] == '/') res.name.erase(0, 1);
    res.created = j.value("Created", "");
    const json* labels = nullptr;
    if (container) {
      if (auto c = j.find("Config"); c != j.end() && c->is_object())
        if (auto l = c->find("Labels"); l != c->end() && l->is_object()) labels = &*l;
    } else if (auto l = j.find("Labels"); l != j.end() && l->is_object()) {
      labels = &*l;
    }
    if (labels)
      for (auto& [k, v] : labels->items())
        if (v.is_string()) res.labels.emplace(k, v.get<std::string>());
    return res;
  }

  /// Ask `/version` once: the API version to speak and the daemon's OS.
  awaitable<void> negotiate() {
    if (negotiated_) co_return;
    auto guard = co_await negotiate_lock_.scoped();
    if (negotiated_) co_return;
    HttpRequest request;
    request.method = "GET";
    request.target = "/version";
    request.deadline = std::chrono::steady_clock::now() + config_.command_timeout();
    const std::string what = "version";
    auto r = co_await send(std::move(request), what);
    if (r.status != 200) throw OSError(failure(what, r));
    std::string api;
    try {
      auto j = json::parse(r.body);
      api = j.value("ApiVersion", "");
      os_ = j.value("Os", "");
    } catch (const json::exception& e) {
      throw OSError(said("unreadable /version answer: ") + e.what());
    }
    int major = 0, minor = 0;
    if (std::sscanf(api.c_str(), "%d.%d", &major, &minor) != 2 || major != 1 || minor < 24)
      throw OSError(said("the engine at " + http_.endpoint().display + " speaks API '" + api +
                         "'; the Engine-API transport needs 1.24 or later"));
    prefix_ = "/v1." + std::to_string(std::min(minor, kMaxMinor));
    while (!os_.empty() && std::isspace(static_cast<unsigned char>(os_.back()))) os_.pop_back();
    negotiated_ = true;
  }

  /// One exchange under command_timeout; a missed deadline or a dead daemon is the
  /// backend's own failure (OSError, C-40), never a caller's timeout.
  awaitable<HttpResponse> send(HttpRequest request, const std::string& what) {
    try {
      co_return co_await http_.request(std::move(request));
    } catch (const detail::HttpTimeout&) {
      throw OSError(said("docker API " + what + " did not answer within command_timeout_seconds=" +
                         std::to_string(config_.command_timeout_seconds)));
    } catch (const detail::HttpFailure& e) {
      throw OSError(said("docker API " + what + " via " + http_.endpoint().display + ": " + e.what()));
    }
  }

  /// One exchange of `method` on `target` (unversioned: the API version is prefixed here),
  /// with a JSON `body` when one is given (the pattern above the class).
  awaitable<HttpResponse> call(const char* method, std::string target, const std::string& what,
                               std::string body = {}) {
    co_await negotiate();
    HttpRequest request;
    request.method = method;
    request.target = prefix_ + target;
    if (!body.empty()) request.content_type = "application/json";
    request.body = std::move(body);
    request.deadline = std::chrono::steady_clock::now() + config_.command_timeout();
    co_return co_await send(std::move(request), what);
  }

  awaitable<std::optional<json>> inspect_json(std::string target, const std::string& what) {
    auto r = co_await call("GET", std::move(target), what);
    if (r.status == 404) co_return std::nullopt;
    if (r.status != 200) throw OSError(failure(what, r));
    try {
      co_return json::parse(r.body);
    } catch (const json::exception& e) {
      throw OSError(said("unreadable " + what + " answer: " + e.what()));
    }
  }

  template <class TimedOut>
  awaitable<int> exec_exit_code(const std::string& exec_id, const std::string& container,
                                std::optional<std::chrono::steady_clock::time_point> deadline,
                                const TimedOut& timed_out) {
    // The stream ends when the process's output closes; the exit code can trail it by a
    // moment, so a still-running answer is asked again.
    for (int attempt = 0;; ++attempt) {
      HttpRequest request;
      request.method = "GET";
      co_await negotiate();
      request.target = prefix_ + "/exec/" + exec_id + "/json";
      request.deadline = deadline ? *deadline : std::chrono::steady_clock::now() + config_.command_timeout();
      HttpResponse r;
      try {
        r = co_await http_.request(std::move(request));
      } catch (const detail::HttpTimeout&) {
        throw timed_out();
      } catch (const detail::HttpFailure& e) {
        throw OSError(said("exec inspect in container " + container + ": " + e.what()));
      }
      if (r.status != 200) throw OSError(failure("exec inspect in container " + container, r));
      try {
        auto j = json::parse(r.body);
        if (!j.value("Running", false) && j.contains("ExitCode") && j["ExitCode"].is_number_integer())
          co_return j["ExitCode"].get<int>();
      } catch (const json::exception& e) {
        throw OSError(said("unreadable exec inspect answer: " + std::string(e.what())));
      }
      if (attempt >= 200)
        throw OSError(said("exec in container " + container + " ended its output but reports no exit code"));
      co_await support::sleep_for(std::chrono::milliseconds(2));
    }
  }

  DockerConfig config_;
  detail::HttpClient http_;
  support::AsyncMutex negotiate_lock_;
  std::atomic<bool> negotiated_{false};
  std::string prefix_;
  std::string os_;
};

}  // namespace

std::shared_ptr<DockerTransport> make_api_transport(const DockerConfig& config) {
  std::string host = "unix:///var/run/docker.sock";
  bool tls_verify = false;
  if (config.docker_host) {
    host = *config.docker_host;
  } else if (const char* env = std::getenv("DOCKER_HOST"); env && *env) {
    host = env;
  }
  // Docker's client reads any non-empty DOCKER_TLS_VERIFY as "verify".
  if (const char* env = std::getenv("DOCKER_TLS_VERIFY"); env && *env) tls_verify = true;
  return std::make_shared<ApiTransport>(config, detail::parse_docker_host(host, tls_verify));
}

std::shared_ptr<DockerTransport> make_transport(const DockerConfig& config, DockerTransportKind kind) {
  return kind == DockerTransportKind::Api ? make_api_transport(config) : make_cli_transport(config);
}

std::shared_ptr<DockerTransport> make_transport(const DockerConfig& config) {
  return make_transport(config, choose_transport(config).kind);
}

}  // namespace maf::sandbox::docker

// Background processes over Sandbox::exec (docs/background.md, BG-1…BG-10).
//
// Why one exec stays open for the program's life (the supervisor) instead of a program
// detached from a short exec: on the process backend every exec has a PID namespace of its
// own that dies with it, so nothing outlives its exec there; an exec held open runs on any
// backend whose execs run concurrently and share the guest's files (what the BACKGROUND suite
// proves). For the same reason later calls never kill by pid — they may not see the pid —
// they leave a request file, and the supervisor, which sees the program, delivers it.
#include "maf/sandbox/background.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "seam/exec_input.hpp"
#include "support/random_name.hpp"

namespace maf::sandbox {
namespace {

using boost::asio::awaitable;

constexpr std::size_t kIdLength = 16;
/// A query script's "no such background process".
constexpr int kMissing = 3;
/// Guest-side poll interval of the supervisor and of the wait/signal scripts.
constexpr std::chrono::milliseconds kGuestPoll{50};
/// Bound on the supervisor taking a signal request (it looks every kGuestPoll).
constexpr int kSignalPolls = 200;
/// Margin of a query exec's timeout over the guest-side loop it runs.
constexpr std::chrono::milliseconds kExecMargin{30000};

// The supervisor: `sh -c SUPERVISOR maf-background DIR LINE LIFETIME_S`. It runs the program
// as the leader of a process group of its own (BG-4) and records the group; until the program
// ends it delivers the signal requests later calls leave as DIR/*.signal, and once the guest's
// clock has passed LIFETIME_S whole seconds since the start it marks `expired` and kills the
// group itself (BG-8) — so the lifetime ends the program, never the supervisor's exec, whose
// end on some backends takes the sandbox with it (Docker, D-13). When the program ends it
// kills what the program left in its group (BG-4: nothing outlives it unobserved — and a
// group of zombies under an init that does not reap would never look empty), then records
// the status, then `ended`. `setsid` never forks here: a background job of a shell
// without job control is no group leader, so the program's pid is its group's id.
// The clock is read every tenth poll (a fork each): the end comes at most ~1.5 s late, never
// early (the start's second is rounded down, so "past" means strictly more whole seconds).
// The watcher also ends once the program has ended and DIR is gone: a host that stops the
// program and at once removes DIR (the RECLAIM rung) may remove `status` before the watcher's
// next look, and the supervisor — whose exec is held open until the watcher ends — would
// otherwise linger until its exec's backstop. A DIR removed under a running program does not
// end the watcher: the lifetime still holds.
constexpr const char* kSupervisor = R"SH(d=$1
fail() { printf '%s\n' "$*" > "$d/launch-error.part" && mv "$d/launch-error.part" "$d/launch-error"; exit 125; }
command -v setsid >/dev/null 2>&1 || fail "setsid is not available in the guest"
t0=$(date +%s 2>/dev/null) && [ -n "$t0" ] || fail "date +%s is not available in the guest"
deadline=$((t0 + $3))
setsid sh -c 'printf %s "$$" > "$1/pgid.part" && mv "$1/pgid.part" "$1/pgid" && exec sh -c "$2"' maf-background "$d" "$2" > "$d/stdout" 2> "$d/stderr" < /dev/null &
child=$!
(
  while [ ! -e "$d/pgid" ]; do
    [ -e "$d/status" ] && exit 0
    [ -d "$d" ] || kill -0 "$child" 2>/dev/null || exit 0
    sleep 0.05 2>/dev/null || sleep 1
  done
  pg=$(cat "$d/pgid")
  i=0
  while :; do
    for f in "$d"/*.signal; do
      [ -e "$f" ] || continue
      kill -"$(cat "$f")" -"$pg" 2>/dev/null
      rm -f "$f"
    done
    [ -e "$d/status" ] && break
    [ -d "$d" ] || kill -0 "$child" 2>/dev/null || break
    i=$((i + 1))
    if [ "$i" -ge 10 ]; then
      i=0
      if [ "$(date +%s)" -gt "$deadline" ]; then
        [ -e "$d/expired" ] || : > "$d/expired"
        kill -9 -"$pg" 2>/dev/null
      fi
    fi
    sleep 0.05 2>/dev/null || sleep 1
  done
) < /dev/null > /dev/null 2>&1 &
watcher=$!
wait "$child"
code=$?
pg=$(cat "$d/pgid" 2>/dev/null) && kill -9 -"$pg" 2>/dev/null
printf %s "$code" > "$d/status.part" && mv "$d/status.part" "$d/status"
wait "$watcher"
: > "$d/ended"
)SH";

// `sh -c CREATE maf-background BASE ID`: 3 when the id is taken.
constexpr const char* kCreate = R"SH(mkdir -p "$1" || exit 4
mkdir "$1/$2" 2>/dev/null && exit 0
[ -e "$1/$2" ] && exit 3
exit 4
)SH";

// `sh -c STARTED maf-background DIR POLLS`: 0 once the group is recorded, 5 with the
// supervisor's sentence when it could not start the program, 1 when neither yet.
constexpr const char* kStarted = R"SH(d=$1; n=$2
while :; do
  [ -e "$d/pgid" ] && exit 0
  [ -e "$d/launch-error" ] && { cat "$d/launch-error"; exit 5; }
  [ "$n" -gt 0 ] || exit 1
  n=$((n - 1)); sleep 0.05 2>/dev/null || sleep 1
done
)SH";

// `sh -c WAIT maf-background DIR POLLS`: "running", "ended CODE" or "ended 137 expired"
// (BG-8); POLLS 0 is a poll.
constexpr const char* kWait = R"SH(d=$1; n=$2
[ -d "$d" ] || exit 3
while [ ! -e "$d/status" ]; do
  [ "$n" -gt 0 ] || { echo running; exit 0; }
  n=$((n - 1)); sleep 0.05 2>/dev/null || sleep 1
done
c=$(cat "$d/status")
# `expired` only with the SIGKILL the lifetime sends: a program that ended by itself as the
# clock passed keeps its own code.
if [ "$c" = 137 ] && [ -e "$d/expired" ]; then echo "ended $c expired"; else echo "ended $c"; fi
)SH";

// `sh -c SIGNAL maf-background DIR SIGNAL NAME POLLS`: "delivered", "ended" or "undelivered".
constexpr const char* kSignal = R"SH(d=$1; r="$d/$3.signal"; n=$4
[ -d "$d" ] || exit 3
[ -e "$d/ended" ] && { echo ended; exit 0; }
printf %s "$2" > "$d/$3.part" && mv "$d/$3.part" "$r" || exit 4
while [ -e "$r" ]; do
  if [ -e "$d/ended" ]; then rm -f "$r"; echo ended; exit 0; fi
  [ "$n" -gt 0 ] || { rm -f "$r"; echo undelivered; exit 0; }
  n=$((n - 1)); sleep 0.05 2>/dev/null || sleep 1
done
echo delivered
)SH";

// `sh -c READ maf-background DIR FILE BYTES`.
constexpr const char* kRead = R"SH([ -d "$1" ] || exit 3
head -c "$3" "$1/$2"
)SH";

std::string where(const Sandbox& s) { return "backend '" + s.backend_name() + "' (kind '" + s.kind() + "')"; }

std::string directory_of(const Sandbox& s, const std::string& id) {
  return join_guest_path(s.storage_base(), ".maf-background/" + id);
}

Command script(const char* body, std::vector<std::string> args) {
  std::vector<std::string> argv{"sh", "-c", body, "maf-background"};
  argv.insert(argv.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
  return Command(std::move(argv));
}

void require_background(const Sandbox& s, std::string_view what) {
  if (!s.capabilities().contains(Capability::Background))
    throw NotImplementedError(where(s) + " cannot " + std::string(what) + ": it does not declare background");
}

[[noreturn]] void not_found(const Sandbox& s, const std::string& id) {
  throw BackgroundProcessNotFound("no background process '" + id + "' in " + where(s) +
                                      " (never started here, or the sandbox was reset or replaced)",
                                  id);
}

/// The awaitable is made first, then awaited: GCC 12 destroys by-value arguments made inside
/// a co_await expression twice. Callers pass a named Command, by reference, for the same reason.
awaitable<ExecResult> run(Sandbox& s, const Command& command, std::chrono::milliseconds timeout) {
  auto running = s.exec(command, ".", timeout);
  co_return co_await std::move(running);
}

BackgroundStatus parse_status(const Sandbox& s, const std::string& id, const ExecResult& r) {
  if (r.exit_code == kMissing) not_found(s, id);
  const std::string out = r.stdout_text();
  if (r.exit_code == 0 && out.rfind("running", 0) == 0) return {};
  if (r.exit_code == 0 && out.rfind("ended ", 0) == 0) {
    try {
      const bool expired = out.find(" expired") != std::string::npos;
      return BackgroundStatus{false, std::stoi(out.substr(6)), expired};
    } catch (const std::exception&) {
    }
  }
  throw OSError("background process '" + id + "' in " + where(s) + ": its status could not be read (exit " +
                std::to_string(r.exit_code) + ", stdout '" + out.substr(0, 200) + "', stderr '" +
                r.stderr_text().substr(0, 200) + "')");
}

int polls_for(std::chrono::milliseconds timeout) {
  return static_cast<int>(std::max<std::int64_t>(1, timeout.count() / kGuestPoll.count()));
}

/// The supervisor's exec, run beside the start and after it.
struct Supervision {
  explicit Supervision(boost::asio::any_io_executor ex) : wake(std::move(ex)) {}
  boost::asio::steady_timer wake;
  bool done = false;
  std::exception_ptr error;
  std::optional<ExecResult> result;
};

}  // namespace

void validate_background_id(std::string_view id) {
  const bool charset = std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
  if (id.size() != kIdLength || !charset)
    throw ValueError("background process id '" + std::string(id) + "' is not " + std::to_string(kIdLength) +
                     " characters of [a-z0-9]");
}

BackgroundProcess::BackgroundProcess(std::shared_ptr<Sandbox> sandbox, std::string id)
    : sandbox_(std::move(sandbox)), id_(std::move(id)) {
  if (!sandbox_) throw ValueError("BackgroundProcess: sandbox must not be null");
  validate_background_id(id_);
  directory_ = directory_of(*sandbox_, id_);
}

awaitable<BackgroundStatus> BackgroundProcess::poll() const {
  Command r_command = script(kWait, {directory_, "0"});
  auto r = co_await run(*sandbox_, std::move(r_command), kExecMargin);
  co_return parse_status(*sandbox_, id_, r);
}

awaitable<BackgroundStatus> BackgroundProcess::wait(std::chrono::milliseconds timeout) const {
  if (timeout.count() <= 0)
    throw ValueError("BackgroundProcess::wait: timeout must be positive, got " + std::to_string(timeout.count()) +
                     " ms");
  Command command = script(kWait, {directory_, std::to_string(polls_for(timeout))});
  auto r = co_await run(*sandbox_, std::move(command), timeout + kExecMargin);
  co_return parse_status(*sandbox_, id_, r);
}

awaitable<bool> BackgroundProcess::signal(int signal) const {
  if (signal < 1 || signal > 64)
    throw ValueError("BackgroundProcess::signal: signal must be 1…64, got " + std::to_string(signal));
  const std::string request = "request-" + detail::random_hex(12);
  Command command = script(kSignal, {directory_, std::to_string(signal), request, std::to_string(kSignalPolls)});
  auto r = co_await run(*sandbox_, std::move(command), kGuestPoll * kSignalPolls + kExecMargin);
  if (r.exit_code == kMissing) not_found(*sandbox_, id_);
  const std::string out = r.stdout_text();
  if (r.exit_code == 0 && out.rfind("delivered", 0) == 0) co_return true;
  if (r.exit_code == 0 && out.rfind("ended", 0) == 0) co_return false;
  throw OSError("background process '" + id_ + "' in " + where(*sandbox_) + ": signal " + std::to_string(signal) +
                " was not delivered (" + (out.empty() ? "exit " + std::to_string(r.exit_code) : out.substr(0, 200)) +
                "; its supervisor is not running — was its exec stopped?)");
}

awaitable<BackgroundOutput> BackgroundProcess::output(std::int64_t max_bytes) const {
  if (max_bytes < 0)
    throw ValueError("BackgroundProcess::output: max_bytes must not be negative, got " + std::to_string(max_bytes));
  BackgroundOutput out;
  // One byte past the cap tells "over" from "exactly at" without a second look (BG-3).
  const std::string past_cap = std::to_string(max_bytes + 1);
  for (const std::string& stream : {std::string("stdout"), std::string("stderr")}) {
    Command r_command = script(kRead, {directory_, stream, past_cap});
    auto r = co_await run(*sandbox_, std::move(r_command), kExecMargin);
    if (r.exit_code == kMissing) not_found(*sandbox_, id_);
    if (r.exit_code != 0)
      throw OSError("background process '" + id_ + "' in " + where(*sandbox_) + ": its " + stream +
                    " could not be read (exit " + std::to_string(r.exit_code) + ": " +
                    r.stderr_text().substr(0, 200) + ")");
    std::string bytes = std::move(r.stdout_bytes);
    const bool over = static_cast<std::int64_t>(bytes.size()) > max_bytes;
    if (over) bytes.resize(static_cast<std::size_t>(max_bytes));
    if (stream == "stdout") {
      out.stdout_bytes = std::move(bytes);
      out.stdout_truncated = over;
    } else {
      out.stderr_bytes = std::move(bytes);
      out.stderr_truncated = over;
    }
  }
  co_return out;
}

awaitable<BackgroundStatus> BackgroundProcess::stop(std::chrono::milliseconds timeout) const {
  if (timeout.count() <= 0)
    throw ValueError("BackgroundProcess::stop: timeout must be positive, got " + std::to_string(timeout.count()) +
                     " ms");
  co_await signal(9);
  co_return co_await wait(timeout);
}

namespace {
awaitable<BackgroundProcess> start_in(std::shared_ptr<Sandbox> sandbox, Command command, BackgroundOptions options);
}  // namespace

awaitable<BackgroundProcess> start_background(std::shared_ptr<Sandbox> sandbox, Command command) {
  // Not a coroutine: the default options are made here, outside any co_await expression, and
  // moved into the frame of the one that runs (GCC 12, docs/tools.md "GCC 12 and temporaries").
  return start_in(std::move(sandbox), std::move(command), BackgroundOptions{});
}

awaitable<BackgroundProcess> start_background(std::shared_ptr<Sandbox> sandbox, Command command,
                                              const BackgroundOptions& options) {
  return start_in(std::move(sandbox), std::move(command), options);  // copied into the frame
}

namespace {
awaitable<BackgroundProcess> start_in(std::shared_ptr<Sandbox> sandbox, Command command, BackgroundOptions options) {
  if (!sandbox) throw ValueError("start_background: sandbox must not be null");
  const std::string line = command.shell_line();
  if (line.find_first_not_of(" \t\n") == std::string::npos)
    throw ValueError("start_background: the command is empty ('" + line + "')");
  if (options.lifetime.count() <= 0)
    throw ValueError("start_background: lifetime must be positive, got " + std::to_string(options.lifetime.count()) +
                     " ms");
  if (options.start_timeout.count() <= 0)
    throw ValueError("start_background: start_timeout must be positive, got " +
                     std::to_string(options.start_timeout.count()) + " ms");
  if (options.id) validate_background_id(*options.id);
  if (options.input.stdin_bytes)
    throw ValueError("start_background: a background program's stdin stays closed; stdin_bytes is not taken (ENV-6)");
  require_background(*sandbox, "start a background process");
  if (!options.input.environment.empty() && !sandbox->capabilities().contains(Capability::ExecEnv))
    throw NotImplementedError("backend '" + sandbox->backend_name() + "' does not declare capability 'exec_env', so " +
                              "start_background cannot give the program an environment (kind '" + sandbox->kind() + "')");
  detail::check_exec_input(options.input, "start_background", where(*sandbox));
  const std::string id = options.id ? *options.id : detail::random_hex(kIdLength);
  const std::string wd = resolve_working_directory(options.working_directory, sandbox->storage_base());
  const std::string dir = directory_of(*sandbox, id);

  Command create = script(kCreate, {join_guest_path(sandbox->storage_base(), ".maf-background"), id});
  const auto created = co_await run(*sandbox, std::move(create), kExecMargin);
  if (created.exit_code == kMissing)
    throw ValueError("background process id '" + id + "' is already used in " + where(*sandbox));
  if (created.exit_code != 0)
    throw OSError("start_background: cannot create '" + dir + "' in " + where(*sandbox) + ": " +
                  created.stderr_text().substr(0, 200));

  auto executor = co_await boost::asio::this_coro::executor;
  auto st = std::make_shared<Supervision>(executor);
  // The guest ends the program at its lifetime (BG-8, whole seconds rounded up); the exec's
  // own timeout is only the backstop for a supervisor that could not, past the guest's
  // lateness (at most ~1.5 s) and a margin.
  const auto lifetime_s = (options.lifetime.count() + 999) / 1000;
  const std::chrono::milliseconds backstop = std::chrono::seconds(lifetime_s + 2) + kExecMargin;
  std::vector<std::string> argv{"sh", "-c", kSupervisor, "maf-background", dir, line, std::to_string(lifetime_s)};
  // The supervisor's coroutine holds the sandbox: the exec must not outlive its object.
  boost::asio::co_spawn(
      executor,
      [sandbox, argv = std::move(argv), wd, backstop, input = options.input]() -> awaitable<ExecResult> {
        // ENV-6: the supervisor's exec carries the program's environment, which its shell
        // and then the program inherit; the values reach no command line here either.
        auto running = sandbox->exec(Command(argv), input, wd, backstop);
        co_return co_await std::move(running);
      },
      [st, id](std::exception_ptr e, ExecResult r) {
        st->done = true;
        if (e) {
          st->error = e;
          try {
            std::rethrow_exception(e);
          } catch (const std::exception& x) {
            logger()->debug("background process '{}': its supervisor's exec ended with {}", id, x.what());
          } catch (...) {
          }
        } else {
          st->result = std::move(r);
        }
        st->wake.cancel();
      });

  const auto give_up = std::chrono::steady_clock::now() + options.start_timeout;
  const int polls = polls_for(std::min<std::chrono::milliseconds>(options.start_timeout, std::chrono::seconds(1)));
  while (true) {
    // A named local, not a temporary in the co_await (GCC 12).
    Command probe_command = script(kStarted, {dir, std::to_string(polls)});
    auto probe = co_await run(*sandbox, std::move(probe_command), kExecMargin);
    if (probe.exit_code == 0) break;
    if (probe.exit_code == 5)
      throw OSError("start_background in " + where(*sandbox) + " could not start the program: " +
                    probe.stdout_text().substr(0, 400));
    if (st->done) {
      if (st->error) std::rethrow_exception(st->error);
      throw OSError("start_background in " + where(*sandbox) + ": the supervisor ended (exit " +
                    std::to_string(st->result->exit_code) + ", stderr '" + st->result->stderr_text().substr(0, 400) +
                    "') before it recorded the program");
    }
    if (std::chrono::steady_clock::now() >= give_up)
      throw TimeoutError("start_background in " + where(*sandbox) + ": the program was not recorded as started within " +
                         std::to_string(options.start_timeout.count()) + " ms");
  }
  co_return BackgroundProcess(std::move(sandbox), id);
}

}  // namespace

awaitable<BackgroundProcess> find_background(std::shared_ptr<Sandbox> sandbox, std::string id) {
  if (!sandbox) throw ValueError("find_background: sandbox must not be null");
  validate_background_id(id);
  require_background(*sandbox, "find a background process");
  BackgroundProcess p(sandbox, id);
  Command r_command = script("[ -e \"$1/pgid\" ] || [ -e \"$1/launch-error\" ] || exit 3", {p.directory()});
  auto r = co_await run(*sandbox, std::move(r_command), kExecMargin);
  if (r.exit_code == kMissing) not_found(*sandbox, id);
  if (r.exit_code != 0)
    throw OSError("find_background in " + where(*sandbox) + ": looking up '" + id + "' failed (exit " +
                  std::to_string(r.exit_code) + ": " + r.stderr_text().substr(0, 200) + ")");
  co_return p;
}

}  // namespace maf::sandbox

// The exec transport for host tools (docs/host-tools.md "The exec transport", HT-T1…T6).
//
// Why the program runs *attached* (inside the one exec the supervisor awaits) rather than
// detached as in the Python reference: our Sandbox serves file operations while an exec of
// the same sandbox runs, so the supervisor can answer requests without the program outliving
// its exec — and then the program's deadline is that exec's timeout, which every backend
// already enforces host-side (C-40) by stopping everything the exec started. Detaching would
// need a backend whose separate execs share a process namespace (the process backend's do
// not) and a second, guest-visible way to stop the program.
#include "maf/sandbox/host_tools_over_exec.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>

#include "host_tools/host_tool_request.hpp"
#include "spec/command_check.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/host_tools.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/support/shell.hpp"
#include "support/random_name.hpp"

namespace maf::sandbox {
namespace {

using boost::asio::awaitable;
using support::shell_quote;

/// The launcher exits with this (and a "maf-host-tools:" line on its stderr) when it could
/// not start the program; any other status is the program's own.
constexpr int kLauncherFailed = 125;
/// "ok\n" or "refused\n" precede the payload in a response file; the longer one is counted.
constexpr std::int64_t kFramingBytes = 8;
/// Bound on one look for the program's start record.
constexpr std::chrono::milliseconds kStartProbeTimeout{30000};

// The POSIX sh client (busybox-compatible). A number is claimed with noclobber's exclusive
// create, so concurrent callers — threads, forks, other processes — never share one; the
// request is staged and renamed so the host never reads half of it; the host's ".done"
// marker follows its response, so the client never reads half of that.
constexpr const char* kShellClient = R"SH(#!/bin/sh
# maf-host-tool NAME [ARGUMENTS]: call the host tool NAME with ARGUMENTS, a JSON object
# (default {}). Prints the value's JSON on stdout and exits 0, or the host's refusal on
# stderr and exits 1; 2 is this client's own failure. Written by maf-sandbox for this run:
# editing it changes nothing the host enforces.
calls=${MAF_HOST_TOOLS_CALLS:?maf-host-tool: not inside a host-tools run}
name=$1
arguments=$2
[ -n "$arguments" ] || arguments='{}'
case $name in
  ''|*[!A-Za-z0-9_.-]*) echo "maf-host-tool: a tool name is letters, digits, '_', '.' or '-'" >&2; exit 2 ;;
esac
# The scan starts past the numbers already claimed (counted by a glob, not a fork per try):
# a run's calls claim 1, 2, 3, ... in turn, and a scan from 1 would cost each call as many
# tries as calls before it. Padding and the exclusive create are builtins for the same reason.
set -- "$calls"/[0-9][0-9][0-9][0-9].claim
n=1
[ -e "$1" ] && n=$(($# + 1))
set -C
while :; do
  if [ "$n" -lt 10 ]; then id=000$n; elif [ "$n" -lt 100 ]; then id=00$n; elif [ "$n" -lt 1000 ]; then id=0$n; else id=$n; fi
  if { true > "$calls/$id.claim"; } 2>/dev/null; then break; fi
  n=$((n + 1))
  [ "$n" -le 99999 ] || { echo "maf-host-tool: no request number left" >&2; exit 2; }
done
set +C
if ! { printf '{"id":"%s","name":"%s","arguments":%s}' "$id" "$name" "$arguments" > "$calls/$id.part" &&
       mv "$calls/$id.part" "$calls/$id.request.json"; }; then
  printf '{"id":"%s","abandoned":true}' "$id" > "$calls/$id.request.json" 2>/dev/null
  echo "maf-host-tool: could not publish request $id" >&2
  exit 2
fi
polls=$(( ${MAF_HOST_TOOLS_TIMEOUT:-300} * 50 ))
while [ ! -e "$calls/$id.done" ]; do
  polls=$((polls - 1))
  [ "$polls" -gt 0 ] || { echo "maf-host-tool: the host did not answer request $id" >&2; exit 2; }
  sleep 0.02 2>/dev/null || sleep 1
done
IFS= read -r status < "$calls/$id.response" || status=
if [ "$status" = ok ]; then
  tail -n +2 "$calls/$id.response"; echo
  exit 0
fi
tail -n +2 "$calls/$id.response" >&2; echo >&2
exit 1
)SH";

// The Python client: the same protocol, for guests that have Python.
constexpr const char* kPythonClient = R"PY("""maf_host_tools: call the host's tools from a host-tools run.

    import maf_host_tools
    value = maf_host_tools.call("lookup", id=7)

Written by maf-sandbox for this run; editing it changes nothing the host enforces: every
gate is host-side.
"""
import json
import os
import time


class HostToolError(RuntimeError):
    """The host refused the call, or never answered; the message is its sentence."""


def _calls():
    calls = os.environ.get("MAF_HOST_TOOLS_CALLS")
    if not calls:
        raise HostToolError("not inside a host-tools run (MAF_HOST_TOOLS_CALLS is unset)")
    return calls


def _claim(calls):
    number = 1
    while True:
        ident = "%04d" % number
        try:
            os.close(os.open(os.path.join(calls, ident + ".claim"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return ident
        except FileExistsError:
            number += 1


def call(name, **arguments):
    """Call the host tool `name` with keyword `arguments`; return its value."""
    calls = _calls()
    ident = _claim(calls)
    request = os.path.join(calls, ident + ".request.json")
    staged = os.path.join(calls, ident + ".part")
    try:
        with open(staged, "w", encoding="utf-8") as handle:
            json.dump({"id": ident, "name": name, "arguments": arguments}, handle)
        os.replace(staged, request)
    except BaseException:
        try:
            with open(request, "w", encoding="utf-8") as handle:
                json.dump({"id": ident, "abandoned": True}, handle)
        except OSError:
            pass
        raise
    done = os.path.join(calls, ident + ".done")
    deadline = time.monotonic() + float(os.environ.get("MAF_HOST_TOOLS_TIMEOUT", "300"))
    while not os.path.exists(done):
        if time.monotonic() > deadline:
            raise HostToolError("the host did not answer request %s" % ident)
        time.sleep(0.02)
    with open(os.path.join(calls, ident + ".response"), encoding="utf-8") as handle:
        status, _, payload = handle.read().partition("\n")
    if status == "ok":
        return json.loads(payload)
    raise HostToolError(payload)
)PY";

struct Layout {
  std::string wd;        ///< the program's working directory, absolute
  std::string run;       ///< the run directory, absolute
  std::string run_rel;   ///< the same, relative to wd (what file operations take)
  std::string calls_rel;
};

std::string launcher(const Layout& l, const Command& command) {
  const std::string run = shell_quote(l.run);
  // The program's output goes to a file so that it survives a timeout; the launcher's own
  // stdout/stderr stay the exec's, which nothing the program prints can reach.
  return "#!/bin/sh\n"
         "run=" + run + "\n"
         "fail() { echo \"maf-host-tools: $*\" >&2; exit " + std::to_string(kLauncherFailed) + "; }\n"
         "mkdir -p \"$run/calls\" \"$run/bin\" || fail \"cannot create $run/calls\"\n"
         "[ -w \"$run/calls\" ] || fail \"$run/calls is not writable by the program\"\n"
         // A copy the guest owns, so it can be made executable whoever wrote the original.
         "cat \"$run/client.sh\" > \"$run/bin/maf-host-tool\" && chmod 0755 \"$run/bin/maf-host-tool\" || "
         "fail \"cannot install maf-host-tool\"\n"
         "PATH=\"$run/bin:$PATH\"\n"
         "PYTHONPATH=\"$run/python${PYTHONPATH:+:$PYTHONPATH}\"\n"
         "MAF_HOST_TOOLS_CALLS=\"$run/calls\"\n"
         "export PATH PYTHONPATH MAF_HOST_TOOLS_CALLS\n"
         "( " + command.shell_line() + "\n) > \"$run/output\" 2>&1 < /dev/null &\n"
         "pid=$!\n"
         "printf %s \"$pid\" > \"$run/pid.part\" && mv \"$run/pid.part\" \"$run/pid\"\n"
         "wait \"$pid\"\n"
         "exit $?\n";
}

/// The exec that holds the program, run beside the supervisor.
struct ExecState {
  explicit ExecState(boost::asio::any_io_executor ex) : wake(std::move(ex)) {}
  boost::asio::steady_timer wake;
  bool done = false;
  std::optional<ExecResult> result;
  std::exception_ptr error;
};

awaitable<void> wait_a_little(ExecState& st, std::chrono::milliseconds interval) {
  if (st.done) co_return;
  st.wake.expires_after(interval);
  boost::system::error_code ec;
  co_await st.wake.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
}

/// Serves request `id` if it is there; false when there is nothing to serve yet.
awaitable<bool> serve(Sandbox& sandbox, HostToolRun& run, const Layout& l, const std::string& id) {
  const std::string base = l.calls_rel + "/" + id;
  const auto entry = co_await sandbox.stat_file(base + ".request.json", l.wd);
  if (!entry) co_return false;
  std::string status = "refused";
  std::string payload;
  std::optional<std::string> bytes;
  const std::int64_t request_cap = run.registry().options().response_limits.max_bytes_per_file();
  if (entry->kind != EntryKind::File) {
    payload = "Error: this host-tool request is not a regular file";
  } else {
    try {
      bytes = co_await sandbox.read_file(base + ".request.json", l.wd, request_cap);
    } catch (const SandboxTransferCapExceeded&) {
      payload = "Error: this host-tool request is over the request cap of " + std::to_string(request_cap) + " bytes";
    }
  }
  if (bytes) {
    auto parsed = detail::parse_host_tool_request(*bytes, id);
    if (std::holds_alternative<detail::AbandonedRequest>(parsed)) co_return true;  // stepped over, unanswered
    if (const auto* bad = std::get_if<detail::MalformedRequest>(&parsed)) {
      payload = bad->sentence;
    } else {
      const auto& request = std::get<detail::HostToolRequest>(parsed);
      auto answer = run.dispatch(request.name, request.arguments, kFramingBytes);
      if (answer.ok()) {
        status = "ok";
        payload = std::move(*answer.value_json);
      } else {
        payload = std::move(*answer.refusal);
      }
    }
  }
  co_await sandbox.write_file(base + ".response", status + "\n" + payload, l.wd);
  co_await sandbox.write_file(base + ".done", "", l.wd);
  co_return true;
}

}  // namespace

awaitable<HostToolProgramResult> run_with_host_tools(Sandbox& sandbox, HostToolRun& run,
                                                     const HostToolProgram& caller_program) {
  const HostToolProgram program = caller_program;  // the caller's object is alive until this first step
  detail::refuse_malformed_command("run_with_host_tools", program.command);
  if (program.deadline.count() <= 0)
    throw ValueError("run_with_host_tools: deadline must be positive, got " + std::to_string(program.deadline.count()) +
                     " ms");
  if (program.poll_interval.count() <= 0)
    throw ValueError("run_with_host_tools: poll_interval must be positive, got " +
                     std::to_string(program.poll_interval.count()) + " ms");
  if (program.max_output_bytes < 0)
    throw ValueError("run_with_host_tools: max_output_bytes must not be negative, got " +
                     std::to_string(program.max_output_bytes));
  const CapabilitySet needed{Capability::Exec, Capability::FilesIn, Capability::FilesOut, Capability::HostTools};
  if (const auto missing = needed.difference(sandbox.capabilities()); !missing.empty())
    throw NotImplementedError("backend '" + sandbox.backend_name() + "' (kind '" + sandbox.kind() +
                              "') cannot serve host tools over exec: it does not declare " + missing.to_string());

  Layout l;
  l.wd = resolve_working_directory(program.working_directory, sandbox.storage_base());
  l.run_rel = ".maf-host-tools-" + detail::random_hex(12);
  l.run = join_guest_path(l.wd, l.run_rel);
  l.calls_rel = l.run_rel + "/calls";

  auto executor = co_await boost::asio::this_coro::executor;
  auto st = std::make_shared<ExecState>(executor);
  HostToolProgramResult result;
  std::exception_ptr supervisor_error;
  bool pid_seen = false;
  bool launched = false;
  // The output is read once shortly before the deadline (a tenth of it, at most a second).
  const auto snapshot_at = std::chrono::steady_clock::now() + program.deadline -
                           std::min<std::chrono::milliseconds>(program.deadline / 10, std::chrono::seconds(1));
  std::optional<std::string> snapshot;
  try {
    co_await sandbox.write_file(l.run_rel + "/client.sh", kShellClient, l.wd);
    co_await sandbox.write_file(l.run_rel + "/python/maf_host_tools.py", kPythonClient, l.wd);
    co_await sandbox.write_file(l.run_rel + "/launch.sh", launcher(l, program.command), l.wd);
    boost::asio::co_spawn(executor, sandbox.exec(Command(std::vector<std::string>{"sh", l.run + "/launch.sh"}), l.wd, program.deadline),
                          [st](std::exception_ptr e, ExecResult r) {
                            st->done = true;
                            if (e) st->error = e;
                            else st->result = std::move(r);
                            st->wake.cancel();
                          });
    launched = true;
    // Until the program has started, look for its start record with exec, not with a file
    // operation: a backend may freeze the guest around file operations (Docker's tar
    // plane), and an exec the engine is asked to start while the guest is frozen is
    // refused — the launcher's own. Once the launcher runs, a freeze only pauses it.
    while (!st->done && !pid_seen) {
      // A named local, not a temporary in the co_await: GCC 12 miscompiles the latter.
      std::vector<std::string> probe_argv{"test", "-e", l.run + "/pid"};
      const auto probe = co_await sandbox.exec(Command(std::move(probe_argv)), l.wd, kStartProbeTimeout);
      pid_seen = probe.exit_code == 0;
      if (!pid_seen) co_await wait_a_little(*st, program.poll_interval);
    }
    int next = 1;
    while (!st->done) {
      if (!snapshot && std::chrono::steady_clock::now() >= snapshot_at) {
        // HT-T4: what the program printed so far, taken while it still runs — a backend may
        // take the guest's files with the exec it stops (Docker removes the container).
        // A snapshot that cannot be taken (an output over its cap, say) is no reason to stop
        // answering the program: the read after it ends reports that properly.
        std::optional<std::string> taken;
        try {
          taken = co_await sandbox.read_file(l.run_rel + "/output", l.wd, program.max_output_bytes);
        } catch (const Error&) {
          taken = std::string();
        }
        snapshot = std::move(taken);
        continue;
      }
      if (co_await serve(sandbox, run, l, detail::request_id(next))) {
        ++next;
        ++result.requests;
        continue;  // a program that calls in a burst is answered without a poll between
      }
      ++result.empty_polls;
      co_await wait_a_little(*st, program.poll_interval);
    }
  } catch (...) {
    supervisor_error = std::current_exception();
  }
  // The exec is bounded by its own timeout, so this wait is too; the program must be over
  // before the run directory goes.
  while (launched && !st->done) co_await wait_a_little(*st, program.poll_interval);

  std::optional<std::exception_ptr> outcome_error;
  std::optional<SandboxProgramTimeout> timeout;
  std::optional<std::string> expired;  // the exec's TimeoutError: the program overran its deadline
  // HT-T4: how the backend stopped the exec, as its own report says (Sandbox::exec carries
  // it on SandboxProgramTimeout); a plain TimeoutError says nothing about a stop.
  auto backend_signal = SandboxProgramTimeout::Signal::Unknown;
  auto backend_reach = SandboxProgramTimeout::Reach::Nothing;
  if (st->error) {
    try {
      std::rethrow_exception(st->error);
    } catch (const SandboxProgramTimeout& e) {
      expired = e.what();
      backend_signal = e.signal();
      backend_reach = e.reach();
    } catch (const TimeoutError& e) {
      expired = e.what();
    } catch (...) {
      outcome_error = std::current_exception();
    }
  }
  if (expired) {
    // HT-T4: did a program start? Only a missing start record proves nothing did. Where one
    // did, the signal and its reach are the backend's own report of its stop — never guessed
    // here from the start record (issue 50).
    bool started = pid_seen;
    bool unrecorded = false;
    if (!pid_seen) {
      try {
        started = static_cast<bool>(co_await sandbox.stat_file(l.run_rel + "/pid", l.wd));
      } catch (const std::exception&) {
        unrecorded = true;
      }
    }
    auto signal = backend_signal;
    auto reach = backend_reach;
    if (unrecorded) {
      signal = SandboxProgramTimeout::Signal::Unrecorded;
      reach = SandboxProgramTimeout::Reach::Nothing;
    } else if (!started) {
      signal = SandboxProgramTimeout::Signal::Absent;
      reach = SandboxProgramTimeout::Reach::Nothing;
    }
    std::string output;
    std::string note;
    try {
      output = co_await sandbox.read_file(l.run_rel + "/output", l.wd, program.max_output_bytes);
    } catch (const std::exception& read_error) {
      if (snapshot) {
        output = std::move(*snapshot);
        note = "; its output is as read shortly before the deadline (afterwards: " + std::string(read_error.what()) + ")";
      } else {
        note = "; its output could not be read back (" + std::string(read_error.what()) + ")";
      }
    }
    timeout.emplace("host-tools program in backend '" + sandbox.backend_name() + "' (kind '" + sandbox.kind() +
                        "') overran its deadline of " + std::to_string(program.deadline.count()) + " ms after " +
                        std::to_string(result.requests) + " request(s); " +
                        (signal == SandboxProgramTimeout::Signal::Absent
                             ? std::string("no program had been recorded as started")
                             : "the backend reports its stop of the exec holding it as signal " +
                                   std::string(to_string(signal)) + ", reach " + to_string(reach)) +
                        note + " (" + *expired + ")",
                    std::move(output), signal, reach);
  }
  if (!timeout && !outcome_error && supervisor_error) outcome_error = supervisor_error;
  if (!timeout && !outcome_error) {
    const auto& r = *st->result;
    if (r.exit_code == kLauncherFailed && r.stderr_bytes.rfind("maf-host-tools:", 0) == 0) {
      try {
        throw OSError("host-tools launcher in backend '" + sandbox.backend_name() + "' (kind '" + sandbox.kind() +
                      "') could not start the program: " + r.stderr_bytes.substr(0, 400));
      } catch (...) {
        outcome_error = std::current_exception();
      }
    } else {
      result.exit_code = r.exit_code;
      std::optional<std::string> missing;
      try {
        result.output = co_await sandbox.read_file(l.run_rel + "/output", l.wd, program.max_output_bytes);
      } catch (const FileNotFoundError& e) {
        missing = e.what();
      } catch (...) {
        outcome_error = std::current_exception();
      }
      if (missing) {
        // The launcher records output before it starts the program, so a missing file is a
        // launcher that never ran or a program that removed its own run directory.
        try {
          throw FileNotFoundError("host-tools program in backend '" + sandbox.backend_name() + "' (kind '" +
                                  sandbox.kind() + "') left no output file (exit " + std::to_string(r.exit_code) +
                                  (r.stderr_bytes.empty() ? std::string() : ", stderr: " + r.stderr_bytes.substr(0, 400)) +
                                  "): " + *missing);
        } catch (...) {
          outcome_error = std::current_exception();
        }
      }
    }
  }

  // HT-T5: the run directory goes on every path, removed as the guest.
  std::optional<std::string> reclaim_failure;
  try {
    co_await sandbox.reclaim(l.run, l.wd, program.reclaim_timeout);
  } catch (const std::exception& e) {
    reclaim_failure = e.what();
    logger()->warn("host-tools run directory '{}' was not removed: {}", l.run, e.what());
  }
  if (timeout) throw *timeout;
  if (outcome_error) std::rethrow_exception(*outcome_error);
  result.reclaim_failure = std::move(reclaim_failure);
  co_return result;
}

}  // namespace maf::sandbox

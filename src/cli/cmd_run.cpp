// `maf-sandbox run`: acquire, write inputs, exec, collect outputs, dispose.
#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "commands.hpp"
#include "events_file.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/otel.hpp"
#include "maf/sandbox/outputs.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sink.hpp"
#include "maf/sandbox/spec_json.hpp"
#include "render.hpp"
#include "report.hpp"

namespace maf::sandbox::cli {
namespace {

struct Input {
  std::string local;
  std::string guest;
  std::string content;
};

/// `--put LOCAL=GUEST`, read now so a missing file fails before any sandbox exists.
Input read_put(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError("--put wants LOCAL=GUEST, got '" + text + "'");
  Input in{text.substr(0, eq), text.substr(eq + 1), {}};
  std::ifstream file(in.local, std::ios::binary);
  if (!file) throw ValueError("--put: local file '" + in.local + "' cannot be read");
  std::stringstream bytes;
  bytes << file.rdbuf();
  in.content = bytes.str();
  return in;
}

/// `--env NAME=VALUE` or `--env NAME` (repeatable) and `--stdin` as the command's ExecInput. Our stdin is read
/// whole, at most one read past the cap, so an over-cap stdin is refused (STDIN-2) without
/// being held in full.
ExecInput read_exec_input(const Args& args) {
  ExecInput input;
  for (const auto& text : args.all("env")) {
    // `--env NAME` takes the value from our own environment, as `docker run -e NAME` does: a
    // secret then never sits on this program's command line either (ENV-4).
    const auto eq = text.find('=');
    const std::string name = text.substr(0, eq);
    std::string value;
    if (eq != std::string::npos) {
      value = text.substr(eq + 1);
    } else if (const char* own = std::getenv(name.c_str())) {
      value = own;
    } else {
      throw UsageError("--env " + name + ": no '=' and no such variable in this environment");
    }
    if (!input.environment.emplace(name, std::move(value)).second) throw UsageError("--env names '" + name + "' twice");
  }
  if (args.flag("stdin")) {
    std::string bytes;
    char buffer[64 * 1024];
    while (bytes.size() <= kMaxExecStdinBytes) {
      const std::size_t n = std::fread(buffer, 1, sizeof buffer, stdin);
      if (n == 0) break;
      bytes.append(buffer, n);
    }
    if (bytes.size() > kMaxExecStdinBytes)
      throw UsageError("--stdin: more than max_stdin_bytes=" + std::to_string(kMaxExecStdinBytes) +
                       " bytes on stdin; nothing was run (STDIN-2)");
    input.stdin_bytes = std::move(bytes);
  }
  return input;
}

/// The spec of `run`: the --spec file; or, without one, the minimal `cli` spec (exec and
/// files in and out, the backend's default image); --image sets or overrides the image for
/// this run, as `docker run` users expect. --output paths are appended as declared outputs;
/// any declared output makes FILES_OUT a requirement, so the router checks it before acquire.
SandboxSpec build_spec(const Args& args) {
  SandboxSpec::Fields f = args.get("spec") ? load_spec(*args.get("spec")).fields() : minimal_spec().fields();
  if (const auto image = args.get("image"); image && image != f.image) {
    f.image = *image;
    f.image_id.reset();  // a digest pinned by the spec file names the image being replaced
  }
  for (const auto& path : args.all("output")) f.declared_outputs.push_back(DeclaredOutput{.path = path});
  // ENV-1, STDIN-1: the router refuses, before anything is made, a backend that cannot.
  if (!args.all("env").empty()) f.requires_capabilities.insert(Capability::ExecEnv);
  if (args.flag("stdin")) f.requires_capabilities.insert(Capability::ExecStdin);
  if (!f.declared_outputs.empty()) f.requires_capabilities.insert(Capability::FilesOut);
  return SandboxSpec(std::move(f));
}

/// One chunk of a streamed program, untranslated, on the matching stream of ours, at once.
void print_chunk(OutputStream stream, std::string_view bytes) {
  FILE* to = stream == OutputStream::Stdout ? stdout : stderr;
  std::fwrite(bytes.data(), 1, bytes.size(), to);
  std::fflush(to);
}

/// The program's own bytes, untranslated, on our own streams (human form).
void print_program_output(const ExecResult& result) {
  std::fwrite(result.stdout_bytes.data(), 1, result.stdout_bytes.size(), stdout);
  std::fflush(stdout);
  std::fwrite(result.stderr_bytes.data(), 1, result.stderr_bytes.size(), stderr);
}

/// Collection failed after the program ran: the program's output and exit status are printed
/// first (human form), or carried beside the error (JSON: `{"error": {…}, "run": {"exit_code",
/// "stdout", "stderr"}}`), so a collection error never hides what the program said.
int report_after_run(Session& session, const ExecResult& result, bool streamed, const Failure& failure) {
  if (session.reporter.json()) {
    session.reporter.result({{"error", {{"type", failure.type}, {"message", failure.message}}},
                             {"run",
                              {{"exit_code", result.exit_code},
                               {"stdout", result.stdout_text()},
                               {"stderr", result.stderr_text()}}}},
                            {});
  } else {
    if (!streamed) print_program_output(result);
    fmt::print(stderr, "maf-sandbox: exit code {}\n", result.exit_code);
    session.reporter.error(failure);
  }
  return failure.exit_code;
}

/// C-81 before anything runs: a declared output's path and landing name must be artifact
/// names, so `--output /tmp/o.txt` is refused before a sandbox exists, not after the program.
void validate_output_names(const SandboxSpec& spec) {
  for (const auto& o : spec.declared_outputs()) {
    validate_artifact_name(o.path);
    if (o.name) validate_artifact_name(*o.name);
  }
}

/// The CleanupEvent of run's own disposal (it asks the backend directly, for the detail).
CleanupEvent disposal_event(const SandboxKey& key, const std::string& kind, const std::string& backend,
                            const std::optional<DisposalFailure>& failure, std::chrono::nanoseconds duration) {
  EventContext context;
  context.key = key;
  context.call_id = key.call_id;
  context.kind = kind;
  context.backend = backend;
  return make_cleanup_event(std::move(context), Cleanup::Dispose,
                            failure ? CleanupOutcome::Unconfirmed : CleanupOutcome::Done,
                            failure ? failure->to_string() : std::string(), duration);
}

}  // namespace

int cmd_run(Session& session) {
  const Args& args = session.args;
  if (args.argv.empty()) throw UsageError("`run` needs a command after --");
  const SandboxSpec spec = build_spec(args);
  validate_output_names(spec);
  const Isolation floor = min_isolation(args);
  const RouterOptions policy = router_options(args, floor);  // bad input refused before any backend
  const SandboxKey key = key_from(args);
  const auto timeout = args.get("timeout") ? std::chrono::milliseconds(parse_duration(*args.get("timeout"), "timeout"))
                                           : kDefaultExecTimeout;
  if (timeout.count() == 0) throw ValueError("--timeout must be positive");
  // Silence is bounded only when asked: a quiet build is not a hung one (docs/streaming.md).
  const auto read_timeout = args.get("read-timeout")
                                ? std::chrono::milliseconds(parse_duration(*args.get("read-timeout"), "read-timeout"))
                                : timeout;
  if (read_timeout.count() == 0) throw ValueError("--read-timeout must be positive");
  std::vector<Input> inputs;
  for (const auto& put : args.all("put")) inputs.push_back(read_put(put));
  const ExecInput exec_input = read_exec_input(args);
  const auto out_dir = args.get("out");
  if (spec_lands_artifacts(spec) && !out_dir)
    throw UsageError("kind '" + spec.kind() + "' declares outputs that land; give --out DIR");
  const bool keep = args.flag("keep");
  const nlohmann::json config = backend_config(args);
  // Observers before any sandbox exists, so a bad --events path or OTEL_* variable is
  // refused up front (docs/observability.md).
  std::vector<std::shared_ptr<SandboxObserver>> observers;
  if (const auto events = args.get("events")) observers.push_back(events_file(*events));
  const auto exporter = otel::exporter_from_environment();
  if (exporter) observers.push_back(exporter);

  auto backend = create_backend(session, config);
  session.phase = Phase::Policy;
  SandboxRouter router({backend}, policy, std::move(observers));
  router.ensure_can_serve(spec);
  attach_credentials(args, router, {spec});

  session.phase = Phase::Work;
  session.reporter.progress("acquiring a sandbox from '" + backend->name() + "'");
  // Acquire sits inside the block whose failure path disposes: an acquire that fails after
  // the backend created something (a container whose probe then refused) leaves nothing.
  std::shared_ptr<Sandbox> sandbox;
  ExecResult result;
  std::vector<LandedArtifact> landed;
  std::exception_ptr failure;
  bool ran = false;  // the program ran: its output and exit status are the user's, whatever follows
  bool streamed = false;  // its output is on our streams already
  try {
    sandbox = session.run([&] { return router.acquire(key, spec); });
    for (const auto& in : inputs) {
      session.reporter.progress("writing " + in.guest);
      session.run([&] { return sandbox->write_file(in.guest, in.content); });
    }
    session.reporter.progress("running " + Command(args.argv).shell_line());
    // Human form: the program's output as it arrives, where the backend streams (STR-1); the
    // JSON form carries it in the result, so it waits for the end.
    streamed = !session.reporter.json() && sandbox->capabilities().contains(Capability::ExecStream);
    if (streamed) {
      const ExecStreamOptions stream_options{".", timeout, read_timeout, exec_input};
      const StreamedExit done = session.run([&] {
        return sandbox->exec_stream(Command(args.argv), print_chunk, stream_options);
      });
      result.exit_code = done.exit_code;
      result.limits_hit = done.limits_hit;
    } else {
      result = session.run([&] { return sandbox->exec(Command(args.argv), exec_input, ".", timeout); });
    }
    ran = true;
    if (!spec.declared_outputs().empty()) {
      session.reporter.progress("collecting outputs");
      std::shared_ptr<OutputSink> sink = out_dir ? make_file_system_sink(*out_dir) : nullptr;
      landed = session.run([&] { return collect_outputs(*sandbox, spec, sink); });
    }
  } catch (...) {
    failure = std::current_exception();
  }
  sandbox.reset();

  std::optional<DisposalFailure> disposal;
  if (!keep) {
    session.reporter.progress("disposing the sandbox");
    const auto started = std::chrono::steady_clock::now();
    disposal = session.run([&] { return backend->dispose(key, spec.kind(), std::nullopt); });
    emit(router.observers().get(), disposal_event(key, spec.kind(), backend->name(), disposal,
                                                  std::chrono::steady_clock::now() - started));
  }
  // Spans reach the collector before the process ends; a collector that does not answer
  // costs at most this bound, and what it lost is said (never the run's result).
  if (exporter && !exporter->flush(std::chrono::seconds(5)))
    fmt::print(stderr, "maf-sandbox: the OTLP collector at {} did not take every span in 5 s\n",
               exporter->options().endpoint);
  if (exporter && exporter->stats().spans_lost + exporter->stats().events_dropped > 0)
    fmt::print(stderr, "maf-sandbox: OTLP export lost {} span(s), dropped {} event(s)\n",
               exporter->stats().spans_lost, exporter->stats().events_dropped);
  if (failure && !ran) std::rethrow_exception(failure);
  if (failure) return report_after_run(session, result, streamed, classify(failure, Phase::Work));

  nlohmann::json j = {{"backend", backend->name()}, {"kind", spec.kind()},     {"key", key_json(key)},
                      {"exit_code", result.exit_code}, {"stdout", result.stdout_text()},
                      {"stderr", result.stderr_text()}, {"outputs", nlohmann::json::array()}, {"kept", keep}};
  j["disposal_failure"] = disposal ? nlohmann::json{{"code", disposal->code}, {"detail", disposal->detail}}
                                   : nlohmann::json();
  j["limits_hit"] = enum_set_json(result.limits_hit);  // docs/limits.md LIM-6
  std::string summary = fmt::format("maf-sandbox: exit code {}\n", result.exit_code);
  if (!result.limits_hit.empty())
    summary += fmt::format("maf-sandbox: the program ran into its resource bound(s): {}\n",
                           result.limits_hit.to_string());
  for (const auto& a : landed) {
    j["outputs"].push_back({{"name", a.name}, {"display", a.display},
                            {"file", a.handle ? nlohmann::json(*a.handle) : nlohmann::json()}});
    summary += fmt::format("maf-sandbox: landed {}\n", a.display);
  }
  if (keep) summary += fmt::format("maf-sandbox: kept the sandbox for {} (kind {})\n", to_string(key), spec.kind());
  if (disposal) summary += fmt::format("maf-sandbox: disposal incomplete: {}\n", disposal->to_string());

  if (session.reporter.json()) {
    session.reporter.result(j, {});
  } else {
    if (!streamed) print_program_output(result);  // our summary after it
    fmt::print(stderr, "{}", summary);
  }
  return result.exit_code == 0 ? kExitOk : kExitProgramFailed;
}

}  // namespace maf::sandbox::cli

#pragma once
// How the command reports: one result object (--json) or readable text, typed errors, the
// documented exit codes, and progress lines for slow steps when a person is watching.

#include <exception>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "maf/sandbox/observer.hpp"

namespace maf::sandbox::cli {

/// Exit codes (docs/cli.md). Stable: scripts branch on them.
enum ExitCode : int {
  kExitOk = 0,
  kExitOther = 1,          ///< anything unexpected (host I/O, a bug)
  kExitUsage = 2,          ///< the command line, an input file (spec, config) or a config key the backend refuses
  kExitRefused = 3,        ///< the router's policy refused (floor, capability, egress, ...)
  kExitBackend = 4,        ///< plugin loading or a backend operation failed
  kExitProgramFailed = 5,  ///< `run`: the program ran and exited non-zero
};

/// How far a command got; decides how an error is classified.
enum class Phase {
  Input,    ///< reading arguments, the spec and the config
  Backend,  ///< creating the backend
  Policy,   ///< building the router, ensure_can_serve
  Work,     ///< acquire, exec, collect, dispose
};

struct Failure {
  std::string type;  ///< the exception's class name without namespace, e.g. "SandboxEgressNotEnforced"
  std::string message;
  int exit_code = kExitOther;
};

/// "SandboxEgressNotEnforced" for maf::sandbox::SandboxEgressNotEnforced.
/// The JSON error `type` is a contract: it is the class name for every type, also when the
/// error was thrown nested (std::throw_with_nested) or is a template specialization. The
/// core owns the rule (observer.hpp), so an observer's `error_type` and the CLI's agree.
using maf::sandbox::class_name_of;
using maf::sandbox::error_type_name;

/// Type, message and exit code for the exception in flight during `phase`.
Failure classify(std::exception_ptr error, Phase phase);

class Reporter {
public:
  explicit Reporter(bool json);
  bool json() const noexcept { return json_; }
  /// "maf-sandbox: <what>..." on stderr, only when stderr is a terminal.
  void progress(std::string_view what) const;
  /// Print the result: `result` as one JSON line with --json, else `human` (may be empty).
  void result(const nlohmann::json& result, const std::string& human) const;
  /// Print an error: {"error": {"type", "message"}} on stdout with --json, else
  /// "maf-sandbox: <type>: <message>" on stderr.
  void error(const Failure& failure) const;

private:
  bool json_;
  bool tty_;
};

}  // namespace maf::sandbox::cli

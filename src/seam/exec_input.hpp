#pragma once
// The core's checks of a command's own environment and stdin (docs/exec-input.md), made once
// for every backend before any do_… hook sees them.
#include <functional>
#include <memory>
#include <string>

#include "maf/sandbox/exec_input.hpp"
#include "maf/sandbox/exec_stream.hpp"
#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/observer.hpp"

namespace maf::sandbox::detail {

/// Refuses a name or value outside ENV-2/ENV-3 (SandboxEnvironmentRefused naming the
/// variable, never its value), stdin past kMaxExecStdinBytes (SandboxTransferCapExceeded),
/// and a public name that is not in the environment (ValueError). `what` names the
/// operation, `where` the sandbox.
void check_exec_input(const ExecInput& input, const std::string& what, const std::string& where);

/// ENV-1, STDIN-1: the input's capabilities are required only when it uses them, so a
/// caller that gives none is served exactly as before on every backend.
void require_input_capabilities(const ExecInput& input, const std::function<void(Capability)>& require);

/// Whether `name` is a POSIX portable environment name (ENV-2).
bool valid_env_name(const std::string& name) noexcept;

/// Fills an event's env_names, env_public and stdin_bytes from `input` (ENV-5).
void describe_exec_input(const ExecInput& input, ExecEvent& event);

/// STDIN-8: closes a stream no program took once the exec ended, however — a refusal included.
struct FinishStdinStream {
  explicit FinishStdinStream(std::shared_ptr<StdinStream> s) : stream(std::move(s)) {}
  FinishStdinStream(FinishStdinStream&& other) noexcept : stream(std::move(other.stream)) {}  // the source lets go
  FinishStdinStream& operator=(FinishStdinStream&&) = delete;
  ~FinishStdinStream();
  std::shared_ptr<StdinStream> stream;
};

/// STDIN-6, first thing in exec_stream: the guard above for `options.stdin_stream`, then its
/// checks — NotImplementedError when `sandbox` does not declare exec_stdin_stream (worded as
/// Sandbox::require_capability words it), ValueError beside one-shot stdin.
FinishStdinStream begin_stdin_stream(const ExecStreamOptions& options, const Sandbox& sandbox);

}  // namespace maf::sandbox::detail

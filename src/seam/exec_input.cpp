// ENV-2…ENV-5, STDIN-2: the bounds of a command's own inputs, checked in the core so no
// backend can forget one, and so every backend refuses the same input the same way.
#include "seam/exec_input.hpp"

#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/stdin_stream.hpp"

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::detail {

bool valid_env_name(const std::string& name) noexcept {
  if (name.empty() || name.size() > kMaxExecEnvNameBytes) return false;
  const auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!alpha(name[0])) return false;
  for (const char c : name)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

namespace {
/// A name as a message may show it: printable ASCII kept, anything else escaped, bounded, so
/// a hostile name cannot forge lines in a log.
std::string shown(const std::string& name) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : name.substr(0, kMaxExecEnvNameBytes + 1)) {
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (name.size() > kMaxExecEnvNameBytes + 1) out += "...";
  return out;
}
}  // namespace

void check_exec_input(const ExecInput& input, const std::string& what, const std::string& where) {
  const std::string prefix = what + " in " + where + ": ";
  if (input.environment.size() > kMaxExecEnvVariables)
    throw SandboxEnvironmentRefused(prefix + "environment has " + std::to_string(input.environment.size()) +
                                    " variables, more than the " + std::to_string(kMaxExecEnvVariables) +
                                    " allowed (ENV-3)");
  std::size_t total = 0;
  for (const auto& [name, value] : input.environment) {
    if (!valid_env_name(name))
      throw SandboxEnvironmentRefused(prefix + "environment variable name '" + shown(name) +
                                      "' is not a portable name ([A-Za-z_][A-Za-z0-9_]*, at most " +
                                      std::to_string(kMaxExecEnvNameBytes) + " bytes; ENV-2)");
    if (value.find('\0') != std::string::npos)
      throw SandboxEnvironmentRefused(prefix + "environment variable '" + name +
                                      "' has a NUL byte in its value, which no environment can carry (ENV-3)");
    if (value.size() > kMaxExecEnvValueBytes)
      throw SandboxEnvironmentRefused(prefix + "environment variable '" + name + "' has a value of " +
                                      std::to_string(value.size()) + " bytes, more than the " +
                                      std::to_string(kMaxExecEnvValueBytes) + " allowed (ENV-3)");
    total += name.size() + value.size() + 2;  // NAME=VALUE and its NUL
  }
  if (total > kMaxExecEnvTotalBytes)
    throw SandboxEnvironmentRefused(prefix + "environment holds " + std::to_string(total) +
                                    " bytes together, more than the " + std::to_string(kMaxExecEnvTotalBytes) +
                                    " allowed (ENV-3)");
  for (const auto& name : input.public_names)
    if (!input.environment.contains(name))
      throw ValueError(prefix + "public_names names '" + shown(name) + "', which the environment does not set");
  if (input.stdin_bytes && input.stdin_bytes->size() > kMaxExecStdinBytes)
    throw SandboxTransferCapExceeded(prefix + "stdin of " + std::to_string(input.stdin_bytes->size()) +
                                     " bytes is more than max_stdin_bytes=" + std::to_string(kMaxExecStdinBytes) +
                                     "; nothing was run (STDIN-2)");
}

void describe_exec_input(const ExecInput& input, ExecEvent& event) {
  for (const auto& [name, value] : input.environment) {
    event.env_names.push_back(name);
    if (input.public_names.contains(name)) event.env_public.emplace(name, value);
  }
  event.stdin_bytes = input.stdin_bytes ? input.stdin_bytes->size() : 0;
}

FinishStdinStream begin_stdin_stream(const ExecStreamOptions& options, const Sandbox& sandbox) {
  FinishStdinStream guard(options.stdin_stream);
  if (!options.stdin_stream) return guard;
  if (!sandbox.capabilities().contains(Capability::ExecStdinStream))
    throw NotImplementedError("backend '" + sandbox.backend_name() + "' does not declare capability '" +
                              std::string(to_string(Capability::ExecStdinStream)) +
                              "', so exec_stream with a stdin_stream is not available to workload kind '" +
                              sandbox.kind() + "'");
  if (options.input.stdin_bytes)
    throw ValueError("exec_stream takes stdin_bytes or a stdin_stream, not both (STDIN-6)");
  return guard;
}

FinishStdinStream::~FinishStdinStream() {
  if (stream) stream->finish();
}

void require_input_capabilities(const ExecInput& input, const std::function<void(Capability)>& require) {
  if (!input.environment.empty()) require(Capability::ExecEnv);
  if (input.stdin_bytes) require(Capability::ExecStdin);
}

}  // namespace maf::sandbox::detail

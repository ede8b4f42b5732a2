#include "report.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "args.hpp"
#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::cli {

namespace {

template <class T>
bool is_a(const std::exception& e) {
  return dynamic_cast<const T*>(&e) != nullptr;
}

/// The router's refusals to serve (C-65, C-68), and a backend's acquire-time probe (C-54).
bool is_policy_refusal(const std::exception& e) { return dynamic_cast<const SandboxPolicyRefusal*>(&e) != nullptr; }

int exit_code_for(const std::exception& e, Phase phase) {
  if (is_a<UsageError>(e)) return kExitUsage;
  // An output name refused before anything ran (`run --output /abs`) is the user's input.
  if (phase == Phase::Input && is_a<SandboxArtifactNameInvalid>(e)) return kExitUsage;
  if (is_policy_refusal(e)) return kExitRefused;
  // A bad spec, rung or duration is the caller's input; later, a backend refused a value.
  // A backend's configuration refused at creation is the user's input too (a key spelt wrong).
  if (is_a<ValueError>(e)) return phase == Phase::Input || phase == Phase::Backend ? kExitUsage : kExitBackend;
  if (is_a<Error>(e)) return kExitBackend;  // PluginLoadError and NoSandboxBackend included
  return phase == Phase::Input ? kExitUsage : kExitOther;
}

}  // namespace

Failure classify(std::exception_ptr error, Phase phase) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return {error_type_name(e), e.what(), exit_code_for(e, phase)};
  } catch (...) {
    return {"unknown", "an exception that is not a std::exception", kExitOther};
  }
}

Reporter::Reporter(bool json) : json_(json), tty_(isatty(STDERR_FILENO) == 1) {}

void Reporter::progress(std::string_view what) const {
  if (tty_) fmt::print(stderr, "maf-sandbox: {}...\n", what);
}

void Reporter::result(const nlohmann::json& result, const std::string& human) const {
  if (json_) {
    fmt::print("{}\n", result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else if (!human.empty()) {
    fmt::print("{}", human);
  }
  std::fflush(stdout);
}

void Reporter::error(const Failure& failure) const {
  if (json_) {
    nlohmann::json j = {{"error", {{"type", failure.type}, {"message", failure.message}}}};
    fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    std::fflush(stdout);
  } else {
    fmt::print(stderr, "maf-sandbox: {}: {}\n", failure.type, failure.message);
  }
}

}  // namespace maf::sandbox::cli

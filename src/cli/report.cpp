#include "report.hpp"

#include <cxxabi.h>
#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <typeinfo>

#include "args.hpp"
#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::cli {

std::string error_type_name(const std::exception& error) {
  const char* mangled = typeid(error).name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                   std::free);
  return class_name_of(status == 0 && demangled ? demangled.get() : mangled);
}

std::string class_name_of(std::string_view demangled) {
  // std::throw_with_nested throws std::_Nested_exception<E>, which derives from E: the
  // error the caller threw is E.
  constexpr std::string_view kNested = "std::_Nested_exception<";
  while (demangled.substr(0, kNested.size()) == kNested && demangled.back() == '>') {
    demangled = demangled.substr(kNested.size(), demangled.size() - kNested.size() - 1);
    while (!demangled.empty() && demangled.back() == ' ') demangled.remove_suffix(1);  // "> >"
  }
  // Any other template: its own name without arguments (whose "::" must not be cut at).
  if (const auto angle = demangled.find('<'); angle != std::string_view::npos) demangled = demangled.substr(0, angle);
  // Callers see the class name, not where it lives.
  if (const auto colons = demangled.rfind("::"); colons != std::string_view::npos) demangled.remove_prefix(colons + 2);
  return std::string(demangled);
}

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

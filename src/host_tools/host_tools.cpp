// The host-tool registry and one run's dispatch (docs/host-tools.md HT-R1…R6).
// Every gate a guest's call passes is here, in the order docs/host-tools.md lists: the
// guest-side clients are conveniences, never controls.
#include "maf/sandbox/host_tools.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "support/argument_schema.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"

namespace maf::sandbox {

struct HostToolRegistry::Entry {
  HostTool tool;
  std::unique_ptr<detail::ArgumentSchema> schema;
};

namespace {

/// How much guest-chosen text a refusal may quote back: a refusal is a response the caps
/// never see, so its size must be the library's choice, not the guest's.
constexpr std::size_t kMaxEchoedChars = 120;

std::string bounded(std::string_view text) {
  if (text.size() <= kMaxEchoedChars) return std::string(text);
  return std::string(text.substr(0, kMaxEchoedChars)) + " (truncated)";
}

bool well_formed_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

DispatchResult refused(std::string sentence) { return DispatchResult{std::nullopt, std::move(sentence)}; }

}  // namespace

HostToolRegistry::HostToolRegistry(Options options) : options_(std::move(options)) {
  if (options_.max_dispatches_per_run < 1)
    throw ValueError("HostToolRegistry: max_dispatches_per_run must be at least 1, not " +
                     std::to_string(options_.max_dispatches_per_run) +
                     ": a host that wants nothing dispatched wants an empty registry");
  // response_limits validated itself (TransferLimits refuses a cap below 1).
  observers_ = std::make_shared<const ObserverSet>(options_.observers);
}

HostToolRegistry::~HostToolRegistry() = default;

void HostToolRegistry::add(HostTool tool) {
  const std::string name = tool.name;
  if (!well_formed_name(name))
    throw ValueError("host tool name '" + bounded(name) +
                     "' is not 1-64 letters, digits, '_', '.' or '-' (the alphabet every guest client can send)");
  if (!tool.function) throw ValueError("host tool '" + name + "' has no function");
  // HT-R2: the declaration is captured here and never re-read.
  if (options_.require_declared && !tool.declaration)
    throw HostToolNotDeclared("host tool '" + name +
                              "' has no information-flow declaration and this registry requires one: give it "
                              "HostToolDeclaration(source, sink, identity), every leg answered (nullopt is an answer)");
  // HT-R3: an undeclared tool runs with the application's authority, so it counts as APP.
  const std::optional<Identity> identity = tool.declaration ? tool.declaration->identity : Identity::App;
  if (identity && !options_.allowed_identities.contains(*identity))
    throw HostToolIdentityNotAllowed(
        "host tool '" + name + "' exercises '" + std::string(to_string(*identity)) + "' authority" +
        (tool.declaration ? "" : " (undeclared, read as 'app')") + ", which this registry does not allow (allowed_identities: " +
        options_.allowed_identities.to_string("none") + ")");
  if (identity == Identity::User && !options_.mint_user_identity)
    throw HostToolIdentityNotAllowed("host tool '" + name +
                                     "' exercises 'user' authority, but the registry has no mint_user_identity "
                                     "callback to mint the identity its body receives");
  auto entry = std::make_unique<Entry>();
  entry->schema = std::make_unique<detail::ArgumentSchema>(tool.parameters, name);  // ValueError naming it
  entry->tool = std::move(tool);
  std::lock_guard lock(mutex_);
  if (sealed_)
    throw ValueError("host tool '" + name +
                     "' cannot be added: the registry was sealed when its aggregate was taken, and a spec was "
                     "derived from the surface as it stood");
  if (tools_.count(name))
    throw ValueError("host tool '" + name + "' is already registered; refused rather than replaced");
  tools_.emplace(name, std::move(entry));
  logger()->info("host tool '{}' registered: its calls run in the host process with the host's authority", name);
}

HostToolAggregate HostToolRegistry::aggregate() {
  std::lock_guard lock(mutex_);
  sealed_ = true;
  HostToolAggregate out;
  for (const auto& [name, entry] : tools_) {
    out.names.push_back(name);
    const auto& d = entry->tool.declaration;
    std::optional<Integrity> source = d ? d->source : Integrity::Untrusted;
    if (source) out.result_integrity = (out.result_integrity == Integrity::Untrusted || *source == Integrity::Untrusted)
                                           ? Integrity::Untrusted
                                           : Integrity::Trusted;
    if (d && d->sink) out.outbound_caps.push_back(*d->sink);
    const std::optional<Identity> identity = d ? d->identity : Identity::App;
    if (identity) out.identities.insert(*identity);
    if (!d) out.has_undeclared = true;
  }
  std::sort(out.outbound_caps.begin(), out.outbound_caps.end());
  out.outbound_caps.erase(std::unique(out.outbound_caps.begin(), out.outbound_caps.end()), out.outbound_caps.end());
  out.requires_approval = out.identities.contains(Identity::User);
  return out;
}

bool HostToolRegistry::sealed() const {
  std::lock_guard lock(mutex_);
  return sealed_;
}

std::vector<std::string> HostToolRegistry::names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [name, entry] : tools_) out.push_back(name);
  return out;
}

std::size_t HostToolRegistry::size() const {
  std::lock_guard lock(mutex_);
  return tools_.size();
}

const HostToolRegistry::Entry* HostToolRegistry::find(std::string_view name) const {
  std::lock_guard lock(mutex_);
  const auto it = tools_.find(name);
  return it == tools_.end() ? nullptr : it->second.get();  // entries are never removed
}

HostToolRun::HostToolRun(const HostToolRegistry& registry, bool approved, EventContext context)
    : registry_(registry), approved_(approved), context_(std::move(context)) {
  // HT-R5: a run dispatches only what a spec was derived from, so the router's identity and
  // capability checks saw exactly this surface.
  if (!registry_.sealed())
    throw ValueError("HostToolRun: the registry is not sealed; take its aggregate() into the workload's "
                     "SandboxSpec::Fields::host_tools first, so the router checks the surface this run dispatches");
}

DispatchResult HostToolRun::dispatch(std::string_view name, const nlohmann::json& arguments,
                                     std::int64_t framing_bytes) {
  if (framing_bytes < 0)  // a transport's number, not the guest's
    throw ValueError("HostToolRun::dispatch: framing_bytes must not be negative, got " + std::to_string(framing_bytes));
  const auto started = std::chrono::steady_clock::now();
  std::optional<Identity> identity;
  DispatchResult result = dispatch_unobserved(name, arguments, framing_bytes, identity);
  if (!registry_.observers_->empty()) {
    HostToolDispatchEvent event;
    event.context = context_;
    event.tool = bounded(name);
    event.identity = identity;
    event.outcome = result.ok() ? DispatchOutcome::Ok : DispatchOutcome::Refused;
    event.duration = std::chrono::steady_clock::now() - started;
    emit(registry_.observers_.get(), std::move(event));
  }
  return result;
}

DispatchResult HostToolRun::dispatch_unobserved(std::string_view name, const nlohmann::json& arguments,
                                                std::int64_t framing_bytes, std::optional<Identity>& identity) {
  // HT-R4: every call counts, refused ones included — a guest probing names is spending
  // the budget the cap exists to bound. Exhaustion is a refusal, so the program can finish
  // and report what it has.
  ++dispatched_;
  const int cap = registry_.options_.max_dispatches_per_run;
  if (dispatched_ > cap)
    return refused("Error: this run's host-tool dispatch cap (" + std::to_string(cap) +
                   ") is exhausted; finish with the results already delivered");
  const auto* entry = registry_.find(name);
  if (!entry) return refused("Error: '" + bounded(name) + "' is not a registered host tool");
  const std::string tool_name = entry->tool.name;  // from here on, sentences quote host names only
  const auto& declaration = entry->tool.declaration;
  const std::optional<Identity> tool_identity = declaration ? declaration->identity : Identity::App;
  identity = tool_identity;
  if (!arguments.is_object())
    return refused("Error: the arguments for '" + tool_name + "' must be a JSON object");
  std::optional<std::string> user_identity;
  if (tool_identity == Identity::User) {
    if (!approved_)
      return refused("Error: '" + tool_name +
                     "' exercises the user's identity, and this call was not approved; it needs approval of the "
                     "enclosing tool call");
  }
  const auto& limits = registry_.options_.response_limits;
  // Everything knowable before the function runs is checked before it runs: a body that
  // has already done its work and is then refused reads like something to retry.
  if (delivered_ + 1 > limits.max_files())
    return refused("Error: this run's delivered-response cap (" + std::to_string(limits.max_files()) +
                   ") is exhausted; finish with the results already delivered");
  if (delivered_bytes_ + 1 + framing_bytes > limits.max_total_bytes())
    return refused("Error: this run's response byte budget (" + std::to_string(limits.max_total_bytes()) +
                   " bytes) is exhausted; finish with the results already delivered");
  if (const auto problem = entry->schema->problem(arguments))
    return refused("Error: the arguments for '" + tool_name + "' do not match its schema: " + bounded(*problem));
  if (tool_identity == Identity::User) {
    try {
      user_identity = registry_.options_.mint_user_identity(tool_name);
    } catch (const std::exception& e) {
      logger()->warn("host tool '{}': mint_user_identity failed: {}", tool_name, e.what());
      return refused("Error: '" + tool_name + "' could not be given the user's identity");
    }
  }
  std::string value_json;
  try {
    const HostToolCallContext context{*this, std::move(user_identity)};
    value_json = entry->tool.function(arguments, context).dump();
  } catch (const std::exception& e) {
    // The detail is the host's (it may carry provider internals); the guest gets a sentence.
    logger()->warn("host tool '{}' failed: {}", tool_name, e.what());
    return refused("Error: host tool '" + tool_name + "' failed; the host's log has the detail");
  } catch (...) {
    logger()->warn("host tool '{}' failed with a non-standard exception", tool_name);
    return refused("Error: host tool '" + tool_name + "' failed; the host's log has the detail");
  }
  const auto size = static_cast<std::int64_t>(value_json.size()) + framing_bytes;
  if (size > limits.max_bytes_per_file())
    return refused("Error: the response of '" + tool_name + "' is " + std::to_string(size) +
                   " bytes, over the per-response cap of " + std::to_string(limits.max_bytes_per_file()) + " bytes");
  if (delivered_bytes_ + size > limits.max_total_bytes())
    return refused("Error: the response of '" + tool_name + "' (" + std::to_string(size) +
                   " bytes) would pass this run's response byte budget of " + std::to_string(limits.max_total_bytes()) +
                   " bytes");
  ++delivered_;
  delivered_bytes_ += size;
  return DispatchResult{std::move(value_json), std::nullopt};
}

}  // namespace maf::sandbox

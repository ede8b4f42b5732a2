#pragma once
/// @file host_tools.hpp
/// Host tools (docs/host-tools.md): functions registered by the host that
/// guest code may call. A dispatched function runs in the host process, with the host's
/// authority, driven by model-written code — so the registry is the one door, and every gate
/// is here, host-side: resolution, the declaration gate, the identity gate, argument
/// validation against the function's JSON Schema, and the per-run count and size caps.
///
/// @code
///   HostToolRegistry registry({.require_declared = true});
///   registry.add({.name = "lookup",
///                 .parameters = {{"type", "object"}, {"required", {"id"}}},
///                 .declaration = HostToolDeclaration(Integrity::Trusted, std::nullopt, Identity::App),
///                 .function = [](const nlohmann::json& a, const HostToolCallContext&) {
///                   return nlohmann::json{{"id", a["id"]}, {"name", "Ada"}};
///                 }});
///   SandboxSpec spec({.kind = "lookup",
///                     .requires_capabilities = {Capability::Exec, Capability::FilesIn,
///                                               Capability::FilesOut, Capability::HostTools},
///                     .host_tools = registry.aggregate()});  // seals the registry
/// @endcode
///
/// How a guest reaches a registry is a transport's business: host_tools_over_exec.hpp is the
/// one shipped transport.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/content_labels.hpp"
#include "maf/sandbox/host_tool_aggregate.hpp"
#include "maf/sandbox/limits.hpp"
#include "maf/sandbox/observer.hpp"

namespace maf::sandbox {

namespace detail {
class ArgumentSchema;
}

/// One function's information-flow declaration (HT-R1). No default constructor and no
/// defaulted leg: a declaration exists to prove every question was answered, and
/// `std::nullopt` is an answer — "brings nothing in", "nothing flows out", "no authority".
struct HostToolDeclaration {
  HostToolDeclaration(std::optional<Integrity> source_, std::optional<std::string> sink_,
                      std::optional<Identity> identity_)
      : source(source_), sink(std::move(sink_)), identity(identity_) {}
  /// The integrity of what the function's result brings in.
  std::optional<Integrity> source;
  /// The host-vocabulary confidentiality cap of what flows out through it (never ranked).
  std::optional<std::string> sink;
  /// Whose authority the body exercises.
  std::optional<Identity> identity;
};


/// What a function sees besides its arguments.
struct HostToolCallContext {
  const HostToolRun& run;
  /// The host-minted user identity for a USER tool (HT-R3); absent otherwise.
  std::optional<std::string> user_identity;
};

/// A registered function: takes the validated arguments (a JSON object), returns the JSON
/// value the guest receives. What it throws becomes a refusal the guest sees as a fixed
/// sentence; the detail goes to the host's log, never into a transcript.
using HostFunction = std::function<nlohmann::json(const nlohmann::json& arguments, const HostToolCallContext& context)>;

struct HostTool {
  /// What the guest names; letters, digits, '_', '.', '-' (the shell client's alphabet).
  std::string name{};
  std::string description{};
  /// JSON Schema (draft 7) the arguments are validated against, host-side, before the call.
  nlohmann::json parameters = nlohmann::json{{"type", "object"}};
  /// Absent: never declared (refused at registration under require_declared).
  std::optional<HostToolDeclaration> declaration{};
  HostFunction function{};
};

/// The default per-run dispatch count: below the default transfer file count, so with
/// everything defaulted this is the cap that bites first.
inline constexpr int kDefaultMaxDispatchesPerRun = 16;

/// One dispatch's outcome: the JSON text the guest receives, or the sentence it sees.
struct DispatchResult {
  std::optional<std::string> value_json{};
  std::optional<std::string> refusal{};
  bool ok() const noexcept { return value_json.has_value(); }
};

class HostToolRegistry {
public:
  struct Options {
    /// Refuse functions without a declaration at registration (HostToolNotDeclared).
    bool require_declared = false;
    /// The authorities a registered tool may exercise; a declared `identity = nullopt` is
    /// always allowed, an undeclared tool counts as APP (HostToolIdentityNotAllowed).
    IdentitySet allowed_identities{Identity::App};
    /// Dispatches one run may make, refusals included (at least 1).
    int max_dispatches_per_run = kDefaultMaxDispatchesPerRun;
    /// Per response (max_bytes_per_file), per run (max_total_bytes) and delivered-response
    /// count (max_files) caps; also the size a request may be.
    TransferLimits response_limits = kDefaultTransferLimits;
    /// Mints the user identity a USER tool's body receives, per dispatch; required for any
    /// USER tool (HT-R3). Takes the tool name.
    std::function<std::string(const std::string& tool)> mint_user_identity{};
    /// Receive a HostToolDispatchEvent per dispatch (docs/observability.md).
    std::vector<std::shared_ptr<SandboxObserver>> observers{};
  };

  /// ValueError naming the field: max_dispatches_per_run below 1, a response cap below 1.
  explicit HostToolRegistry(Options options);
  HostToolRegistry() : HostToolRegistry(Options{}) {}
  ~HostToolRegistry();
  HostToolRegistry(const HostToolRegistry&) = delete;
  HostToolRegistry& operator=(const HostToolRegistry&) = delete;

  /// Make `tool` callable. ValueError naming it: sealed, empty or ill-formed name, duplicate
  /// (refused, never replaced), no function, a parameters value that is not a schema;
  /// HostToolNotDeclared; HostToolIdentityNotAllowed. Thread-safe.
  void add(HostTool tool);

  /// What the registry means for a spec, and seals it: a later add() is refused, so what
  /// the router checked and what a run dispatches cannot come apart (HT-R5).
  HostToolAggregate aggregate();
  bool sealed() const;
  std::vector<std::string> names() const;
  std::size_t size() const;
  const Options& options() const noexcept { return options_; }

private:
  friend class HostToolRun;
  struct Entry;
  const Entry* find(std::string_view name) const;

  Options options_;
  std::shared_ptr<const ObserverSet> observers_;
  mutable std::mutex mutex_;
  bool sealed_ = false;
  std::map<std::string, std::unique_ptr<Entry>, std::less<>> tools_;
};

/// One program run's dispatch context: a fresh count and byte ledger over a registry
/// (HT-R4). Not thread-safe: a transport serves one request at a time, in order.
class HostToolRun {
public:
  /// `approved`: the enclosing tool call was approved by the host's user, which a USER
  /// tool requires (HT-R3). `context`: what dispatch events carry (key, call id).
  explicit HostToolRun(const HostToolRegistry& registry, bool approved = false, EventContext context = {});

  /// Resolve, gate, validate, call and cap; every outcome the guest may see is a fixed
  /// sentence (refusal) or the value's JSON text. `framing_bytes`: what the transport
  /// wraps around the value, counted against the caps. Never throws for guest input.
  DispatchResult dispatch(std::string_view name, const nlohmann::json& arguments, std::int64_t framing_bytes = 0);

  const HostToolRegistry& registry() const noexcept { return registry_; }
  int dispatched() const noexcept { return dispatched_; }
  int delivered() const noexcept { return delivered_; }
  std::int64_t delivered_bytes() const noexcept { return delivered_bytes_; }

private:
  DispatchResult dispatch_unobserved(std::string_view name, const nlohmann::json& arguments,
                                     std::int64_t framing_bytes, std::optional<Identity>& identity);
  const HostToolRegistry& registry_;
  bool approved_;
  EventContext context_;
  int dispatched_ = 0;
  int delivered_ = 0;
  std::int64_t delivered_bytes_ = 0;
};

}  // namespace maf::sandbox

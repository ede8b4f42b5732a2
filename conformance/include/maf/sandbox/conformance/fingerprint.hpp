#pragma once
/// @file conformance/fingerprint.hpp
/// DISPOSE, judged on the engine: `assert_nothing_left_behind` (NL-1, docs/conformance.md
/// "CLEANUP") fingerprints what a backend keeps on its engine before and after a call that
/// acquires, works and disposes, and fails naming every item that appeared or vanished.
///
/// Why the engine and not the sandbox: a disposed sandbox has no inside left to look at; what
/// a disposal can leak is engine state — a process backend's state directory and cgroups, a
/// Docker container, network or volume carrying the call's labels. A fingerprint subject
/// reports that inventory for one backend, narrowed to what the test itself can create (its
/// own scope label), so other engineers' or tests' resources on a shared engine never count.
///
/// @code
///   FunctionFingerprint inventory("process: state root and cgroups", [&] {
///     return std::optional<EngineFingerprint>({process::process_engine_inventory(config)});
///   });
///   auto result = assert_nothing_left_behind(inventory, [&] { acquire_work_dispose(); });
///   CHECK(result.passed());  // a skip does not raise
/// @endcode

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "maf/sandbox/conformance/results.hpp"

namespace maf::sandbox::conformance {

/// What a backend keeps on its engine, one stable line per item ("container:<id> <name>",
/// "state:<dir>", …). Compared as a set; order and duplicates do not matter.
struct EngineFingerprint {
  std::vector<std::string> items;
};

/// The seam a backend's test fills: its engine's inventory, or absent when this engine cannot
/// be inventoried at all (NL-1 then skips, with that reason — never passes). It must not
/// change engine state, and must raise rather than return a partial inventory.
class FingerprintSubject {
public:
  virtual ~FingerprintSubject();
  virtual std::optional<EngineFingerprint> fingerprint() = 0;
  /// What is inventoried, for messages ("docker: containers, networks, volumes labelled …").
  virtual std::string describe() const = 0;
};

/// A FingerprintSubject over a callable.
class FunctionFingerprint final : public FingerprintSubject {
public:
  FunctionFingerprint(std::string description, std::function<std::optional<EngineFingerprint>()> inventory)
      : description_(std::move(description)), inventory_(std::move(inventory)) {}
  std::optional<EngineFingerprint> fingerprint() override { return inventory_(); }
  std::string describe() const override { return description_; }

private:
  std::string description_;
  std::function<std::optional<EngineFingerprint>()> inventory_;
};

/// NL-1 "nothing_left_behind": fingerprint, run `call` (which acquires, works and disposes,
/// awaiting its own cleanup), fingerprint again. Skip when the first fingerprint is absent
/// (`call` is then not run); fail when `call` raises (cancellation propagates), when the
/// second fingerprint is absent or raises, or when any item appeared or vanished (each is
/// named). Never throws ConformanceFailure: assert on the result.
ProbeResult run_nothing_left_behind(FingerprintSubject& subject, const std::function<void()>& call);
/// run_nothing_left_behind, throwing ConformanceFailure on a failure; returns the result
/// (which may be a skip — assert `passed()` when the engine must be inventoried).
ProbeResult assert_nothing_left_behind(FingerprintSubject& subject, const std::function<void()>& call);

}  // namespace maf::sandbox::conformance

#pragma once
/// @file outputs.hpp
/// Output collection (C-81…C-94): from declared guest files to landed host artifacts,
/// under the spec's caps, refusing before anything is delivered.
///
/// collect_outputs runs in phases, in order (C-84…C-93):
///  A. everything the declaration alone decides (a sink for anything that lands, valid
///     names, no colliding landing names);
///  B. stat and cap every declared output (CONSUME included);
///  C. read every landing output under a fresh tally;
///  D. deliver, once per artifact, in declaration order.
/// Any refusal in A–C delivers nothing.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/declared_output.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/sink.hpp"
#include "maf/sandbox/spec.hpp"

namespace maf::sandbox {

/// UTF-8 bytes an artifact name may take (C-81).
inline constexpr std::size_t kMaxArtifactNameBytes = 255;

/// C-81: throws SandboxArtifactNameInvalid naming the broken rule, checked in order: empty,
/// backslash, absolute, "..", empty or "." segment, control characters (listing their
/// codes), invalid UTF-8, over 255 bytes (stating the count).
void validate_artifact_name(std::string_view name);

/// C-82: an opt-in rewrite to a name legal on Windows; never applied automatically.
std::string portable_name(std::string_view name);

/// C-83: the LAND members of the spec's declared outputs.
std::vector<DeclaredOutput> landing_outputs(const SandboxSpec& spec);
/// C-83: the spec lands something (declared LAND outputs, or names at call time).
bool spec_lands_artifacts(const SandboxSpec& spec);
/// C-83: builds (does not throw) the refusal naming kind, landing paths and the asker.
SandboxOutputSinkRequired missing_sink_refusal(const SandboxSpec& spec, const std::vector<DeclaredOutput>& landing,
                                               std::string_view asked_by);

/// Collect the spec's declared outputs (then `outputs`, allowed only with
/// outputs_named_at_call_time) from `sandbox` into `sink`. Returns what the sink returned,
/// in declaration order. `sink` may be null when nothing lands.
///
/// The spec is taken by value because the coroutine starts lazily: a reference to a
/// temporary spec would dangle by the time the awaitable runs. `sandbox` must outlive it.
///
/// `observers` (null = the sandbox's own, attached by the router) receive a TransferEvent
/// (out, refused_by_cap) for each output the spec's files_out caps refuse; the reads
/// themselves are reported by the sandbox (docs/observability.md).
boost::asio::awaitable<std::vector<LandedArtifact>> collect_outputs(Sandbox& sandbox, SandboxSpec spec,
                                                                    std::shared_ptr<OutputSink> sink = nullptr,
                                                                    std::vector<DeclaredOutput> outputs = {},
                                                                    std::shared_ptr<const ObserverSet> observers = nullptr);

}  // namespace maf::sandbox

// Output collection (C-81…C-94): declared guest files -> caps -> the host's sink.
//
// Every refusal is raised before the first delivery (phases A–C), and every byte is bounded
// before it is buffered: sizes are capped from the stat, reads are bounded by what is left.
#include "maf/sandbox/outputs.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <functional>
#include <map>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/exec_result.hpp"
#include "maf/sandbox/paths.hpp"
#include "seam/file_batch.hpp"
#include "support/unicode_text.hpp"

namespace maf::sandbox {
namespace {

/// True when `pred` holds for some '/'-separated segment of `name` (the same segments as
/// segments(), without building the list: validate_artifact_name runs per collected output and
/// allocates nothing for a valid name).
template <class Pred>
bool any_segment(std::string_view name, Pred&& pred) {
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = name.find('/', start);
    if (pred(name.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start)))
      return true;
    if (slash == std::string_view::npos) return false;
    start = slash + 1;
  }
}

std::vector<std::string_view> segments(std::string_view name) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = name.find('/', start);
    out.push_back(name.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

/// Quotes a name for a message. Control bytes are escaped so a message can neither be cut
/// short (NUL ends what()) nor forge lines in a log.
std::string in_quotes(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20) {
      out += c;
      continue;
    }
    char escaped[5];
    std::snprintf(escaped, sizeof escaped, "\\x%02X", u);
    out += escaped;
  }
  return out + "'";
}

[[noreturn]] void refuse_name(std::string_view name, const std::string& rule) {
  throw SandboxArtifactNameInvalid("artifact name " + in_quotes(name) + " is invalid: " + rule);
}

std::string cap_message(const SandboxSpec& spec, const std::string& path, const std::string& what,
                        const char* field, std::int64_t value) {
  return "workload kind '" + spec.kind() + "': output " + in_quotes(path) + " " + what + ", over files_out." + field +
         "=" + std::to_string(value);
}

/// C-90 / C-91: one file's size against the per-file cap, then the count, then the total.
class Tally {
public:
  using Refused = std::function<void(const std::string& path, std::int64_t size)>;
  Tally(const SandboxSpec& spec, const Refused& refused) : spec_(spec), limits_(spec.files_out()), refused_(refused) {}

  /// Counts `size`; a cap refusal is reported to the observers, then thrown.
  void add(const std::string& path, std::int64_t size) {
    try {
      count(path, size);
    } catch (const SandboxTransferCapExceeded&) {
      if (refused_) refused_(path, size);
      throw;
    }
  }
  std::int64_t total() const noexcept { return total_; }

private:
  void count(const std::string& path, std::int64_t size) {
    if (size > limits_.max_bytes_per_file())
      throw SandboxTransferCapExceeded(cap_message(spec_, path, "is " + std::to_string(size) + " bytes",
                                                   "max_bytes_per_file", limits_.max_bytes_per_file()));
    if (++files_ > limits_.max_files())
      throw SandboxTransferCapExceeded(cap_message(spec_, path, "is file number " + std::to_string(files_),
                                                   "max_files", limits_.max_files()));
    total_ += size;
    if (total_ > limits_.max_total_bytes())
      throw SandboxTransferCapExceeded(cap_message(spec_, path, "brings the total to " + std::to_string(total_) + " bytes",
                                                   "max_total_bytes", limits_.max_total_bytes()));
  }

  const SandboxSpec& spec_;
  TransferLimits limits_;
  const Refused& refused_;
  std::int64_t files_ = 0;
  std::int64_t total_ = 0;
};

/// C-88: a confinement refusal becomes NotConfined, any I/O refusal Unreachable; both name
/// the path, repeat the backend's message and nest the original as the cause. Everything
/// else (including a backend's own SandboxTransferCapExceeded, C-91) passes through.
template <class Call>
auto translated(const SandboxSpec& spec, const std::string& path, const char* step, Call&& call)
    -> decltype(call()) {
  try {
    co_return co_await call();
  } catch (const ValueError& e) {
    std::throw_with_nested(SandboxOutputNotConfined("workload kind '" + spec.kind() + "': output " + in_quotes(path) +
                                                    " is not confined to the working directory (" + step +
                                                    "): " + e.what()));
  } catch (const OSError& e) {
    std::throw_with_nested(SandboxOutputUnreachable("workload kind '" + spec.kind() + "': output " + in_quotes(path) +
                                                    " could not be reached (" + step + "): " + e.what()));
  }
}

/// C-82: device names Windows reserves in any directory. Only ASCII letters need folding:
/// no non-ASCII code point uppercases (Python str.upper) into these spellings, and the
/// superscript digits have no case.
bool is_windows_reserved_stem(std::string stem) {
  for (char& c : stem)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  static const char* const reserved[] = {"CON",  "PRN",  "AUX",  "NUL",  "COM1", "COM2", "COM3", "COM4",
                                         "COM5", "COM6", "COM7", "COM8", "COM9", "LPT1", "LPT2", "LPT3",
                                         "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9", "COM\xC2\xB9",
                                         "COM\xC2\xB2", "COM\xC2\xB3", "LPT\xC2\xB9", "LPT\xC2\xB2", "LPT\xC2\xB3"};
  return std::find(std::begin(reserved), std::end(reserved), stem) != std::end(reserved);
}

struct Landing {
  const DeclaredOutput* output;
  std::string delivered_name;
  std::int64_t stat_size = 0;
};

}  // namespace

void validate_artifact_name(std::string_view name) {
  if (name.empty()) refuse_name(name, "it must be non-empty");
  if (name.find('\\') != std::string_view::npos) refuse_name(name, "it contains a backslash");
  if (name.front() == '/') refuse_name(name, "it is absolute (starts with '/')");
  // Traversal is named before an empty or '.' segment, whichever comes first in the name.
  if (any_segment(name, [](std::string_view seg) { return seg == ".."; }))
    refuse_name(name, "it contains a '..' segment (traversal)");
  if (any_segment(name, [](std::string_view seg) { return seg.empty() || seg == "."; }))
    refuse_name(name, "it contains an empty or '.' segment");
  std::string controls;  // stays empty, so unallocated, for a name without control bytes
  for (unsigned char c : name) {
    if (c >= 0x20) continue;
    char code[8];
    std::snprintf(code, sizeof code, "U+%04X", c);
    if (!controls.empty()) controls += ", ";
    controls += code;
  }
  if (!controls.empty()) refuse_name(name, "it contains control characters (" + controls + ")");
  if (!is_valid_utf8(name)) refuse_name(name, "it is not valid UTF-8");
  if (name.size() > kMaxArtifactNameBytes)
    refuse_name(name, "it is " + std::to_string(name.size()) + " UTF-8 bytes, over the ceiling of " +
                          std::to_string(kMaxArtifactNameBytes));
}

std::string portable_name(std::string_view name) {
  std::string out;
  bool first = true;
  for (auto seg : segments(name)) {
    std::string s;
    for (char c : seg) {
      const auto u = static_cast<unsigned char>(c);
      s += (u < 0x20 || std::string_view("<>:\"|?*").find(c) != std::string_view::npos) ? '_' : c;
    }
    while (!s.empty() && (s.back() == '.' || s.back() == ' ')) s.pop_back();
    const std::size_t stem_end = std::min(s.find('.'), s.size());
    if (is_windows_reserved_stem(s.substr(0, stem_end))) s.insert(stem_end, "_");
    if (s.empty()) s = "_";
    if (!first) out += '/';
    out += s;
    first = false;
  }
  return out;
}

std::vector<DeclaredOutput> landing_outputs(const SandboxSpec& spec) {
  std::vector<DeclaredOutput> out;
  for (const auto& o : spec.declared_outputs())
    if (o.disposition == OutputDisposition::Land) out.push_back(o);
  return out;
}

bool spec_lands_artifacts(const SandboxSpec& spec) {
  return !landing_outputs(spec).empty() || spec.outputs_named_at_call_time();
}

SandboxOutputSinkRequired missing_sink_refusal(const SandboxSpec& spec, const std::vector<DeclaredOutput>& landing,
                                               std::string_view asked_by) {
  std::string what;
  if (landing.empty()) {
    what = "lands artifacts it names at call time";
  } else {
    what = "lands ";
    for (std::size_t i = 0; i < landing.size(); ++i) what += (i ? ", " : "") + in_quotes(landing[i].path);
  }
  return SandboxOutputSinkRequired("workload kind '" + spec.kind() + "' " + what + ", but " + std::string(asked_by) +
                                   " was given no output sink to land them in");
}

boost::asio::awaitable<std::vector<LandedArtifact>> collect_outputs(Sandbox& sandbox, SandboxSpec spec,
                                                                    std::shared_ptr<OutputSink> sink,
                                                                    std::vector<DeclaredOutput> outputs,
                                                                    std::shared_ptr<const ObserverSet> observers) {
  if (!observers) observers = sandbox.observers();
  Tally::Refused refused;
  if (observers && !observers->empty())
    refused = [&](const std::string& path, std::int64_t size) {
      TransferEvent e;
      e.context.key = sandbox.observed_key();
      e.context.call_id = e.context.key.call_id;
      e.context.backend = sandbox.backend_name();
      e.context.kind = sandbox.kind();
      e.context.instance_id = sandbox.instance_id();
      e.direction = TransferDirection::Out;
      e.guest_path = path;
      e.bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(size, 0));
      e.refused_by_cap = true;
      e.error_type = "SandboxTransferCapExceeded";
      emit(observers.get(), std::move(e));
    };
  // --- Phase A: the declaration alone (C-84…C-87) ---
  if (!outputs.empty() && !spec.outputs_named_at_call_time())
    throw ValueError("workload kind '" + spec.kind() + "' was given " + std::to_string(outputs.size()) +
                     " output(s) at call time but does not set outputs_named_at_call_time");
  std::vector<DeclaredOutput> all = spec.declared_outputs();
  all.insert(all.end(), std::make_move_iterator(outputs.begin()), std::make_move_iterator(outputs.end()));

  std::vector<DeclaredOutput> landing;
  for (const auto& o : all)
    if (o.disposition == OutputDisposition::Land) landing.push_back(o);
  if (!landing.empty() && !sink) throw missing_sink_refusal(spec, landing, "collect_outputs");

  struct Seen {
    const DeclaredOutput* output;
    std::string delivered;
  };
  std::map<std::string, Seen> by_key;
  std::map<const DeclaredOutput*, std::string> delivered_of;
  for (const auto& o : all) {
    validate_artifact_name(o.path);
    if (o.disposition != OutputDisposition::Land) continue;
    const std::string& raw = o.name.value_or(o.path);
    // NFC needs well-formed input; an ill-formed name is refused by the validator first.
    if (!is_valid_utf8(raw)) validate_artifact_name(raw);
    const std::string nfc = detail::nfc(raw);
    const std::string delivered = sink->normalization() == NameNormalization::None ? raw : nfc;
    if (delivered != o.path) validate_artifact_name(delivered);
    // C-87: the key always uses NFC and lowercase, whatever the sink's normalization.
    const std::string key = normalize_guest_path(detail::python_lower(nfc));
    if (auto it = by_key.find(key); it != by_key.end()) {
      const bool identical = it->second.delivered == delivered;
      throw SandboxArtifactNameCollision(
          "workload kind '" + spec.kind() + "': outputs " + in_quotes(it->second.output->path) + " and " +
          in_quotes(o.path) +
          (identical ? " both land under the identical name " + in_quotes(delivered)
                     : " land under names that differ only by case or Unicode form (" +
                           in_quotes(it->second.delivered) + " and " + in_quotes(delivered) + ")"));
    }
    by_key.emplace(key, Seen{&o, delivered});
    delivered_of.emplace(&o, delivered);
  }

  // Phases B and C are one file batch: a backend may bracket them once (Docker: one freeze
  // for the whole collection) instead of once per call (sandbox.hpp, do_file_batch).
  if (all.empty()) co_return std::vector<LandedArtifact>{};  // nothing to stat: no bracket either
  const std::string wd = spec.effective_work_dir();
  std::vector<Artifact> artifacts;
  bool in_bracket = false;  // a failure outside the body is the bracket's own
  auto phases = [&](bool batched) -> boost::asio::awaitable<void> {
    in_bracket = true;
    artifacts.clear();
    // --- Phase B: stat and cap every declared output, CONSUME included (C-88…C-90) ---
    Tally stat_tally(spec, refused);
    std::vector<Landing> forward;
    for (const auto& o : all) {
      const auto entry = co_await translated(spec, o.path, "stat", [&] {
        return detail::FileBatchAccess::stat_file(sandbox, batched, o.path, wd);
      });
      if (!entry) {
        if (o.required)
          throw SandboxOutputMissing("workload kind '" + spec.kind() + "': required output " + in_quotes(o.path) +
                                     " does not exist");
        continue;
      }
      if (entry->kind != EntryKind::File)
        throw SandboxOutputNotRegular("workload kind '" + spec.kind() + "': output " + in_quotes(o.path) + " is a " +
                                      std::string(to_string(entry->kind)) + ", not a regular file");
      if (!entry->size_bytes)
        throw SandboxOutputSizeUnknown("workload kind '" + spec.kind() + "': output " + in_quotes(o.path) +
                                       " has no known size; refusing rather than reading it unbounded");
      stat_tally.add(o.path, *entry->size_bytes);
      if (o.disposition == OutputDisposition::Land) forward.push_back({&o, delivered_of.at(&o), *entry->size_bytes});
    }

    // --- Phase C: read every landing output under a fresh tally (C-91, C-92) ---
    Tally read_tally(spec, refused);
    for (const auto& l : forward) {
      const std::int64_t left = std::max<std::int64_t>(spec.files_out().max_total_bytes() - read_tally.total(), 0);
      const std::int64_t bound = std::min(l.stat_size, left);
      std::string bytes = co_await translated(spec, l.output->path, "read", [&] {
        return detail::FileBatchAccess::read_file(sandbox, batched, l.output->path, wd, bound);
      });
      // Re-count what actually came back: a file that grew since its stat is still refused.
      read_tally.add(l.output->path, static_cast<std::int64_t>(bytes.size()));
      artifacts.push_back(Artifact{l.delivered_name, std::move(bytes), spec.kind(), l.output->media_type});
    }
    in_bracket = false;
  };
  try {
    co_await detail::FileBatchAccess::run(sandbox, phases);
  } catch (const OSError& e) {
    // The bracket itself failed (Docker: a pause or the unpause): as C-88 words a failed
    // call, the output could not be reached — named by the first one.
    if (in_bracket) throw;
    std::throw_with_nested(SandboxOutputUnreachable("workload kind '" + spec.kind() + "': output " +
                                                    in_quotes(all.front().path) +
                                                    " could not be reached (file batch): " + e.what()));
  }
  if (artifacts.empty()) co_return std::vector<LandedArtifact>{};

  // --- Phase D: deliver in order; no rollback of earlier deliveries (C-93) ---
  std::vector<LandedArtifact> landed;
  landed.reserve(artifacts.size());
  for (auto& a : artifacts) landed.push_back(co_await sink->deliver(std::move(a)));
  co_return landed;
}

}  // namespace maf::sandbox

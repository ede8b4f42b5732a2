// The labels of a tool call's result (docs/tools.md, PROV-1…PROV-6): each read of stored text
// judged against the kind's required integrity, and the finished result stamped.
#include "maf/sandbox/file_provenance.hpp"
#include "maf/sandbox/logging.hpp"
#include "tools/call_record.hpp"

#include <spdlog/spdlog.h>

namespace maf::sandbox::detail {

std::optional<std::string> judge_read(const detail::ToolBinding& b, std::string_view path, Integrity& floor) {
  const std::string& tool = b.definition.name;
  std::optional<Integrity> integrity;
  std::string key;
  try {
    key = FileStoreProvenance::normalize(path);
    if (b.options.provenance.file_provenance) integrity = b.options.provenance.file_provenance->integrity(key);
  } catch (const ValueError& e) {
    floor = Integrity::Untrusted;
    return "Error: tool '" + tool + "' refuses input: " + e.what();
  }
  if (integrity != Integrity::Trusted) floor = Integrity::Untrusted;
  const auto& required = b.options.provenance.requires_file_integrity;
  if (!required) return std::nullopt;
  const bool weak = !integrity || (*required == Integrity::Trusted && *integrity == Integrity::Untrusted);
  if (!weak) return std::nullopt;
  return "Error: tool '" + tool + "' refuses input '" + key + "': its integrity is " +
         (integrity ? std::string(to_string(*integrity)) : std::string("unknown")) + ", and the tool requires " +
         std::string(to_string(*required)) + " input";
}

/// The labels of a finished call (PROV-1, PROV-3): the verified standing guidance is
/// trusted/public; every other item keeps the body's labels or takes the kind's claim, and a
/// weak read lowers its integrity — never raises it.
void stamp_labels(const detail::ToolBinding& b, ToolResult& result, Integrity read_floor, bool library_made) {
  const ContentLabels claim = b.options.provenance.labels.value_or(ContentLabels{});
  std::size_t guidance = result.content.size();
  const auto& fixed = b.options.provenance.standing_guidance;
  if (fixed && !result.is_error) {
    const auto* last = result.content.empty() ? nullptr : &result.content.back();
    const auto* text = last ? std::get_if<TextContent>(&last->value) : nullptr;
    if (text && !last->labels && text->text == *fixed)
      guidance = result.content.size() - 1;
    else
      logger()->warn("tool '{}': the result does not end with the kind's standing guidance (unlabelled, unaltered); "
                     "nothing in it is stamped trusted",
                     b.definition.name);
  }
  for (std::size_t i = 0; i < result.content.size(); ++i) {
    auto& item = result.content[i];
    if (i == guidance) {
      item.labels = kLibraryAuthoredLabels;
      continue;
    }
    if (!item.labels) item.labels = claim;
    if (read_floor == Integrity::Untrusted && !library_made) item.labels->integrity = Integrity::Untrusted;
  }
}

}  // namespace maf::sandbox::detail

#pragma once
// `maf-sandbox run --events FILE`: the observer that writes every event as one JSON line
// (observer.hpp event_to_json; docs/cli.md, docs/observability.md).
#include <memory>
#include <string>

#include "maf/sandbox/observer.hpp"

namespace maf::sandbox::cli {

/// Opens (creates 0600, appends) `path` now, so an unusable path is refused before any
/// sandbox exists: ValueError naming it and the reason. Each event is one write(2) under
/// O_APPEND. A failed write throws, and the fan-out logs it (OBS-3).
std::shared_ptr<SandboxObserver> events_file(const std::string& path);

}  // namespace maf::sandbox::cli

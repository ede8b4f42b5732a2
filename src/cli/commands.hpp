#pragma once
// The subcommands of `maf-sandbox`; each returns its exit code (report.hpp) or throws, and
// main classifies what it throws by the session's phase.

#include "session.hpp"

namespace maf::sandbox::cli {

int cmd_plugins(Session& session);
int cmd_check(Session& session);
int cmd_run(Session& session);
int cmd_dispose_scope(Session& session);
int cmd_reap(Session& session);
int cmd_mcp(Session& session);
int cmd_tools(Session& session);

}  // namespace maf::sandbox::cli

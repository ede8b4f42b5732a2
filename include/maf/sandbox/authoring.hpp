#pragma once
/// @file authoring.hpp
/// The backend author's front door (docs/writing-a-backend.md): the seam a backend
/// implements, the plugin ABI it exports, and the building blocks under support/ — a child
/// process with bounded capture and a deadline, the tar plane with caps, POSIX quoting,
/// labels, an awaitable mutex and sleep, the guest-side stream wrapper and the egress
/// proxy's decision-log parser. Over <maf/sandbox/async.hpp>, which it includes.

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/exec_report.hpp"
#include "maf/sandbox/exec_stream.hpp"
#include "maf/sandbox/plugin.hpp"
#include "maf/sandbox/pool.hpp"
#include "maf/sandbox/registry.hpp"
#include "maf/sandbox/support/async_mutex.hpp"
#include "maf/sandbox/support/backend_message.hpp"
#include "maf/sandbox/support/capture_buffer.hpp"
#include "maf/sandbox/support/guest_stream.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/support/proxy_log.hpp"
#include "maf/sandbox/support/shell.hpp"
#include "maf/sandbox/support/sleep.hpp"
#include "maf/sandbox/support/subprocess.hpp"
#include "maf/sandbox/support/tar.hpp"

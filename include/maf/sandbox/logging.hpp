#pragma once
/// @file logging.hpp
/// The library's one named logger ("maf.sandbox"), which a host can replace or silence.
/// Nothing above debug level is logged on a hot path.

#include <memory>

namespace spdlog {
class logger;
}

namespace maf::sandbox {

/// The current logger (created on first use, writing to stderr at level warn).
std::shared_ptr<spdlog::logger> logger();
/// Replace the logger; null silences the library.
void set_logger(std::shared_ptr<spdlog::logger> replacement);

}  // namespace maf::sandbox

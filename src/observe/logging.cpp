#include "maf/sandbox/logging.hpp"

#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <mutex>

namespace maf::sandbox {
namespace {
std::mutex g_mutex;
std::shared_ptr<spdlog::logger> g_logger;
}  // namespace

std::shared_ptr<spdlog::logger> logger() {
  std::lock_guard lock(g_mutex);
  if (!g_logger) {
    g_logger = std::make_shared<spdlog::logger>("maf.sandbox", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    g_logger->set_level(spdlog::level::warn);
  }
  return g_logger;
}

void set_logger(std::shared_ptr<spdlog::logger> replacement) {
  std::lock_guard lock(g_mutex);
  g_logger = replacement ? std::move(replacement)
                         : std::make_shared<spdlog::logger>("maf.sandbox", std::make_shared<spdlog::sinks::null_sink_mt>());
}

}  // namespace maf::sandbox

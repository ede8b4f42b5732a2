// ResourceLimits (resource_limits.hpp): the LIM-1/LIM-2 validation and the text form.
#include "maf/sandbox/resource_limits.hpp"

#include <charconv>
#include <cmath>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {
namespace {

std::string number_text(double value) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);  // shortest round-trip
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(value);
}

[[noreturn]] void out_of_range(const char* field, const std::string& value, const std::string& range) {
  throw ValueError("ResourceLimits." + std::string(field) + " must be " + range + ", got " + value +
                   " (docs/limits.md LIM-2)");
}

void check_count(const char* field, const std::optional<std::int64_t>& value, std::int64_t min, std::int64_t max) {
  if (value && (*value < min || *value > max))
    out_of_range(field, std::to_string(*value), "from " + std::to_string(min) + " to " + std::to_string(max));
}

void check_lifetime(const char* field, const std::optional<std::chrono::seconds>& value) {
  if (value && (*value < ResourceLimits::kMinLifetime || *value > ResourceLimits::kMaxLifetime))
    out_of_range(field, std::to_string(value->count()) + " s",
                 "from " + std::to_string(ResourceLimits::kMinLifetime.count()) + " s to " +
                     std::to_string(ResourceLimits::kMaxLifetime.count()) + " s");
}

}  // namespace

ResourceLimits::ResourceLimits(Fields fields) : f_(fields) {
  check_count("memory_bytes", f_.memory_bytes, kMinMemoryBytes, kMaxMemoryBytes);
  if (f_.cpus && !(std::isfinite(*f_.cpus) && *f_.cpus >= kMinCpus && *f_.cpus <= kMaxCpus))
    out_of_range("cpus", number_text(*f_.cpus), "from " + number_text(kMinCpus) + " to " + number_text(kMaxCpus));
  check_count("processes", f_.processes, kMinProcesses, kMaxProcesses);
  check_lifetime("ttl", f_.ttl);
  check_lifetime("idle_timeout", f_.idle_timeout);
  if (f_.ttl && f_.idle_timeout && *f_.idle_timeout > *f_.ttl)
    throw ValueError("ResourceLimits.idle_timeout (" + std::to_string(f_.idle_timeout->count()) +
                     " s) exceeds ttl (" + std::to_string(f_.ttl->count()) +
                     " s): the sandbox would always expire by its ttl first (docs/limits.md LIM-2)");
}

ResourceBoundSet ResourceLimits::asked() const noexcept {
  ResourceBoundSet s;
  if (f_.memory_bytes) s.insert(ResourceBound::Memory);
  if (f_.cpus) s.insert(ResourceBound::Cpus);
  if (f_.processes) s.insert(ResourceBound::Processes);
  if (f_.ttl) s.insert(ResourceBound::Ttl);
  if (f_.idle_timeout) s.insert(ResourceBound::IdleTimeout);
  return s;
}

std::string ResourceLimits::to_string() const {
  std::string out;
  auto add = [&](const char* name, const std::string& value) { out += (out.empty() ? "" : ", ") + std::string(name) + "=" + value; };
  if (f_.memory_bytes) add("memory_bytes", std::to_string(*f_.memory_bytes));
  if (f_.cpus) add("cpus", number_text(*f_.cpus));
  if (f_.processes) add("processes", std::to_string(*f_.processes));
  if (f_.ttl) add("ttl", std::to_string(f_.ttl->count()) + "s");
  if (f_.idle_timeout) add("idle_timeout", std::to_string(f_.idle_timeout->count()) + "s");
  return out.empty() ? "none" : out;
}

}  // namespace maf::sandbox

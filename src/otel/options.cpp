// OtlpOptions from the standard OpenTelemetry variables (otel.hpp, docs/observability.md).
#include <cstdlib>
#include <string>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/otel.hpp"

namespace maf::sandbox::otel {
namespace {

std::optional<std::string> variable(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

/// `OTEL_EXPORTER_OTLP_ENDPOINT` is a base URL: the signal path is appended to it.
std::string traces_url(std::string base) {
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/v1/traces";
}

}  // namespace

std::optional<OtlpOptions> OtlpOptions::from_environment() {
  const auto traces = variable("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const auto base = variable("OTEL_EXPORTER_OTLP_ENDPOINT");
  if (!traces && !base) return std::nullopt;
  // This exporter speaks OTLP/HTTP JSON only; a collector set up for gRPC or protobuf would
  // reject every batch, so say so now rather than lose every span.
  for (const char* name : {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"}) {
    if (const auto protocol = variable(name)) {
      if (*protocol != "http/json")
        throw ValueError(std::string(name) + "='" + *protocol +
                         "' is not supported: maf-sandbox-otel exports OTLP over http/json only");
      break;  // the signal-specific variable wins
    }
  }
  OtlpOptions options;
  options.endpoint = traces ? *traces : traces_url(*base);
  if (const auto headers = variable("OTEL_EXPORTER_OTLP_HEADERS")) options.headers = parse_otlp_headers(*headers);
  if (const auto service = variable("OTEL_SERVICE_NAME")) options.service_name = *service;
  if (const auto parent = variable("TRACEPARENT")) options.parent = parse_traceparent(*parent);
  return options;
}

std::shared_ptr<OtlpExporter> exporter_from_environment() {
  auto options = OtlpOptions::from_environment();
  if (!options) return nullptr;
  return std::make_shared<OtlpExporter>(std::move(*options));
}

}  // namespace maf::sandbox::otel

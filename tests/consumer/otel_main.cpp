// Proves the installed otel component is usable: find_package(maf-sandbox COMPONENTS otel)
// found maf::sandbox-otel, its header resolves and the library links and runs — an exporter
// whose collector is not there accepts an event, loses its span (counted) and flushes.
#include <maf/sandbox/otel.hpp>

#include <iostream>
#include <memory>

int main() {
  using namespace maf::sandbox;
  try {
    otel::OtlpExporter bad(otel::OtlpOptions{});
    std::cerr << "an exporter without an endpoint was created\n";
    return 1;
  } catch (const std::exception& e) {
    std::cout << "empty endpoint refused: " << e.what() << "\n";
  }
  otel::OtlpOptions o;
  o.endpoint = "http://127.0.0.1:9/v1/traces";  // discard: nothing listens on loopback
  o.timeout = std::chrono::milliseconds(500);
  auto exporter = std::make_shared<otel::OtlpExporter>(o);
  ObserverSet observers({exporter});
  ExecEvent exec;
  exec.exit_code = 0;
  emit(&observers, exec);
  if (!exporter->flush(std::chrono::seconds(10))) {
    std::cerr << "the exporter did not flush\n";
    return 1;
  }
  const auto stats = exporter->stats();
  if (stats.events_accepted != 1 || stats.spans_exported + stats.spans_lost != 1) {
    std::cerr << "unexpected exporter counts: accepted " << stats.events_accepted << ", exported "
              << stats.spans_exported << ", lost " << stats.spans_lost << "\n";
    return 1;
  }
  std::cout << "otel consumer ok: " << otel::to_string(otel::parse_traceparent(
                                           "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
            << "\n";
  return 0;
}

// READ_CAP (this port's own, core.md C-47 and docker DX-4): a read over its cap is refused,
// never truncated. FILES_OUT reads only small files under a 1 MiB cap, so without this suite
// a backend that hands back the first max_bytes bytes of a longer file would pass everything.
#include <array>

#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr std::size_t kOverCapSize = 4096;
constexpr std::int64_t kSmallCap = 100;
constexpr std::string_view kFixture = "cap/over-cap.bin";

std::string fixture_bytes() {
  std::string bytes(kOverCapSize, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>('a' + i % 26);
  return bytes;
}

void over_cap_is_refused(ProbeContext& c) {
  try {
    const auto bytes = read(c, std::string(kFixture), {}, kSmallCap);
    fail("read of a " + std::to_string(kOverCapSize) + "-byte file with max_bytes=" + std::to_string(kSmallCap) +
         " returned " + std::to_string(bytes.size()) + " bytes instead of raising SandboxTransferCapExceeded" +
         (bytes.size() <= static_cast<std::size_t>(kSmallCap) ? " (truncated)" : ""));
  } catch (const SandboxTransferCapExceeded&) {
    return;
  } catch (const ProbeFailed&) {
    throw;
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    fail("read over the cap raised " + type_name(e) + " (" + e.what() + "), not SandboxTransferCapExceeded");
  }
}

void at_cap_reads_everything(ProbeContext& c) {
  const auto bytes = read(c, std::string(kFixture), {}, static_cast<std::int64_t>(kOverCapSize));
  if (bytes != fixture_bytes())
    fail("read with max_bytes equal to the file size returned " + std::to_string(bytes.size()) + " bytes, not the " +
         std::to_string(kOverCapSize) + " planted");
}

constexpr std::array<Probe, 2> kProbes{{
    {Suite::ReadCap, "CAP-1", "an-over-cap-read-is-refused-not-truncated",
     "a truncated file is silently wrong data: the caller cannot tell it from the real thing (C-47)",
     {Capability::FilesOut}, over_cap_is_refused},
    {Suite::ReadCap, "CAP-2", "a-read-at-the-cap-returns-every-byte",
     "positive control: a backend that refuses every bounded read, or loses the last byte, passes CAP-1",
     {Capability::FilesOut}, at_cap_reads_everything},
}};

}  // namespace

std::span<const Probe> read_cap_probes() { return kProbes; }

void plant_read_cap_fixture(ConformanceSubject& subject, const ConformancePaths& paths) {
  subject.plant_file(paths.in_work(kFixture), fixture_bytes());
}

}  // namespace maf::sandbox::conformance::detail

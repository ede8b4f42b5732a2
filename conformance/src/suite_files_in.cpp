// FILES_IN (FI-1…FI-12): a write lands exactly, byte for byte, where it was aimed,
// and nowhere else. Verified through exec, not through the pull surface under test.
//
// Deviation (documented in docs/conformance.md): presence checks of `outside` run from W with
// a relative path through beyond(), not with the working directory set to `outside`, which
// may not exist — a backend that refuses a missing working directory is not failed for it.
#include <array>

#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kIn{Capability::FilesIn};

std::string cat(ProbeContext& c, const std::string& path, std::string wd = {}) {
  auto r = exec(c, std::vector<std::string>{"cat", path}, std::move(wd));
  if (r.exit_code != 0) fail("cat " + path + " failed: " + describe(r));
  return r.stdout_bytes;
}

/// A refusal probe's verdict: the write must have been refused with a confinement refusal
/// (`problem` says otherwise) *and* must have done no `harm`.
void judge(const std::optional<std::string>& problem, bool harmed, const std::string& harm) {
  if (problem || harmed)
    fail((problem ? *problem : std::string("the write was refused")) + (harmed ? "; and " + harm : std::string()));
}

void write_lands(ProbeContext& c) {
  write(c, c.paths.in_work("real/written.txt"), "written");
  if (!is_file(c, "real/written.txt")) fail("real/written.txt is not visible to the guest after write_file");
  const auto text = cat(c, "real/written.txt");
  if (text != "written") fail("the guest reads " + quoted(text) + ", not 'written'");
}

void bytes_round_trip(ProbeContext& c) {
  const auto payload = fidelity_payload();
  write(c, c.paths.in_work("binary.bin"), payload);
  const auto got = cat(c, "binary.bin");
  if (got != payload) {
    std::size_t i = 0;
    while (i < got.size() && i < payload.size() && got[i] == payload[i]) ++i;
    fail("the guest reads " + std::to_string(got.size()) + " bytes, " + std::to_string(payload.size()) +
         " were written; first difference at offset " + std::to_string(i));
  }
}

void text_is_utf8(ProbeContext& c) {
  const std::string text = "na\xC3\xAFve caf\xC3\xA9";  // "naïve café"
  write(c, c.paths.in_work("text.txt"), text);
  const auto got = cat(c, "text.txt");
  if (got != text) fail("the guest reads " + quoted(got) + ", not the UTF-8 text written");
}

void second_write_replaces(ProbeContext& c) {
  write(c, c.paths.in_work("overwritten.txt"), "first");
  write(c, c.paths.in_work("overwritten.txt"), "second");
  const auto got = cat(c, "overwritten.txt");
  if (got != "second") fail("after writing 'first' then 'second' the guest reads " + quoted(got));
}

void parents_created(ProbeContext& c) {
  write(c, c.paths.in_work("deep/er/est/leaf.txt"), "leaf");
  if (!is_file(c, "deep/er/est/leaf.txt")) fail("deep/er/est/leaf.txt is absent after write_file");
}

void outside_refused(ProbeContext& c) {
  const auto target = c.paths.beyond("planted.txt");
  auto problem = refusal_problem<ValueError>("write " + target, kConfinement, [&] { write(c, target, "planted"); });
  const bool landed = present(c, target);
  judge(problem, landed, target + " exists outside the working directory");
}

void marker(ProbeContext& c) { c.subject.plant_file(c.paths.in_work(".probe-cwd"), ""); }

void linked_parent_refused(ProbeContext& c) {
  marker(c);
  c.subject.plant_file(c.paths.in_outside("marker.txt"), "marker");
  c.subject.plant_symlink(c.paths.link_dir, c.paths.outside);
  auto problem = refusal_problem<ValueError>("write link-dir/landed.txt", kConfinement,
                                             [&] { write(c, c.paths.in_work("link-dir/landed.txt"), "landed"); });
  const bool landed = present(c, c.paths.beyond("landed.txt"));
  judge(problem, landed, "landed.txt exists outside (the write followed the link)");
}

void linked_destination_refused(ProbeContext& c) {
  marker(c);
  const auto target = c.paths.in_outside("target.txt");
  c.subject.plant_file(target, "known");
  c.subject.plant_symlink(c.paths.link_file, target);
  auto problem = refusal_problem<ValueError>("write link-file", kConfinement,
                                             [&] { write(c, c.paths.link_file, "changed"); });
  const auto now = cat(c, target, "/");
  judge(problem, now != "known", "the link's target now holds " + quoted(now));
}

void working_directory_refused(ProbeContext& c) {
  write(c, "control.txt", "control");
  auto problem = refusal_problem<ValueError>("write .", kConfinement, [&] { write(c, ".", "replaced"); });
  const bool control = present(c, "control.txt");
  judge(problem, !control, "control.txt is gone (the working directory was replaced)");
}

void backslash_refused(ProbeContext& c) {
  expect_confinement("write sub\\file.txt", [&] { write(c, "sub\\file.txt", "backslash"); });
}

void linked_working_directory(ProbeContext& c) {
  marker(c);
  c.subject.plant_symlink(c.paths.link_dir, c.paths.outside);
  auto problem = refusal_problem<ValueError>("write landed.txt from wd link-dir", kConfinement,
                                             [&] { write(c, "landed.txt", "landed", c.paths.link_dir); });
  const bool landed = present(c, c.paths.beyond("landed.txt"));
  judge(problem, landed, "landed.txt exists outside (the write was redirected)");
}

void linked_ancestor_of_wd(ProbeContext& c) {
  marker(c);
  c.subject.plant_symlink(c.paths.link_dir, c.paths.outside);
  auto problem = refusal_problem<ValueError>("write landed.txt from wd link-dir/sub", kConfinement,
                                             [&] { write(c, "landed.txt", "landed", c.paths.under_link); });
  const bool landed = present(c, c.paths.in_outside("sub/landed.txt"), "/");
  judge(problem, landed, "sub/landed.txt exists outside (the write was redirected)");
}

constexpr std::array<Probe, 12> kProbes{{
    {Suite::FilesIn, "FI-1", "a-write-lands-and-reads-back",
     "positive control: without it a backend that writes nowhere passes every refusal", kIn, write_lands},
    {Suite::FilesIn, "FI-2", "bytes-survive-the-round-trip",
     "a push must not translate line ends, re-encode text or stop at a NUL", kIn, bytes_round_trip},
    {Suite::FilesIn, "FI-3", "str-content-is-utf8", "text is UTF-8 whatever the host's locale", kIn, text_is_utf8},
    {Suite::FilesIn, "FI-4", "a-second-write-replaces", "a write replaces; appending corrupts the workload's input",
     kIn, second_write_replaces},
    {Suite::FilesIn, "FI-5", "parents-are-created", "callers write nested paths without preparing directories", kIn,
     parents_created},
    {Suite::FilesIn, "FI-6", "a-path-outside-is-refused",
     "a relative path that climbs out of the working directory must be refused before anything is written", kIn,
     outside_refused},
    {Suite::FilesIn, "FI-7", "a-path-through-a-linked-parent-is-refused",
     "a guest-planted link as a parent component redirects the write outside", kIn, linked_parent_refused},
    {Suite::FilesIn, "FI-8", "a-linked-destination-is-refused-not-followed",
     "writing through a final link overwrites whatever the guest pointed it at", kIn, linked_destination_refused},
    {Suite::FilesIn, "FI-9", "the-working-directory-is-refused",
     "'.' names the working directory itself; writing it would replace the whole tree", kIn,
     working_directory_refused},
    {Suite::FilesIn, "FI-10", "a-backslash-is-refused",
     "a backslash is a separator on some hosts: the guest grammar is POSIX, so it is refused, not guessed", kIn,
     backslash_refused},
    {Suite::FilesIn, "FI-11", "a-linked-working-directory",
     "the working directory itself can be a link the guest planted", kIn, linked_working_directory},
    {Suite::FilesIn, "FI-12", "a-linked-ancestor-of-the-working-directory",
     "a check that starts at the working directory misses a link above it", kIn, linked_ancestor_of_wd},
}};

}  // namespace

std::span<const Probe> files_in_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail

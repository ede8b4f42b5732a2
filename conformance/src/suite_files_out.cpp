// FILES_OUT (FO-1…FO-12): the pull surface must name links as links, never read
// through one, and refuse every path whose directory chain contains one.
#include <array>

#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kOut{Capability::FilesOut};
constexpr CapabilitySet kOutList{Capability::FilesOut, Capability::FilesList};

void legitimate_read(ProbeContext& c) {
  auto entry = stat(c, "real/inside.txt");
  if (!entry) fail("stat real/inside.txt found nothing: the layout never landed");
  if (entry->kind != EntryKind::File)
    fail("stat real/inside.txt reported kind " + std::string(to_string(entry->kind)) + ", not file");
  if (entry->size_bytes != static_cast<std::int64_t>(kInsideBytes.size()))
    fail("stat real/inside.txt reported size " +
         (entry->size_bytes ? std::to_string(*entry->size_bytes) : std::string("none")) + ", not " +
         std::to_string(kInsideBytes.size()));
  const auto bytes = read(c, "real/inside.txt");
  if (bytes != kInsideBytes) fail("read real/inside.txt returned " + quoted(bytes) + ", not the planted control");
}

void link_is_named(ProbeContext& c) {
  auto entry = stat(c, "link-file");
  if (!entry) fail("stat link-file found nothing");
  if (entry->kind != EntryKind::Symlink)
    fail("stat link-file reported kind " + std::string(to_string(entry->kind)) + ", not symlink");
  if (entry->size_bytes) fail("stat link-file reported a size (" + std::to_string(*entry->size_bytes) + "); a link has none");
}

void link_never_read(ProbeContext& c) {
  if (auto p = refusal_problem<OSError>("read link-file", kIoRefusal, [&] { return read(c, "link-file"); })) {
    if (p->find("returned") != std::string::npos) fail(*p + " (the link's target was read out)");
    fail(*p);
  }
}

void stat_linked_parent(ProbeContext& c) {
  expect_confinement("stat link-dir/secret.txt", [&] { stat(c, "link-dir/secret.txt"); });
}

void read_linked_parent(ProbeContext& c) {
  expect_confinement("read link-dir/secret.txt", [&] { read(c, "link-dir/secret.txt"); });
}

void fail_if_any(const std::vector<std::optional<std::string>>& problems) {
  std::string all;
  for (const auto& p : problems)
    if (p) all += (all.empty() ? "" : "; ") + *p;
  if (!all.empty()) fail(all);
}

void linked_working_directory(ProbeContext& c) {
  const auto wd = c.paths.link_dir;
  fail_if_any({refusal_problem<ValueError>("stat secret.txt from wd link-dir", kConfinement,
                                           [&] { stat(c, "secret.txt", wd); }),
               refusal_problem<ValueError>("read secret.txt from wd link-dir", kConfinement,
                                           [&] { read(c, "secret.txt", wd); })});
}

void linked_ancestor_of_wd(ProbeContext& c) {
  const auto wd = c.paths.under_link;
  fail_if_any({refusal_problem<ValueError>("stat leaf.txt from wd link-dir/sub", kConfinement,
                                           [&] { stat(c, "leaf.txt", wd); }),
               refusal_problem<ValueError>("read leaf.txt from wd link-dir/sub", kConfinement,
                                           [&] { read(c, "leaf.txt", wd); })});
}

void plain_parent(ProbeContext& c) {
  expect_refusal<NotADirectoryError>("stat plain.txt/deeper.txt", kNotADirectory,
                                     [&] { stat(c, "plain.txt/deeper.txt"); });
}

void list_linked_dir(ProbeContext& c) {
  expect_confinement("list link-dir", [&] { list(c, "link-dir"); });
}

void list_through_linked_parent(ProbeContext& c) {
  expect_confinement("list link-dir/sub", [&] { list(c, "link-dir/sub"); });
}

void list_under_linked_ancestor(ProbeContext& c) {
  expect_confinement("list . from wd link-dir/sub", [&] { list(c, ".", c.paths.under_link); });
}

void listing_names_links(ProbeContext& c) {
  const auto entries = list(c, ".");
  for (const auto& e : entries) {
    if (e.path != "link-file") continue;
    if (e.kind == EntryKind::Symlink) return;
    fail("list . reported link-file as " + std::string(to_string(e.kind)) + ", not symlink");
  }
  std::string names;
  for (const auto& e : entries) names += (names.empty() ? "" : ", ") + e.path;
  fail("list . does not name link-file (entries: " + names + ")");
}

constexpr std::array<Probe, 12> kProbes{{
    {Suite::FilesOut, "FO-1", "a-legitimate-read-still-works",
     "positive control: without it a backend that refuses everything, or a layout that never landed, passes",
     kOut, legitimate_read},
    {Suite::FilesOut, "FO-2", "a-link-is-named-a-link",
     "a caller deciding what to read must see a link as a link, and a link's size (its target string) is no file size",
     kOut, link_is_named},
    {Suite::FilesOut, "FO-3", "a-link-is-never-read",
     "reading through a final link hands the guest's chosen file (e.g. a host secret) to the caller", kOut,
     link_never_read},
    {Suite::FilesOut, "FO-4", "stat-through-a-linked-parent",
     "a linked parent directory redirects the path outside the working directory; even its type and size leak",
     kOut, stat_linked_parent},
    {Suite::FilesOut, "FO-5", "read-through-a-linked-parent",
     "a linked parent directory redirects the read outside the working directory", kOut, read_linked_parent},
    {Suite::FilesOut, "FO-6", "a-linked-working-directory",
     "the working directory itself can be the link; a check that starts below it misses that", kOut,
     linked_working_directory},
    {Suite::FilesOut, "FO-7", "a-linked-ancestor-of-the-working-directory",
     "a check that starts at the working directory passes FO-6 and misses a link above it", kOut,
     linked_ancestor_of_wd},
    {Suite::FilesOut, "FO-8", "a-plain-parent-is-not-an-escape",
     "a file where a directory is expected is the caller's mistake, not an attack: it must not be reported as one",
     kOut, plain_parent},
    {Suite::FilesOut, "FO-9", "listing-a-linked-directory",
     "listing a linked directory enumerates whatever it points at", kOutList, list_linked_dir},
    {Suite::FilesOut, "FO-10", "listing-through-a-linked-parent",
     "a linked parent redirects a listing outside the working directory", kOutList, list_through_linked_parent},
    {Suite::FilesOut, "FO-11", "listing-under-a-linked-ancestor",
     "a listing from a working directory below a link enumerates the link's target", kOutList,
     list_under_linked_ancestor},
    {Suite::FilesOut, "FO-12", "a-listing-names-its-links",
     "a listing that hides links, or reports them as files, invites the caller to read through them", kOutList,
     listing_names_links},
}};

}  // namespace

std::span<const Probe> files_out_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail

#include "maf/sandbox/conformance/layout.hpp"

#include <stdexcept>

#include "maf/sandbox/conformance/results.hpp"
#include "maf/sandbox/conformance/subject.hpp"
#include "maf/sandbox/paths.hpp"

namespace maf::sandbox::conformance {

ConformancePaths ConformancePaths::from(std::string_view working_directory) {
  ConformancePaths p;
  p.work = normalize_guest_path(working_directory);
  if (p.work.empty() || p.work.front() != '/' || p.work == "/")
    throw ConformanceUsageError("conformance working directory '" + std::string(working_directory) +
                                "' must be an absolute guest path below '/'");
  p.outside = p.work + "-outside";
  p.secret = p.outside + "/secret.txt";
  p.nested_secret = p.outside + "/sub/leaf.txt";
  p.inside = p.work + "/real/inside.txt";
  p.plain = p.work + "/plain.txt";
  p.link_dir = p.work + "/link-dir";
  p.under_link = p.link_dir + "/sub";
  p.link_file = p.work + "/link-file";
  return p;
}

std::string ConformancePaths::beyond(std::string_view name) const {
  // outside is W's sibling, so one ".." and its last segment reach it from W.
  const std::string sibling = outside.substr(outside.rfind('/') + 1);
  return "../" + sibling + "/" + std::string(name);
}

std::string ConformancePaths::in_work(std::string_view relative) const { return work + "/" + std::string(relative); }
std::string ConformancePaths::in_outside(std::string_view relative) const {
  return outside + "/" + std::string(relative);
}

void plant_layout(ConformanceSubject& subject, const ConformancePaths& paths) {
  subject.plant_file(paths.inside, kInsideBytes);
  subject.plant_file(paths.plain, "a file standing where a directory is expected");
  subject.plant_file(paths.secret, kSecretBytes);
  subject.plant_file(paths.nested_secret, kSecretBytes);
  subject.plant_symlink(paths.link_dir, paths.outside);
  subject.plant_symlink(paths.link_file, paths.secret);
}

}  // namespace maf::sandbox::conformance

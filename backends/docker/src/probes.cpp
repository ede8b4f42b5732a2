// The command probes of an acquire (D-24): fixed argv, expected exits, successes remembered
// per container and, for a container this acquire created, per image (memory.hpp).
#include "probes.hpp"

#include <random>
#include <sstream>

#include "freeze.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "memory.hpp"

namespace maf::sandbox::docker {
namespace detail {

std::vector<std::string> probe_names(CapabilitySet needs) {
  std::vector<std::string> out;
  if (needs.contains(Capability::HostTools)) out.emplace_back("host-tools");
  else if (needs.contains(Capability::Exec) || needs.contains(Capability::ExecStream)) out.emplace_back("sh");
  if (needs.contains(Capability::FilesDelete)) out.emplace_back("rm");
  return out;
}

}  // namespace detail

namespace {

std::string random_hex() {
  std::random_device rd;
  std::ostringstream out;
  out << std::hex;
  for (int i = 0; i < 4; ++i) out << rd();
  return out.str();
}

std::string capability_names(CapabilitySet set) {
  std::string out;
  for (Capability c : {Capability::Exec, Capability::FilesIn, Capability::FilesOut, Capability::FilesDelete,
                       Capability::HostTools})
    if (set.contains(c)) out += (out.empty() ? "" : ", ") + std::string(to_string(c));
  return out;
}

}  // namespace

boost::asio::awaitable<void> DockerSandboxBackend::run_probes(const std::string& container, const std::string& id,
                                                              const std::string& fresh_image, const SandboxSpec& spec,
                                                              const std::string& image) {
  const auto needs = spec.requires_capabilities();
  struct Probe {
    const char* name;
    std::vector<std::string> argv;
  };
  std::vector<Probe> probes;
  const std::string scratch = "/.maf-command-probe-" + random_hex();
  if (needs.contains(Capability::HostTools))
    probes.push_back({"host-tools",
                      {"sh", "-c",
                       "mkdir -p / || exit 11\n"
                       "mv -f " + scratch + " " + scratch + "-to 2>/dev/null; [ $? -eq 1 ] || exit 12\n"
                       "nohup sh -c 'exit 0' </dev/null >/dev/null 2>&1 || exit 13\n"}});
  else if (needs.contains(Capability::Exec))
    probes.push_back({"sh", {"sh", "-c", "exit 0"}});
  if (needs.contains(Capability::FilesDelete)) probes.push_back({"rm", {"rm", "-rf", "--"}});
  auto slot = detail::freeze_slot(co_await transport_->endpoint(), container);
  // Successes are remembered per container ID (D-24), and — for a container this acquire
  // just created — per image ID as well: a fresh container of an image holds exactly that
  // image's files, so it passes what the image passed (issue 24; a failure is never remembered).
  const auto passed = [&](const std::string& name) {
    return memory_->probe_passed(container, id, fresh_image, name);
  };
  for (auto& probe : probes) {
    // host-tools passing also verifies sh (D-24).
    if (passed(probe.name) || (std::string(probe.name) == "sh" && passed("host-tools"))) {
      memory_->record_probe(container, id, std::string(), probe.name);
      continue;
    }
    // The backend is the sentence's subject here: "backend 'docker' cannot serve …" (no said()).
    const std::string what = "backend 'docker' cannot serve capabilities {" + capability_names(needs) +
                             "} for workload kind '" + spec.kind() + "' on image '" + image + "': command probe '" +
                             probe.name + "' ";
    ExecOutcome outcome;
    try {
      outcome = co_await detail::exec_respecting_freeze(*transport_, *slot, [&] {
        ExecCall call;
        call.container = container;
        call.argv = probe.argv;
        call.working_directory = "/";
        call.timeout = config_.command_timeout();
        call.max_stdout = call.max_stderr = 64 * 1024;
        return call;
      });
    } catch (const Error& e) {
      throw SandboxCapabilityNotSupported(what + "did not complete (" + e.what() + "); the next acquire retries");
    }
    if (outcome.exit_code != 0)
      throw SandboxCapabilityNotSupported(what + "exited " + std::to_string(outcome.exit_code) +
                                          ", expected 0; the next acquire retries");
    memory_->record_probe(container, id, fresh_image, probe.name);
  }
}

}  // namespace maf::sandbox::docker

#pragma once
// A subject for the in-process double (test-only). The double runs no program, so it plants
// through its seed API (a seeded link has no target, which FILES_OUT does not need) and it
// serves only the suites that never exec: FILES_OUT and READ_CAP. FILES_IN, FILES_DELETE and
// EXEC verify through a real guest, EGRESS and EGRESS_CLOSED need a network: its guest-side
// moves throw, so a suite run against it that needed one fails loudly instead of passing.
#include <memory>
#include <stdexcept>

#include "maf/sandbox/conformance/subject.hpp"
#include "maf/sandbox/testing/in_process.hpp"

namespace maf::sandbox::conformance::test {

class InProcessSubject : public ConformanceSubject {
public:
  InProcessSubject(BlockingRunner& runner, std::shared_ptr<testing::InProcessSandbox> sandbox,
                   std::optional<CapabilitySet> capabilities = {})
      : runner_(runner), sandbox_(std::move(sandbox)), caps_(capabilities.value_or(sandbox_->capabilities())) {}

  Sandbox& sandbox() override { return *sandbox_; }
  BlockingRunner& runner() override { return runner_; }
  std::string working_directory() const override { return sandbox_->storage_base(); }
  CapabilitySet capabilities() const override { return caps_; }
  std::optional<Egress> enforced_egress() const override { return std::nullopt; }

  void plant_file(const std::string& path, std::string_view bytes) override { sandbox_->seed(path, std::string(bytes)); }
  void plant_symlink(const std::string& path, const std::string&) override { sandbox_->seed(path, EntryKind::Symlink); }

  FetchOutcome fetch_url(const std::string&, std::chrono::milliseconds) override { throw no_guest(); }
  GuestAttempt connect_tcp(const std::string&, std::uint16_t, std::chrono::milliseconds) override { throw no_guest(); }
  GuestAttempt query_dns(const std::string&, std::uint16_t, std::string_view, std::chrono::milliseconds) override {
    throw no_guest();
  }

private:
  static std::logic_error no_guest() { return std::logic_error("the in-process double runs no guest program"); }
  BlockingRunner& runner_;
  std::shared_ptr<testing::InProcessSandbox> sandbox_;
  CapabilitySet caps_;
};

}  // namespace maf::sandbox::conformance::test

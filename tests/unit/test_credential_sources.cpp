// credential_source_from (docs/policy.md CRED-10): values from the host's environment or a
// file, read when asked; every failure names the credential and where it looked, never a value.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "maf/sandbox/credential_sources.hpp"
#include "maf/sandbox/errors.hpp"

using namespace maf::sandbox;
namespace fs = std::filesystem;

namespace {
CredentialRequest request(const std::string& name) { return CredentialRequest{name, "process", "k", "s", "t", {"h"}}; }
}  // namespace

TEST_CASE("CRED-10: a binding of another shape is a ValueError naming the credential") {
  CHECK_THROWS_MATCHES(credential_source_from({{"api", "API_VALUE"}}), ValueError,
                       Catch::Matchers::Message(
                           "credential 'api': 'API_VALUE' names no source; give env:VARIABLE (the host's environment) "
                           "or file:PATH"));
  CHECK_THROWS_AS(credential_source_from({{"api", "env:"}}), ValueError);
  CHECK_THROWS_AS(credential_source_from({{"api", "vault:x"}}), ValueError);
}

TEST_CASE("CRED-10: env: and file: values are read when asked; failures never quote a value") {
  const fs::path file = fs::temp_directory_path() / ("maf-cred-src-" + std::to_string(::getpid()));
  std::ofstream(file) << "from-the-file\n";
  ::setenv("MAF_TEST_CRED_SRC", "first", 1);
  const auto source = credential_source_from({{"api", "env:MAF_TEST_CRED_SRC"}, {"git", "file:" + file.string()}});
  CHECK(source(request("api")).reveal() == "first");
  ::setenv("MAF_TEST_CRED_SRC", "rotated", 1);  // read when asked, never cached
  CHECK(source(request("api")).reveal() == "rotated");
  CHECK(source(request("git")).reveal() == "from-the-file");  // one trailing newline removed

  CHECK_THROWS_MATCHES(source(request("other")), SandboxCredentialUnavailable,
                       Catch::Matchers::Message("no source is named for credential 'other'"));
  ::unsetenv("MAF_TEST_CRED_SRC");
  CHECK_THROWS_WITH(source(request("api")), Catch::Contains("MAF_TEST_CRED_SRC is unset") &&
                                                !Catch::Contains("rotated"));
  fs::remove(file);
  CHECK_THROWS_WITH(source(request("git")), Catch::Contains("credential 'git'") && Catch::Contains("cannot be read"));
}

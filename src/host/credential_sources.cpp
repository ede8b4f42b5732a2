// credential_source_from (credential_sources.hpp; docs/policy.md CRED-10). The value is
// read when the backend asks, so a rotated variable or file is seen by the next proxy; the
// messages name the credential and where it was looked for, never what was found there.
#include "maf/sandbox/credential_sources.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/host.hpp"
#include "maf/sandbox/router.hpp"

namespace maf::sandbox {

CredentialSource credential_source_from(std::map<std::string, std::string> bindings) {
  for (const auto& [name, where] : bindings) {
    const auto colon = where.find(':');
    const std::string how = colon == std::string::npos ? "" : where.substr(0, colon);
    if ((how != "env" && how != "file") || colon + 1 >= where.size())
      throw ValueError("credential '" + name + "': '" + where +
                       "' names no source; give env:VARIABLE (the host's environment) or file:PATH");
  }
  return [bindings = std::move(bindings)](const CredentialRequest& request) {
    const auto it = bindings.find(request.credential);
    if (it == bindings.end())
      throw SandboxCredentialUnavailable("no source is named for credential '" + request.credential + "'");
    const std::string& where = it->second;
    const std::string what = where.substr(where.find(':') + 1);
    if (where.rfind("env:", 0) == 0) {
      const char* value = std::getenv(what.c_str());
      if (!value || !*value)
        throw SandboxCredentialUnavailable("credential '" + request.credential + "': the host's environment variable " +
                                           what + " is unset or empty");
      return SecretValue(value);
    }
    std::ifstream in(what, std::ios::binary);
    if (!in)
      throw SandboxCredentialUnavailable("credential '" + request.credential + "': file '" + what +
                                         "' cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    std::string value = text.str();
    if (!value.empty() && value.back() == '\n') value.pop_back();
    if (!value.empty() && value.back() == '\r') value.pop_back();
    SecretValue secret(std::move(value));
    return secret;
  };
}

void attach_credential_source(SandboxHost& host, CredentialSource source) {
  host.router().attach_credential_source(source);
}

}  // namespace maf::sandbox

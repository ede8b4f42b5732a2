// The public credential vocabulary; see maf/sandbox/acas/credentials.hpp.
#include "maf/sandbox/acas/credentials.hpp"

namespace maf::sandbox::acas {
namespace {

class StaticTokenSource final : public AcasTokenSource {
public:
  explicit StaticTokenSource(std::string token) : token_(std::move(token)) {}
  boost::asio::awaitable<AcasAccessToken> get_token(std::string) override { co_return AcasAccessToken{token_, {}}; }

private:
  std::string token_;
};

}  // namespace

std::shared_ptr<AcasTokenSource> make_static_token_source(std::string token) {
  return std::make_shared<StaticTokenSource>(std::move(token));
}

std::string to_string(AcasCredentialOperation operation) {
  switch (operation) {
    case AcasCredentialOperation::Acquire: return "acquire";
    case AcasCredentialOperation::Dispose: return "dispose";
    case AcasCredentialOperation::DisposeScope: return "dispose_scope";
  }
  return "acquire";
}

}  // namespace maf::sandbox::acas

// The host side of interpreter contexts without a guest (docs/contexts.md CTX-1, CTX-9): the
// reader of a call's answer on hostile bytes, and the refusals made before anything runs.
#include <catch2/catch.hpp>

#include "background/context_driver.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"

using namespace maf::sandbox;

TEST_CASE("CTX-9: a well-formed answer is read whole: value, error, outputs decoded") {
  const auto r = detail::parse_context_answer(
      R"({"value": "42", "stdout": "hi\n", "stdout_truncated": false, "stderr": "", "stderr_truncated": true,)"
      R"( "error": {"name": "E", "value": "v", "traceback": "tb"},)"
      R"( "outputs": [{"mime": "image/png", "base64": "iVBORw0KGgo="}, {"mime": "text/html", "base64": "PGI+eDwvYj4="},)"
      R"( {"mime": "application/json", "base64": "e30="}], "outputs_truncated": true})");
  CHECK(r.value == std::optional<std::string>("42"));
  CHECK(r.stdout_text == "hi\n");
  CHECK(r.stderr_truncated);
  REQUIRE(r.error);
  CHECK(r.error->traceback == "tb");
  REQUIRE(r.outputs.size() == 3);
  CHECK(r.outputs[0].bytes == "\x89PNG\r\n\x1a\n");
  CHECK(r.outputs[1].bytes == "<b>x</b>");
  CHECK(r.outputs[2].bytes == "{}");
  CHECK(r.outputs_truncated);
}

TEST_CASE("CTX-9: an answer that is not what the driver writes is OSError, never half-read") {
  for (const std::string& bad : {
           std::string(""), std::string("not json"), std::string("[]"), std::string(R"({"stdout": ""})"),
           std::string(R"({"stdout": 1, "stderr": "", "outputs": []})"),
           std::string(R"({"stdout": "", "stderr": "", "outputs": {}})"),
           std::string(R"({"stdout": "", "stderr": "", "outputs": [1]})"),
           std::string(R"({"stdout": "", "stderr": "", "outputs": [{"mime": "x", "base64": "abc"}]})"),
           std::string(R"({"stdout": "", "stderr": "", "outputs": [{"mime": "x", "base64": "a!c="}]})"),
           std::string(R"({"stdout": "\udcff", "stderr": "", "outputs": []})"),
           std::string(R"({"stdout": "", "stderr": "", "error": "boom", "outputs": []})"),
           std::string(R"({"stdout": "", "stderr": "", "value": 7, "outputs": []})"),
       }) {
    INFO(bad);
    CHECK_THROWS_AS(detail::parse_context_answer(bad), OSError);
  }
}

TEST_CASE("CTX-1: create refuses an unknown language and a sandbox without background or exec_stdin, naming them") {
  BlockingRunner run;
  auto full = std::make_shared<testing::InProcessSandbox>(testing::InProcessSandboxOptions{
      .capabilities = {Capability::Exec, Capability::ExecStdin, Capability::Background}});
  CHECK_THROWS_WITH(run([&] { return InterpreterContext::create(full, "cobol"); }),
                    Catch::Contains("'cobol' is not offered"));
  auto no_stdin = std::make_shared<testing::InProcessSandbox>(
      testing::InProcessSandboxOptions{.capabilities = {Capability::Exec, Capability::Background}});
  CHECK_THROWS_WITH(run([&] { return InterpreterContext::create(no_stdin, "python"); }),
                    Catch::Contains("does not declare capability 'exec_stdin'"));
  auto no_background = std::make_shared<testing::InProcessSandbox>(
      testing::InProcessSandboxOptions{.capabilities = {Capability::Exec, Capability::ExecStdin}});
  CHECK_THROWS_WITH(run([&] { return InterpreterContext::create(no_background, "python"); }),
                    Catch::Contains("does not declare capability 'background'"));
}

// Offline: the readers of service answers (response.hpp) refuse garbage with typed errors.
#include <catch2/catch.hpp>

#include "maf/sandbox/acas/backend.hpp"
#include "response.hpp"

using namespace maf::sandbox::acas;
using namespace maf::sandbox::acas::detail;

TEST_CASE("R-80/R-83: a list is a bare array or {value, nextLink}; null, {} and {value: null} are failures") {
  CHECK(parse_list_page("[1,2]", "list").items.size() == 2);
  auto page = parse_list_page(R"({"value":[1],"nextLink":"https://h/x?continuation=2"})", "list");
  CHECK(page.items.size() == 1);
  CHECK(page.next_link == "https://h/x?continuation=2");
  for (const char* bad : {"null", "{}", R"({"value":null})", "not json", "\"x\""})
    CHECK_THROWS_AS(parse_list_page(bad, "list"), AcasResponseInvalid);
}

TEST_CASE("A-22: exitCode must be an integer; stdout/stderr strings; absent fields default") {
  CHECK(parse_exec_answer(R"({"exitCode":3,"stdout":"a","stderr":"b"})").exit_code == 3);
  CHECK(parse_exec_answer("{}").exit_code == 0);
  for (const char* bad : {R"({"exitCode":true})", R"({"exitCode":1.5})", R"({"stdout":null})", "[]", "garbage"})
    CHECK_THROWS_AS(parse_exec_answer(bad), AcasResponseInvalid);
}

TEST_CASE("A-41: isDir and isSymlink must be JSON booleans; size only for files") {
  auto e = parse_entry(std::string_view(R"({"path":"/a","isDir":false,"isSymlink":false,"size":12})"));
  CHECK(e.kind == maf::sandbox::EntryKind::File);
  CHECK(e.size_bytes == 12);
  CHECK_FALSE(parse_entry(std::string_view(R"({"isDir":false,"isSymlink":false,"size":-1})")).size_bytes);
  CHECK_FALSE(parse_entry(std::string_view(R"({"isDir":false,"isSymlink":false,"size":true})")).size_bytes);
  CHECK(parse_entry(std::string_view(R"({"isDir":true,"isSymlink":true})")).kind == maf::sandbox::EntryKind::Symlink);
  CHECK_THROWS_AS(parse_entry(std::string_view(R"({"isDir":false})")), AcasEntryPayloadIncomplete);
  CHECK_THROWS_AS(parse_entry(std::string_view(R"({"isDir":false,"isSymlink":"false"})")), AcasEntryPayloadIncomplete);
  CHECK_THROWS_AS(parse_dir_listing(R"({"path":"/"})"), AcasEntryPayloadIncomplete);
}

TEST_CASE("R-52: the service's decoding turns each invalid run into one U+FFFD") {
  CHECK(decode_utf8_collapsing("ok\xff\xfe") == "ok\xEF\xBF\xBD");
  CHECK(decode_utf8_collapsing("a\xff" "b\xfe") == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  CHECK(decode_utf8_collapsing("\xE2\x82\xAC") == "\xE2\x82\xAC");
}

TEST_CASE("T-4: Retry-After seconds or x-ms-retry-after-ms, capped; dates and garbage are absent") {
  using std::chrono::milliseconds;
  CHECK(parse_retry_after("2", "", milliseconds(30000)) == milliseconds(2000));
  CHECK(parse_retry_after("2", "150", milliseconds(30000)) == milliseconds(150));
  CHECK(parse_retry_after("999999", "", milliseconds(30000)) == milliseconds(30000));
  CHECK_FALSE(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", "", milliseconds(30000)));
}

TEST_CASE("A-24: the capture manifest is accepted only in its exact shape") {
  auto m = parse_capture_manifest("tok 3 10 0\n", "tok", 100);
  CHECK(m.exit_code == 3);
  CHECK(m.stdout_size == 10);
  for (const char* bad : {"tok 3 10 0", "tok 3 10\n", "other 3 10 0\n", "tok 256 1 1\n", "tok 1 101 0\n", "tok -1 1 1\n"})
    CHECK_THROWS_AS(parse_capture_manifest(bad, "tok", 100), AcasResponseInvalid);
}

TEST_CASE("base64 round trip and refusal of garbage") {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  CHECK(base64_decode(base64_encode(all)) == all);
  CHECK(base64_decode("eA==") == "x");
  CHECK_THROWS_AS(base64_decode("e!=="), AcasResponseInvalid);
  CHECK_THROWS_AS(base64_decode("eA="), AcasResponseInvalid);
}

TEST_CASE("A-63: configuration refuses unknown keys, booleans as integers and non-positive numbers") {
  CHECK_THROWS_AS(parse_acas_config(nlohmann::json{{"endpiont", "x"}}), maf::sandbox::ValueError);
  CHECK_THROWS_AS(parse_acas_config(nlohmann::json{{"max_clients_per_loop", true}}), maf::sandbox::ValueError);
  CHECK_THROWS_AS(parse_acas_config(nlohmann::json{{"client_wait_seconds", 0}}), maf::sandbox::ValueError);
  CHECK(parse_acas_config(nlohmann::json::object()).read_timeout_seconds == 120);
}

TEST_CASE("§1.1 #4/#5: managed-identity keys are typed, and a bad IMDS endpoint is named") {
  CHECK_THROWS_AS(parse_acas_config(nlohmann::json{{"managed_identity", 1}}), maf::sandbox::ValueError);
  try {
    parse_acas_config(nlohmann::json{{"imds_endpoint", "169.254.169.254/token"}});
    FAIL("an endpoint without a scheme should be refused");
  } catch (const maf::sandbox::ValueError& e) {
    CHECK_THAT(e.what(), Catch::Contains("'169.254.169.254/token'"));
  }
  auto c = parse_acas_config(nlohmann::json{{"managed_identity", true}, {"managed_identity_client_id", "id-1"}});
  CHECK(c.managed_identity);
  CHECK(c.managed_identity_client_id == "id-1");
  CHECK(c.imds_endpoint == "http://169.254.169.254/metadata/identity/oauth2/token");
}

TEST_CASE("§1.1 #2: service-principal keys are typed; expires_in is read from a token answer") {
  CHECK_THROWS_AS(parse_acas_config(nlohmann::json{{"service_principal", "yes"}}), maf::sandbox::ValueError);
  CHECK_THROWS_AS(parse_acas_config(nlohmann::json{{"authority_host", "login.example"}}), maf::sandbox::ValueError);
  auto answer = parse_token_output(R"({"token_type": "Bearer", "expires_in": 3599, "access_token": "t"})");
  CHECK(answer.token == "t");
  CHECK(answer.expires_in == 3599);
  CHECK_FALSE(answer.expires_on.has_value());
}

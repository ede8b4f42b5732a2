// libFuzzer target: every reader of ACAS service answers (backends/acas/src/response.hpp)
// on arbitrary bytes. Each must either return or throw AcasResponseInvalid; anything else
// (another exception, a crash, a sanitizer report) is a finding. The readers are pure, so
// fuzz/CMakeLists.txt compiles backends/acas/src/response.cpp straight in (the fuzz preset
// builds no backends).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "maf/sandbox/acas/errors.hpp"
#include "response.hpp"

namespace {
template <class F>
void tolerate(F&& f) {
  try {
    f();
  } catch (const maf::sandbox::acas::AcasResponseInvalid&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace maf::sandbox::acas::detail;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  tolerate([&] { parse_sandbox_document(bytes); });
  tolerate([&] { parse_list_page(bytes, "list"); });
  tolerate([&] {
    for (const auto& item : parse_list_page(bytes, "list").items) {
      public_image_name(item);
      imported_image(item);
      tolerate([&] { parse_sandbox_document(item); });
      tolerate([&] { parse_entry(item); });
    }
  });
  tolerate([&] { parse_exec_answer(bytes); });
  tolerate([&] { parse_entry(bytes); });
  tolerate([&] { parse_dir_listing(bytes); });
  tolerate([&] { parse_token_output(bytes); });
  tolerate([&] { parse_capture_manifest(bytes, "maf-exec-0123", 1 << 20); });
  tolerate([&] { base64_decode(bytes); });
  problem_summary(bytes);
  decode_utf8_collapsing(bytes);
  parse_retry_after(bytes, bytes.substr(0, size / 2), std::chrono::milliseconds(30000));
  return 0;
}

# Every third-party dependency is found here, once, so the list a packager needs is in
# one place. Each is a Debian 12 package; scripts/setup installs them.
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)                 # libboost-dev (Asio, header-only)
find_package(nlohmann_json 3.10 REQUIRED)         # nlohmann-json3-dev
find_package(fmt 9 REQUIRED)                      # libfmt-dev
find_package(spdlog 1.10 REQUIRED)                # libspdlog-dev
find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto)   # libssl-dev (SHA-256 for label digests)
# libvalijson-dev: JSON Schema validation of tool arguments. Header-only and private to the
# core (src/tools/argument_schema.cpp), so neither a consumer nor the .deb needs it.
find_package(valijson REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)   # libutf8proc-dev
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)     # libseccomp-dev (process backend filter)
if(MAF_SANDBOX_BUILD_TESTS)
  find_package(Catch2 2.13 REQUIRED)              # catch2 (v2 API)
endif()

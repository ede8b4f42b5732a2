# Test helpers shared by tests/ and backends/*/: Catch2's main compiled once, and
# maf_add_test(<name> SOURCES <files...> LABELS <labels...> [LIBS <targets...>] [TIMEOUT s]),
# one executable per test file so a crash names its file.
enable_testing()
add_library(maf-test-main STATIC "${PROJECT_SOURCE_DIR}/tests/main.cpp")
target_link_libraries(maf-test-main PUBLIC Catch2::Catch2 maf::sandbox maf::sandbox-testing)
target_include_directories(maf-test-main PUBLIC "${PROJECT_SOURCE_DIR}/tests")

function(maf_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LABELS;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE maf-test-main ${ARG_LIBS})
  maf_enable_warnings(${name})
  add_test(NAME ${name} COMMAND ${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
endfunction()

# install(EXPORT) of maf::sandbox (and maf::sandbox-conformance, maf::sandbox-testing, maf::sandbox-otel), a version
# file, a config calling find_dependency, and pkg-config files (maf-sandbox, and
# maf-sandbox-otel for the exporter's library), modelled on spdlog's packaging. The .deb is
# cmake/Packaging.cmake.
include(CMakePackageConfigHelpers)
set(MAF_SANDBOX_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/maf-sandbox")

install(DIRECTORY include/ DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" FILES_MATCHING PATTERN "*.hpp")
install(TARGETS maf-sandbox EXPORT maf-sandbox-targets
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
# The conformance library goes into the same export set, so a backend author's own tests can
# `target_link_libraries(my-tests PRIVATE maf::sandbox-conformance)`. conformance/ installs
# the file itself; this rule adds the export (installing one target twice is harmless).
if(TARGET maf-sandbox-conformance)
  install(TARGETS maf-sandbox-conformance EXPORT maf-sandbox-targets
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# The in-process test double (maf::sandbox-testing): in the same export set, so a host's or a
# backend author's tests link it by name; production hosts never do.
if(TARGET maf-sandbox-testing)
  install(TARGETS maf-sandbox-testing EXPORT maf-sandbox-targets
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# The OTLP exporter (docs/observability.md): its own library in the same export set, so a
# host that exports links `maf::sandbox-otel` and one that does not links no HTTP client.
# libcurl is private to the shared library: a consumer needs no find_dependency for it.
if(TARGET maf-sandbox-otel)
  install(TARGETS maf-sandbox-otel EXPORT maf-sandbox-targets
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# Installed commands find libmaf-sandbox.so beside their bin/, so an extracted package or a
# relocated prefix runs without LD_LIBRARY_PATH (the CLI sets this itself).
if(TARGET maf-sandbox-conformance-tool)
  set_target_properties(maf-sandbox-conformance-tool PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()

install(EXPORT maf-sandbox-targets NAMESPACE maf:: DESTINATION "${MAF_SANDBOX_CMAKE_DIR}"
        FILE maf-sandbox-targets.cmake)

configure_package_config_file(cmake/maf-sandboxConfig.cmake.in
  "${CMAKE_CURRENT_BINARY_DIR}/maf-sandboxConfig.cmake"
  INSTALL_DESTINATION "${MAF_SANDBOX_CMAKE_DIR}")
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/maf-sandboxConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/maf-sandboxConfig.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/maf-sandboxConfigVersion.cmake"
        DESTINATION "${MAF_SANDBOX_CMAKE_DIR}")

# The .pc file locates the prefix from its own directory, so `cmake --install --prefix X`
# and an extracted .deb both give correct paths.
file(RELATIVE_PATH MAF_SANDBOX_PC_PREFIX_FROM_PCFILEDIR "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
string(REGEX REPLACE "/$" "" MAF_SANDBOX_PC_PREFIX_FROM_PCFILEDIR "${MAF_SANDBOX_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(cmake/maf-sandbox.pc.in "${CMAKE_CURRENT_BINARY_DIR}/maf-sandbox.pc" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/maf-sandbox.pc"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
# The exporter's own .pc, as it is its own library (`pkg-config maf-sandbox-otel` also
# gives the core's flags, through Requires).
if(TARGET maf-sandbox-otel)
  configure_file(cmake/maf-sandbox-otel.pc.in "${CMAKE_CURRENT_BINARY_DIR}/maf-sandbox-otel.pc" @ONLY)
  install(FILES "${CMAKE_CURRENT_BINARY_DIR}/maf-sandbox-otel.pc"
          DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endif()

# install(EXPORT) of maf::sandbox, a version file, a config calling find_dependency, and a
# pkg-config file, modelled on spdlog's packaging.
include(CMakePackageConfigHelpers)
set(MAF_SANDBOX_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/maf-sandbox")

install(DIRECTORY include/ DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" FILES_MATCHING PATTERN "*.hpp")
install(TARGETS maf-sandbox EXPORT maf-sandbox-targets
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
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

configure_file(cmake/maf-sandbox.pc.in "${CMAKE_CURRENT_BINARY_DIR}/maf-sandbox.pc" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/maf-sandbox.pc"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

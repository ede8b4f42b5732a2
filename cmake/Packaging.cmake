# CPack: a Debian package of whatever `cmake --install` lays out (cmake/Install.cmake and each
# component's install rules): headers, libmaf-sandbox.so with its SONAME, the plugins under
# <libdir>/maf-sandbox/plugins, the `maf-sandbox` command, the conformance library and runner,
# the CMake package and the pkg-config file. Built with
#   cpack --config <build>/CPackConfig.cmake -B <dir>
# and exercised by scripts/test.d/90-package.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "maf-sandbox")
set(CPACK_PACKAGE_VENDOR "maf-sandbox")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION
    "A C++20 library that gives AI-agent hosts one policy seam to code-execution sandboxes, with the bubblewrap process backend, the Docker backend, the maf-sandbox command and the conformance runner.")
set(CPACK_RESOURCE_FILE_README "${PROJECT_SOURCE_DIR}/README.md")
# The registry finds plugins next to libmaf-sandbox.so, so the package works wherever it is
# unpacked; configure a release package with -DCMAKE_INSTALL_PREFIX=/usr as well so the
# compiled-in fallback directory is /usr's too, not /usr/local's.
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
# Debug builds carry megabytes of DWARF; the package does not need it.
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "maf-sandbox maintainers <maf-sandbox@users.noreply.github.com>")
set(CPACK_DEBIAN_PACKAGE_SECTION "libs")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/maf-sandbox/maf-sandbox")
# Spelled out rather than computed by dpkg-shlibdeps so the list is reviewed; 90-package
# checks that every shared library the installed files load comes from one of these
# packages. bubblewrap is the process backend's boundary (run, not linked), with
# libseccomp2 (its filter, linked) and util-linux (setpriv, run to drop a root host to
# host_uid); libcurl4 is the ACAS backend's transport.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6, libstdc++6, libgcc-s1, libfmt9, libspdlog1.10, libutf8proc2, libssl3, libcurl4, libseccomp2, bubblewrap, util-linux")
# Building a host or a plugin against the headers needs the header-only dependencies too.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
    "libboost-dev (>= 1.74), nlohmann-json3-dev (>= 3.10), libfmt-dev, libspdlog-dev, docker.io")

include(CPack)

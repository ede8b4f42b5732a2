#pragma once
/// @file version.hpp
/// The core's version as a preprocessor string, so a plugin and the core each compute the
/// same build fingerprint (plugin.hpp) from their own compile.
///
/// It must equal `project(VERSION)` in the top-level CMakeLists.txt; src/plugins/registry.cpp
/// static_asserts that against the build's MAF_SANDBOX_VERSION, so a forgotten bump fails
/// the core's build instead of silently passing old plugins.

#define MAF_SANDBOX_VERSION_STRING "0.1.0"

#pragma once
/// @file conformance/conformance.hpp
/// Umbrella header of libmaf-sandbox-conformance: the suites every backend is held to.
/// No test framework inside: suites return results and throw ConformanceFailure.
#include "maf/sandbox/conformance/fingerprint.hpp"
#include "maf/sandbox/conformance/layout.hpp"
#include "maf/sandbox/conformance/limits.hpp"
#include "maf/sandbox/conformance/posix_guest_subject.hpp"
#include "maf/sandbox/conformance/probe.hpp"
#include "maf/sandbox/conformance/results.hpp"
#include "maf/sandbox/conformance/runner.hpp"
#include "maf/sandbox/conformance/subject.hpp"
#include "maf/sandbox/conformance/suites.hpp"

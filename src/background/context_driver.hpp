#pragma once
// The in-guest half of an interpreter context (docs/contexts.md "The driver protocol"): the
// Python driver script the host sends into the guest, and the shell script each call runs.
#include <string>

#include "maf/sandbox/interpreter_context.hpp"

namespace maf::sandbox::detail {

/// CTX-9: a call's answer (the driver's JSON, bytes from the guest) as a result: strict JSON
/// read by a library, every field checked for its type, outputs' base64 decoded by OpenSSL; an
/// answer that is not what the driver writes is OSError, never half-read. Fuzzed
/// (fuzz/fuzz_context_answer.cpp).
/// `timed_out`, when given, says whether the stream driver's own interrupt ended the code (CTX-11).
ContextRunResult parse_context_answer(const std::string& bytes, bool* timed_out = nullptr);

/// `python3 -u DRIVER DIR`: runs DIR/<n>.py for n = 0, 1, … in one namespace, each answered by
/// DIR/<n>.json (written whole, then renamed into place).
extern const char* const kPythonContextDriver;

/// `sh -c CALL maf-context DIR N BACKGROUND_DIR POLLS MODE`: MODE `send` first moves stdin into
/// DIR/N.py; then, every 5 ms up to POLLS times, looks for DIR/N.json and prints it (exit 0),
/// or ends 91 when the background program has ended, 92 when POLLS ran out, 90 when the code
/// could not be written.
extern const char* const kContextCall;

/// `python3 -u -c BOOT`: reads "<bytes>\n" and that many bytes of driver from stdin, then runs
/// the driver with no DIR: it serves frames on its stdin and stdout (docs/contexts.md CTX-11).
extern const char* const kContextBoot;

}  // namespace maf::sandbox::detail

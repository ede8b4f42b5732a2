#pragma once
// Private to the core: the two Unicode operations output collection needs (C-86, C-87),
// pinned to Python's behaviour and implemented over utf8proc.
#include <string>
#include <string_view>

namespace maf::sandbox::detail {

/// NFC of well-formed UTF-8 (callers validate first; ill-formed input throws ValueError).
std::string nfc(std::string_view utf8);

/// Python's str.lower on well-formed UTF-8: the full lowercase mapping, not case folding.
/// Pinned behaviour: every code point takes utf8proc's simple lowercase mapping, except
///  - U+0130 LATIN CAPITAL LETTER I WITH DOT ABOVE -> U+0069 U+0307 (the one unconditional
///    multi-code-point lowercase mapping in SpecialCasing.txt);
///  - U+03A3 GREEK CAPITAL LETTER SIGMA -> U+03C2 (final sigma) when preceded by a cased
///    letter and not followed by one, skipping case-ignorable code points either way — the
///    context CPython applies. Locale-dependent (Turkic, Lithuanian) rules are not applied,
///    as Python does not apply them.
/// "Cased" is Lu/Ll/Lt, or having a case mapping, or one of the Other_Lowercase/
/// Other_Uppercase code points without one (ª º and the squared/circled Latin capitals);
/// "case-ignorable" is Mn/Me/Cf/Lm/Sk plus the Word_Break MidLetter/MidNumLet/Single_Quote
/// code points. Checked against CPython 3.11 (Unicode 14) for every code point, alone and as
/// the letter before a sigma: the simple mapping agrees everywhere; the sigma context differs
/// only on code points Unicode 14 leaves unassigned and utf8proc's data assigns.
std::string python_lower(std::string_view utf8);

}  // namespace maf::sandbox::detail

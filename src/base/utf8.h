// UTF-8 well-formedness, the one check every reader of outside text uses: YAML manifests (whose
// strings nlohmann::json must serialise), TF_CONFIG written as Go's encoding/json writes it, and
// the strings of TensorBoard event records.
//
// The rules are Unicode's (and Go's utf8.DecodeRuneInString's): no overlong forms, no surrogates
// (U+D800..U+DFFF), nothing above U+10FFFF, no stray continuation bytes, no sequence cut short.
#pragma once

#include <cstddef>
#include <string_view>

namespace cohort {

// The length (1 to 4) of the well-formed UTF-8 sequence that starts at text[position], or 0 when
// the bytes there do not start one (position past the end included).
size_t Utf8SequenceLength(std::string_view text, size_t position);

// Whether all of `text` is well-formed UTF-8. Runs of ASCII cost one comparison a byte.
bool IsValidUtf8(std::string_view text);

}  // namespace cohort

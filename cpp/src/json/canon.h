// Canonical forms of JSON values, for checks that compare values the way JSON
// Schema does (1 == 1.0, object members in any order, escapes decoded).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stencil {

// Comma-separated JSON values (whitespace and one trailing comma allowed):
// their canonical forms, or false when the text is not such a list.
bool canonical_values(std::string_view text, std::vector<std::string>& out);
// Comma-separated object members `"key": value`: their decoded keys, and where each key's
// opening quote is in `text` when key_offsets is given.
bool member_keys(std::string_view text, std::vector<std::string>& keys, std::vector<uint32_t>* key_offsets = nullptr);
// The decoded key of the object member `"key": value` that `text` starts with (the value is
// not read: callers know the text is one member), or of `text` that is only a key; where its
// opening quote is, and the offset just past its closing quote.
bool leading_member_key(std::string_view text, std::string& key, uint32_t* key_offset = nullptr,
                        uint32_t* key_end = nullptr);
// One JSON value (whitespace around allowed).
bool canonical_value(std::string_view text, std::string& out);
// The start of a JSON string (`raw` begins with its opening quote): the decoded bytes of its
// complete characters, and in *consumed how many bytes of raw they and the quotes took (an
// escape not complete yet, or a high surrogate that a low one may still join, is left over);
// *closed when the closing quote was read. False when raw is not the start of a string.
// `decoded` is cleared first.
bool json_string_prefix(std::string_view raw, std::string& decoded, size_t* consumed, bool* closed);
// The count of JSON white space bytes `text` begins with.
size_t json_space_prefix(std::string_view text);
// Whether a string body holds no quote or backslash: its bytes are what it decodes to.
bool json_plain_body(std::string_view body);
// `raw` is white space, then one whole JSON string (quotes included) up to its end: its decoded
// text in *text (a view of raw where it has no escapes, else of `scratch`); false otherwise.
bool json_whole_string(std::string_view raw, std::string& scratch, std::string_view* text);
// The decoded keys of the JSON object in `text`.
bool object_keys(std::string_view text, std::vector<std::string>& keys, std::vector<uint32_t>* key_offsets = nullptr);

}  // namespace stencil

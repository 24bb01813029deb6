// Small checked accessors for tokenizer.json fields: each failure is a LoadError naming the file and the key path.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "engine/errors.h"

namespace dyllm::tokjson {

using nlohmann::json;

// Sequence normalizers / pre-tokenizers / decoders nest a level or two in real files; deeper nesting is refused
// (each level also lengthens the key path carried into messages).
inline constexpr int kMaxNesting = 16;

inline const char* type_name(const json& j) {
    return j.type_name();
}

inline const json& require(const json& obj, const char* key, const std::string& where) {
    if (!obj.is_object()) throw LoadError(where + ": expected an object, got " + type_name(obj));
    auto it = obj.find(key);
    if (it == obj.end()) throw LoadError(where + ": missing key '" + key + "'");
    return *it;
}

inline std::string require_string(const json& obj, const char* key, const std::string& where) {
    const json& v = require(obj, key, where);
    if (!v.is_string()) throw LoadError(where + "." + key + ": expected a string, got " + type_name(v));
    return v.get<std::string>();
}

// Absent or null -> dflt.
inline bool get_bool(const json& obj, const char* key, bool dflt, const std::string& where) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return dflt;
    if (!it->is_boolean()) throw LoadError(where + "." + key + ": expected true/false, got " + type_name(*it));
    return it->get<bool>();
}

// Absent or null -> "".
inline std::string get_string(const json& obj, const char* key, const std::string& where) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return {};
    if (!it->is_string()) throw LoadError(where + "." + key + ": expected a string, got " + type_name(*it));
    return it->get<std::string>();
}

}  // namespace dyllm::tokjson

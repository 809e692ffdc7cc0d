// A small JSON reader for the tuning databases: objects, arrays, strings
// (with escapes; \u up to U+FFFF), numbers, true, false, null.  Malformed
// text is an error with its byte offset, never an exception or a crash;
// nesting deeper than kMaxDepth is refused.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kgen {
namespace json {

struct Value {
  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::vector<std::pair<std::string, Value>> object;  // in document order

  // the member `key` of an object (the first one), null when absent or not an object
  const Value* get(std::string_view key) const;
  bool is(Type t) const { return type == t; }
};

constexpr int kMaxDepth = 32;

// Parses the whole of `text` (surrounding white space allowed); on failure
// returns false with *error saying what and where.
bool parse(std::string_view text, Value* out, std::string* error);

}  // namespace json
}  // namespace kgen

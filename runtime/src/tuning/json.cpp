#include "tuning/json.hpp"

#include <cstdlib>

namespace kgen {
namespace json {

const Value* Value::get(std::string_view key) const {
  if (type != Type::object) return nullptr;
  for (const auto& kv : object)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

namespace {

struct Reader {
  std::string_view s;
  size_t at = 0;
  std::string error;

  bool fail(const char* what) {
    if (error.empty()) error = std::string(what) + " at byte " + std::to_string(at);
    return false;
  }
  void skip_space() {
    while (at < s.size() && (s[at] == ' ' || s[at] == '\t' || s[at] == '\n' || s[at] == '\r')) ++at;
  }
  bool literal(std::string_view word) {
    if (s.substr(at, word.size()) != word) return fail("unknown literal");
    at += word.size();
    return true;
  }

  static void append_utf8(std::string& out, unsigned c) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }

  bool string(std::string& out) {
    ++at;  // the opening quote
    while (at < s.size()) {
      const char c = s[at++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at >= s.size()) break;
      const char e = s[at++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (at + 4 > s.size()) return fail("short \\u escape");
          unsigned c16 = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s[at++];
            c16 <<= 4;
            if (h >= '0' && h <= '9') c16 |= h - '0';
            else if (h >= 'a' && h <= 'f') c16 |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') c16 |= h - 'A' + 10;
            else return fail("bad \\u escape");
          }
          append_utf8(out, c16);
          break;
        }
        default: return fail("bad escape");
      }
    }
    return fail("unterminated string");
  }

  bool number(double& out) {
    const size_t start = at;
    if (at < s.size() && s[at] == '-') ++at;
    auto digits = [&] {
      const size_t from = at;
      while (at < s.size() && s[at] >= '0' && s[at] <= '9') ++at;
      return at > from;
    };
    if (!digits()) return fail("bad number");
    if (at < s.size() && s[at] == '.' && (++at, !digits())) return fail("bad number");
    if (at < s.size() && (s[at] == 'e' || s[at] == 'E')) {
      ++at;
      if (at < s.size() && (s[at] == '+' || s[at] == '-')) ++at;
      if (!digits()) return fail("bad number");
    }
    out = std::strtod(std::string(s.substr(start, at - start)).c_str(), nullptr);
    return true;
  }

  bool value(Value& v, int depth) {
    if (depth > kMaxDepth) return fail("nesting too deep");
    skip_space();
    if (at >= s.size()) return fail("unexpected end");
    const char c = s[at];
    if (c == '{') {
      v.type = Value::Type::object;
      ++at;
      skip_space();
      if (at < s.size() && s[at] == '}') return ++at, true;
      for (;;) {
        skip_space();
        if (at >= s.size() || s[at] != '"') return fail("expected a member name");
        std::string key;
        if (!string(key)) return false;
        skip_space();
        if (at >= s.size() || s[at] != ':') return fail("expected ':'");
        ++at;
        v.object.emplace_back(std::move(key), Value{});
        if (!value(v.object.back().second, depth + 1)) return false;
        skip_space();
        if (at < s.size() && s[at] == ',') { ++at; continue; }
        if (at < s.size() && s[at] == '}') return ++at, true;
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v.type = Value::Type::array;
      ++at;
      skip_space();
      if (at < s.size() && s[at] == ']') return ++at, true;
      for (;;) {
        v.array.emplace_back();
        if (!value(v.array.back(), depth + 1)) return false;
        skip_space();
        if (at < s.size() && s[at] == ',') { ++at; continue; }
        if (at < s.size() && s[at] == ']') return ++at, true;
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      v.type = Value::Type::string;
      return string(v.string);
    }
    if (c == 't') { v.type = Value::Type::boolean; v.boolean = true; return literal("true"); }
    if (c == 'f') { v.type = Value::Type::boolean; return literal("false"); }
    if (c == 'n') { v.type = Value::Type::null; return literal("null"); }
    v.type = Value::Type::number;
    return number(v.number);
  }
};

}  // namespace

bool parse(std::string_view text, Value* out, std::string* error) {
  Reader r{text};
  Value v;
  bool ok = r.value(v, 0);
  if (ok) {
    r.skip_space();
    if (r.at != text.size()) ok = r.fail("text after the value");
  }
  if (!ok) {
    if (error) *error = r.error;
    return false;
  }
  *out = std::move(v);
  return true;
}

}  // namespace json
}  // namespace kgen

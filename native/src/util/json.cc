#include "util/json.h"

#include <charconv>
#include <cstdio>
#include <cmath>
#include <fstream>
#include <sstream>

namespace xlabench::json {

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.bool_ = b;
  return v;
}
Value Value::number(double d) {
  Value v;
  v.kind_ = Kind::kNumber;
  v.number_ = d;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.string_ = std::move(s);
  return v;
}
Value Value::array(Array a) {
  Value v;
  v.kind_ = Kind::kArray;
  v.array_ = std::make_shared<Array>(std::move(a));
  return v;
}
Value Value::object(Object o) {
  Value v;
  v.kind_ = Kind::kObject;
  v.object_ = std::make_shared<Object>(std::move(o));
  return v;
}

namespace {
[[noreturn]] void wrong(const char* want) { throw ParseError(std::string("expected ") + want); }
}  // namespace

bool Value::as_bool() const {
  if (kind_ != Kind::kBool) wrong("a boolean");
  return bool_;
}
double Value::as_number() const {
  if (kind_ != Kind::kNumber) wrong("a number");
  return number_;
}
long Value::as_integer() const {
  const double d = as_number();
  if (std::floor(d) != d || std::abs(d) > 9e15) wrong("an integer");
  return static_cast<long>(d);
}
const std::string& Value::as_string() const {
  if (kind_ != Kind::kString) wrong("a string");
  return string_;
}
const Value::Array& Value::as_array() const {
  if (kind_ != Kind::kArray) wrong("an array");
  return *array_;
}
const Value::Object& Value::as_object() const {
  if (kind_ != Kind::kObject) wrong("an object");
  return *object_;
}
bool Value::has(const std::string& key) const {
  return kind_ == Kind::kObject && object_->count(key) > 0;
}
const Value& Value::at(const std::string& key) const {
  const Object& o = as_object();
  const auto it = o.find(key);
  if (it == o.end()) throw ParseError("missing key '" + key + "'");
  return it->second;
}

namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  Value document() {
    Value v = value();
    skip_space();
    if (pos_ != text_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ParseError("JSON: " + what + " at offset " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\t'))
      ++pos_;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  Value value() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    const char c = text_[pos_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return Value::string(string());
    if (literal("true")) return Value::boolean(true);
    if (literal("false")) return Value::boolean(false);
    if (literal("null")) return Value();
    return number();
  }
  Value number() {
    double d = 0;
    const char* begin = text_.data() + pos_;
    const auto [end, ec] = std::from_chars(begin, text_.data() + text_.size(), d);
    if (ec != std::errc() || end == begin) fail("bad number");
    pos_ += static_cast<std::size_t>(end - begin);
    return Value::number(d);
  }
  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c == '\\') {
        if (pos_ >= text_.size()) fail("bad escape");
        const char e = text_[pos_++];
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u': out += unicode(); continue;
          default: c = e;  // \" \\ \/
        }
      }
      out += c;
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
  std::string unicode() {
    if (pos_ + 4 > text_.size()) fail("bad \\u escape");
    const unsigned code = std::stoul(text_.substr(pos_, 4), nullptr, 16);
    pos_ += 4;
    std::string out;  // UTF-8; surrogate pairs are not needed for our files
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
    return out;
  }
  Value array() {
    ++pos_;
    Value::Array items;
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return Value::array(std::move(items));
    }
    while (true) {
      items.push_back(value());
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < text_.size() && text_[pos_] == ']') { ++pos_; break; }
      fail("expected , or ]");
    }
    return Value::array(std::move(items));
  }
  Value object() {
    ++pos_;
    Value::Object members;
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return Value::object(std::move(members));
    }
    while (true) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a key");
      std::string k = string();
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ':') fail("expected :");
      ++pos_;
      members[k] = value();
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < text_.size() && text_[pos_] == '}') { ++pos_; break; }
      fail("expected , or }");
    }
    return Value::object(std::move(members));
  }

  const std::string& text_;
  std::size_t pos_ = 0;
};

}  // namespace

Value parse(const std::string& text) { return Parser(text).document(); }

Value parse_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ParseError("cannot read " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  try {
    return parse(buffer.str());
  } catch (const ParseError& e) {
    throw ParseError(path + ": " + e.what());
  }
}

std::string format_number(double d) {
  if (!std::isfinite(d)) return "null";
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, d);
  (void)ec;  // 64 characters always suffice for a double
  return std::string(buffer, end);
}

void Writer::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}
Writer& Writer::begin_object() {
  separate();
  out_ += '{';
  first_.push_back(true);
  return *this;
}
Writer& Writer::end_object() {
  out_ += '}';
  first_.pop_back();
  return *this;
}
Writer& Writer::begin_array() {
  separate();
  out_ += '[';
  first_.push_back(true);
  return *this;
}
Writer& Writer::end_array() {
  out_ += ']';
  first_.pop_back();
  return *this;
}
Writer& Writer::key(const std::string& k) {
  separate();
  append_string(k);
  out_ += ':';
  after_key_ = true;
  return *this;
}
Writer& Writer::value(double d) {
  separate();
  out_ += format_number(d);
  return *this;
}
Writer& Writer::value(long i) {
  separate();
  out_ += std::to_string(i);
  return *this;
}
Writer& Writer::value(bool b) {
  separate();
  out_ += b ? "true" : "false";
  return *this;
}
Writer& Writer::null() {
  separate();
  out_ += "null";
  return *this;
}
Writer& Writer::value(const std::string& s) {
  separate();
  append_string(s);
  return *this;
}
void Writer::append_string(const std::string& s) {
  out_ += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\n': out_ += "\\n"; break;
      case '\t': out_ += "\\t"; break;
      case '\r': out_ += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\u%04x", c);
          out_ += hex;
        } else {
          out_ += c;
        }
    }
  }
  out_ += '"';
}
Writer& Writer::numbers(const std::vector<double>& values) {
  begin_array();
  for (const double v : values) value(v);
  return end_array();
}

}  // namespace xlabench::json

// A small JSON reader and writer: enough for the settings, the artifact manifest and the
// shared test vectors. Numbers are parsed and printed with std::from_chars / std::to_chars,
// which never look at the locale; non-finite numbers are written as null.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace xlabench::json {

class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Value {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  using Array = std::vector<Value>;
  using Object = std::map<std::string, Value>;

  Value() = default;
  static Value boolean(bool b);
  static Value number(double d);
  static Value string(std::string s);
  static Value array(Array a);
  static Value object(Object o);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool as_bool() const;
  double as_number() const;
  long as_integer() const;  // a number with no fractional part
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;
  bool has(const std::string& key) const;
  // Member access; throws ParseError naming the key when it is missing.
  const Value& at(const std::string& key) const;

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::shared_ptr<Array> array_;
  std::shared_ptr<Object> object_;
};

Value parse(const std::string& text);
Value parse_file(const std::string& path);

// Streaming writer: the caller emits keys and values in order; commas are handled here.
class Writer {
 public:
  Writer& begin_object();
  Writer& end_object();
  Writer& begin_array();
  Writer& end_array();
  Writer& key(const std::string& k);
  Writer& value(double d);  // shortest round-trip form; null when not finite
  Writer& value(long i);
  Writer& value(int i) { return value(static_cast<long>(i)); }
  Writer& value(bool b);
  Writer& value(const std::string& s);
  Writer& value(const char* s) { return value(std::string(s)); }
  Writer& null();
  Writer& numbers(const std::vector<double>& values);
  const std::string& str() const { return out_; }

 private:
  void separate();
  void append_string(const std::string& s);
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

std::string format_number(double d);

}  // namespace xlabench::json

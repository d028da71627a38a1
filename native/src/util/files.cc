#include "util/files.h"

#include <fstream>
#include <sstream>

namespace xlabench {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError("cannot read " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

nlohmann::json read_json(const std::string& path) {
  const std::string text = read_bytes(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw FileError(path + ": JSON " + json_reason(e));
  }
}

std::string json_reason(const nlohmann::json::exception& error) {
  const std::string text = error.what();
  const std::size_t end = text.find("] ");
  return text.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? text.substr(end + 2)
                                                                             : text;
}

}  // namespace xlabench

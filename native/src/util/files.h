// Reading the files the runner is given: raw bytes (models, compile options, configs) and JSON
// documents (the spec, the artifact manifest, the shared test vectors), parsed by nlohmann::json.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace xlabench {

// A file that cannot be read, or that read_json finds is not JSON: one line naming the file.
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string read_bytes(const std::string& path);
nlohmann::json read_json(const std::string& path);

// nlohmann's message without its "[json.exception.type_error.302] " prefix.
std::string json_reason(const nlohmann::json::exception& error);

}  // namespace xlabench

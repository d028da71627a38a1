#include "runtimes/runtime.h"

namespace xlabench {

void Registry::add(const std::string& name, RuntimeFactory factory) {
  factories_[name] = std::move(factory);
}

std::unique_ptr<Runtime> Registry::create(const std::string& name) const {
  const auto it = factories_.find(name);
  return it == factories_.end() ? nullptr : it->second();
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, factory] : factories_) out.push_back(name);
  return out;
}

}  // namespace xlabench

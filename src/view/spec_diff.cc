#include "view/spec_diff.h"

#include <set>

namespace cohort::view {
namespace {

std::string Show(const nlohmann::json* value) {
  if (value == nullptr) return "<none>";
  return value->is_string() ? value->get<std::string>() : value->dump();
}

void Compare(const std::string& path, const nlohmann::json* running, const nlohmann::json* file,
             std::vector<std::string>& out) {
  if (running != nullptr && file != nullptr && *running == *file) return;
  if (running != nullptr && file != nullptr && running->is_object() && file->is_object()) {
    std::set<std::string> keys;
    for (const auto& [key, value] : running->items()) keys.insert(key);
    for (const auto& [key, value] : file->items()) keys.insert(key);
    for (const std::string& key : keys) {
      Compare(path + "." + key, running->contains(key) ? &(*running)[key] : nullptr,
              file->contains(key) ? &(*file)[key] : nullptr, out);
    }
    return;
  }
  if (running != nullptr && file != nullptr && running->is_array() && file->is_array() &&
      running->size() == file->size()) {
    for (size_t i = 0; i < running->size(); ++i) {
      Compare(path + "[" + std::to_string(i) + "]", &(*running)[i], &(*file)[i], out);
    }
    return;
  }
  out.push_back(path + ": " + Show(running) + " -> " + Show(file));
}

}  // namespace

std::vector<std::string> SpecDifferences(const nlohmann::json& running,
                                         const nlohmann::json& file) {
  std::vector<std::string> out;
  Compare("spec", &running, &file, out);
  return out;
}

}  // namespace cohort::view

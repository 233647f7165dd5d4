#pragma once
// YAML documents as JSON values, for kubeconfig-style files and `kubectl get -o yaml` output.

#include <nlohmann/json.hpp>
#include <string_view>

namespace gpushare::files {

// Plain scalars become numbers, booleans or null where YAML 1.2's core schema says so; quoted
// scalars stay strings. Throws std::runtime_error with the line number on a syntax error.
nlohmann::json yaml_to_json(std::string_view text);

}  // namespace gpushare::files

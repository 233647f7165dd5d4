// kubectl-inspect-gpushare: the kubectl plugin (`kubectl inspect gpushare`); see cli.h.

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cmd/inspect/cli.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return gpushare::cmd::inspect::run_cli(
      args, std::cout, std::cerr, [](std::string_view name) -> std::optional<std::string> {
        const char* value = std::getenv(std::string(name).c_str());
        return value ? std::optional<std::string>(value) : std::nullopt;
      });
}

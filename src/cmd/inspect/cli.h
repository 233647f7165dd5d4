#pragma once
// kubectl-inspect-gpushare's command line, as a function so that tests run it in-process.
//
//   kubectl inspect gpushare [NODE] [-d] [-o table|json] [--kubeconfig FILE] [--context NAME]
//                            [--extender URL] [--memory-unit GiB|MiB] ...

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace gpushare::cmd::inspect {

using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// `args` excludes the program name. Returns the exit code: 0 success, 1 the data could not be
// read (message on `err`), 2 bad usage.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
            const EnvLookup& env);

}  // namespace gpushare::cmd::inspect

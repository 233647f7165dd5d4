// Not a benchmark: writes the inputs of the HTTP load test (bench/http/run.sh) from the same
// generator the microbenchmarks use, so both measure the same cluster.
//
//   bench_inputs --nodes 5000 --allocated 0.5 [--offered 500] [--request 4] --out DIR
//
// writes DIR/cluster.json (a v1 List for --cluster-file: Nodes and bound Pods),
// DIR/filter-names.json (ExtenderArgs with NodeNames, nodeCacheCapable) and
// DIR/filter-nodes.json (ExtenderArgs with full Node objects); the requests offer every node,
// or --offered of them spread over the cluster (see offered_nodes()).

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "cluster_generator.h"

namespace gb = gpushare::bench;

namespace {

int usage() {
  std::cerr
      << "usage: bench_inputs --nodes N [--allocated F] [--offered N] [--request GiB] --out DIR\n";
  return 2;
}

bool write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) {
    std::cerr << "bench_inputs: cannot write " << path << "\n";
    return false;
  }
  std::cerr << "bench_inputs: wrote " << path << " (" << text.size() / 1024 << " KiB)\n";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  gb::ClusterShape shape;
  shape.allocated = 0.5;
  gpushare::core::Units request = 4;
  int offered = -1;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string value = argv[++i];
    if (arg == "--nodes") {
      shape.nodes = std::atoi(value.c_str());
    } else if (arg == "--allocated") {
      shape.allocated = std::atof(value.c_str());
    } else if (arg == "--offered") {
      offered = std::atoi(value.c_str());
    } else if (arg == "--request") {
      request = std::atoll(value.c_str());
    } else if (arg == "--out") {
      out = value;
    } else {
      return usage();
    }
  }
  if (out.empty() || shape.nodes <= 0) return usage();
  const gb::Json pod = gb::default_pending_pod(request);
  const bool ok = write(out + "/cluster.json", gb::cluster_list(shape).dump()) &&
                  write(out + "/filter-names.json", gb::args_with_names(shape, pod, offered)) &&
                  write(out + "/filter-nodes.json", gb::args_with_nodes(shape, pod, offered));
  return ok ? 0 : 1;
}

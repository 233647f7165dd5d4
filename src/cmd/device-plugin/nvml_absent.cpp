// open_nvml for a tree without the NVML loader (src/nvml): always refuses, naming what is missing.
#include <memory>
#include <string>

#include "gpushare/nvml/gpu_inventory.h"

namespace gpushare::nvml {

std::unique_ptr<GpuInventory> open_nvml(const std::string& library_path) {
  throw Error("cannot load " + library_path +
              ": this gpushare-device-plugin was built without the NVML loader (src/nvml)");
}

}  // namespace gpushare::nvml

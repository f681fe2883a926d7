#include "cli/host_services.hpp"

#include "cli/output.hpp"

namespace tiletune::cli {

host_services production_services() {
  host_services host;
  host.devices = [] { return query_local_devices(); };
  host.worker_argv = [] { return std::vector<std::string>{self_executable(), "__worker"}; };
  return host;
}

}  // namespace tiletune::cli

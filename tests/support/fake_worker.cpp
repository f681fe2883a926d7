// Stands in for `tiletune __worker` in CPU tests: speaks the same protocol,
// and misbehaves on request: a variant id containing "crash" aborts, "hang"
// never answers, "incorrect" fails verification, "slowNNN" takes NNN us, "broken" answers
// launch_error and ends (a sticky CUDA error: the worker exits after answering); every
// variant of the family named by TILETUNE_FAKE_HANG_FAMILY hangs, and of
// TILETUNE_FAKE_CRASH_FAMILY crashes (a broken template), and every variant whose id contains
// TILETUNE_FAKE_CRASH_ID_PART crashes (a broken mechanism, as "_tmas"). A whole device
// misbehaves (gemm --devices): TILETUNE_FAKE_CRASH_DEVICE=I aborts on any
// request on device I, TILETUNE_FAKE_HANG_DEVICE=I never answers one, and
// TILETUNE_FAKE_CRASH_M=M aborts on every device when the problem has m == M.
// TILETUNE_FAKE_SETUP_LOG=FILE: each worker appends what its setup asked of it ("l2_flush read").
// It knows the test families of tests/families/ besides the built-in ones.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/measure/measure_protocol.hpp"
#include "core/gemm/tile_config.hpp"
#include "toy/toy_family.hpp"

using namespace tiletune;

int main() {
  const family_registration toy{toy_family()};  // the test families (tests/families/) parse like any
  std::string line;
  if (!std::getline(std::cin, line)) return 0;
  const worker_setup setup = worker_setup_from_json(nlohmann::json::parse(line));
  if (const char* log = std::getenv("TILETUNE_FAKE_SETUP_LOG"); log && *log)  // what each worker was told
    std::ofstream(log, std::ios::app) << "l2_flush " << to_string(setup.l2_flush) << "\n";
  if (setup.seed == 666) {
    std::cout << nlohmann::json{{"ready", false}, {"error", "no GPU in this fake"}}.dump() << std::endl;
    return 3;
  }
  std::cout << nlohmann::json{{"ready", true}, {"device", "fake"}, {"timer", "cupti"}}.dump() << std::endl;
  while (std::getline(std::cin, line)) {
    const measure_request r = measure_request_from_json(nlohmann::json::parse(line));
    auto family_is = [&r](const char* variable) {
      const char* family = std::getenv(variable);
      return family && r.config && to_string(r.config->family) == family;
    };
    auto number_is = [](const char* variable, std::int64_t value) {
      const char* v = std::getenv(variable);
      return v && *v && std::stoll(v) == value;
    };
    if (number_is("TILETUNE_FAKE_CRASH_DEVICE", setup.device) || number_is("TILETUNE_FAKE_CRASH_M", setup.problem.m))
      std::abort();
    if (number_is("TILETUNE_FAKE_HANG_DEVICE", setup.device)) std::this_thread::sleep_for(std::chrono::hours(1));
    const char* crash_part = std::getenv("TILETUNE_FAKE_CRASH_ID_PART");  // one broken mechanism, as "_tmas"
    if (r.id.find("crash") != std::string::npos || family_is("TILETUNE_FAKE_CRASH_FAMILY") ||
        (crash_part && *crash_part && r.id.find(crash_part) != std::string::npos))
      std::abort();
    if (r.id.find("hang") != std::string::npos || family_is("TILETUNE_FAKE_HANG_FAMILY"))
      std::this_thread::sleep_for(std::chrono::hours(1));
    measure_response out;
    out.id = r.id;
    out.verified = r.op == measure_op::variant;
    out.timer = "cupti";
    out.device_bytes = 1000;
    if (r.id.find("broken") != std::string::npos) {  // a sticky CUDA error: answer, then end
      out.status = variant_status::launch_error;
      out.message = "an illegal memory access was encountered (the CUDA context is broken; the worker restarts)";
      out.worker_exits = true;
      std::cout << to_json(out).dump() << std::endl;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // on its way out, as a real one
      return 4;
    }
    if (r.id.find("incorrect") != std::string::npos) {
      out.status = variant_status::incorrect;
      out.error.rel_frobenius = 0.5;
      out.error.max_rel_error = 2;
    } else {
      out.status = variant_status::ok;
      double us = 100;
      if (const auto at = r.id.find("slow"); at != std::string::npos) us = std::stod(r.id.substr(at + 4));
      out.timing = summarize({us, us, us * 1.005, us * 0.995});
    }
    std::cout << to_json(out).dump() << std::endl;
  }
  return 0;
}

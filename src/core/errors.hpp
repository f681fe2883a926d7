#pragma once
#include <stdexcept>
#include <string>

namespace tiletune {

// The exit codes of the contract (shared/DESIGN.md).
enum exit_code : int {
  exit_ok = 0,
  exit_check_failed = 1,
  exit_usage = 2,
  exit_environment = 3,
  exit_incomplete = 4,  // --budget-s stopped a suite early: the output is written, "not_run" names the rest
  exit_internal = 70,
};

// Bad input from the user: the message names the bad value. Exit 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The environment cannot do what was asked (no GPU, library missing). Exit 3.
struct environment_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tiletune

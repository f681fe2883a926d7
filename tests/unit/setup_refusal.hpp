#pragma once
// What `batch` says when it refuses a training setup: validate()'s usage_error text, or "" when
// the setup is accepted. Shared by the unit tests of the setup flags.
#include <string>

#include "core/errors.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune::test {

inline std::string refusal(const training_setup& s) {
  try {
    validate(s);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace tiletune::test

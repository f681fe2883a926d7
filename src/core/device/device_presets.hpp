#pragma once

#include <vector>

#include "core/device/device_spec.hpp"

namespace tiletune {

// Every --gpu preset, in the order `tiletune devices` lists them (device_presets.cpp). Read them
// through device_presets() and find_preset(), which build them once.
std::vector<device_spec> make_device_presets();

}  // namespace tiletune

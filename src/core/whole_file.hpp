#pragma once
#include <filesystem>
#include <string_view>

namespace tiletune {

// Writes BYTES to FILE whole or not at all: a temporary file beside it (this process's and a
// counter in its name, so parallel writers never share one), then renamed over it. Returns
// false, leaving no temporary file, where the folder cannot be written. For the caches, whose
// failures only cost a miss; the CLI's outputs have their own (cli/output.hpp: streams, signals,
// permissions).
bool write_file_whole(const std::filesystem::path& file, std::string_view bytes);

}  // namespace tiletune

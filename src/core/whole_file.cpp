#include "core/whole_file.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

namespace tiletune {

namespace fs = std::filesystem;

bool write_file_whole(const fs::path& file, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = file.parent_path() / fmt::format(".{}.{}.{}.tmp", file.filename().string(), getpid(), counter++);
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace tiletune

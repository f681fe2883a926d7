#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace tiletune::cli {

// Where writing FILE really goes: a symbolic link is followed to its target
// (the link stays a link); an existing file that is not a regular file (a
// device, a FIFO, a socket, a folder) is refused with usage_error naming it,
// since renaming over it would replace it.
std::filesystem::path output_target(const std::filesystem::path& file, std::string_view flag = "--out");
// Fails early, before long work, when FILE cannot be written (exit 2, naming it).
void check_output_path(const std::filesystem::path& file, std::string_view flag = "--out");
// Writes to a temporary file beside FILE's target, then renames onto it: the
// target is whole or untouched.
void write_file_atomically(const std::filesystem::path& file, std::string_view text);
// A CLI11 check for options that name a file or folder to write: "" is refused.
std::string refuse_empty_path(const std::string& value);

std::string utc_now_iso();
std::string shell_join(int argc, char** argv);

// A plain-text table with right-aligned numeric columns.
class text_table {
 public:
  explicit text_table(std::vector<std::string> header);
  void add_row(std::vector<std::string> row);
  std::string render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// One self-erasing status line on stderr, shown only on a terminal.
class progress_line {
 public:
  explicit progress_line(bool enabled);
  ~progress_line();
  void update(const std::string& text);
  void finish();
  // A line that stays (a step or problem done, with times): printed on a
  // terminal above the bar, and where stderr is a log, as the only progress.
  void note(const std::string& text);

 private:
  bool wanted_ = false;
  bool enabled_;
  bool shown_ = false;
};

bool stderr_is_terminal();

// A fresh folder under /tmp for one run's files (worker cubins), removed with
// everything in it when the object goes. Throws environment_error if it cannot be made.
class scratch_dir {
 public:
  explicit scratch_dir(const std::string& prefix);
  ~scratch_dir();
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The path of the running binary (for starting its measuring worker).
std::string self_executable();

}  // namespace tiletune::cli

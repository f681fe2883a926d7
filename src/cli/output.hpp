#pragma once
#include <fmt/format.h>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace tiletune::cli {

// What an output option may name. A report, plan or export file may also be a
// stream: a terminal or pipe (/dev/stdout, a shell's >(...)) or /dev/null,
// written in place. A database (--into) is a file only, and the only output that may replace a
// SQLite database: any other output naming one (a tuning database, --no-db's default among them) is
// refused, as a plan, report or export written over it would lose every record.
enum class output_kind { file, file_or_stream, database };
// FILE names an existing character device or FIFO (links followed by the kernel).
bool is_stream_output(const std::filesystem::path& file);
// The descriptor (1 or 2) whose regular file FILE is, links followed: stdout or stderr sent to
// that file (`> plan.txt`, /dev/stdout); -1 where neither is. Such a file is written in place, after
// what the command printed there, not replaced.
int standard_stream_of(const std::filesystem::path& file);
// Where writing FILE really goes: a symbolic link is followed to its target
// (the link stays a link); a stream, where KIND allows one, is FILE itself; any
// other existing file that is not a regular file (a device, a FIFO, a socket,
// a folder) is refused with usage_error naming it, since renaming over it would
// replace it.
std::filesystem::path output_target(const std::filesystem::path& file, std::string_view flag = "--out",
                                    output_kind kind = output_kind::file_or_stream);
// A file the command reads, and how the command line named it ("BASE", "--suite").
struct named_input {
  std::string what;
  std::filesystem::path file;
  bool read = true;  // false: a file this run neither reads nor writes, kept from outputs all the same
};
// The files `--model MODEL` reads when it names no preset: a config.json, or a folder holding one
// (its config.json); none for a preset.
std::vector<named_input> model_config_inputs(const std::string& model);
// Fails early, before long work, when FILE cannot be written: its folder is
// missing or not writable (usage_error, exit 2); it is one of the command's
// own inputs, the same file by identity (std::filesystem::equivalent: a link,
// a hard link or another spelling of it counts) (usage_error naming the
// option, the file and the input); it exists and is read-only, no write
// permission bit set or not writable by this user (environment_error, exit 3).
// In every case the file is left as it was.
void check_output_path(const std::filesystem::path& file, std::string_view flag = "--out",
                       const std::vector<named_input>& inputs = {},
                       output_kind kind = output_kind::file_or_stream);
// check_output_path's checks of FILE itself, for a file whose folder may not exist yet (an
// export's): one of the inputs (by identity, or by path where it does not exist yet) is refused
// (usage_error), an existing read-only one too (environment_error).
void check_replaceable(const std::filesystem::path& file, std::string_view flag,
                       const std::vector<named_input>& inputs, output_kind kind = output_kind::file_or_stream);
// An existing FILE that a command would change in place or replace: refused with environment_error
// naming FLAG and the file (as the command line named it, `named`, where that differs: a link) when
// it has no write permission bit or this user cannot write it.
void refuse_read_only(const std::filesystem::path& file, std::string_view flag,
                      const std::filesystem::path& named = {});
bool is_read_only(const std::filesystem::path& file);
// Writes to a temporary file beside FILE's target, then renames onto it: the
// target is whole or untouched; a stream (is_stream_output) or the file stdout
// or stderr writes to (standard_stream_of) is written in place. An existing
// target keeps its permission bits; one that became read-only since
// check_output_path is refused (environment_error).
void write_file_atomically(const std::filesystem::path& file, std::string_view text);
// Flushes stdout and says whether everything written to it (stdio and
// std::cout) reached it; on failure, why (strerror; empty for a pipe whose
// reader has closed it, as `| head` does: nobody is left to tell). A run's last
// step: the caller exits 3 when this fails (a full disk, /dev/full, a closed pipe).
bool stdout_written(std::string* why);
// A CLI11 check for options that name a file or folder to write: "" is refused.
std::string refuse_empty_path(const std::string& value);

std::string utc_now_iso();
std::string shell_join(int argc, char** argv);

// Text from a file or a database (a problem's or suite's name, a device name, a driver string, a
// config's _name_or_path) as the terminal gets it: every control byte, \n, \r and \t included, and
// DEL written \xNN, so that it can neither send escape sequences nor forge or overwrite lines.
std::string terminal_text(std::string_view text);

// A plain-text table with right-aligned numeric columns (every cell through terminal_text).
class text_table {
 public:
  explicit text_table(std::vector<std::string> header);
  void add_row(std::vector<std::string> row);
  std::string render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// One self-erasing status line on stderr, shown only on a terminal.
// A message on stderr that never throws: a closed or full stderr (`2>&-`, `2>/dev/full`) loses the
// message, not the run (fmt::print would throw, and a throw while reporting an error aborts).
void print_stderr(std::string_view text);
template <class... T>
void tell(fmt::format_string<T...> format, T&&... args) {
  print_stderr(fmt::format(format, std::forward<T>(args)...));
}

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

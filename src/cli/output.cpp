#include "cli/output.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <system_error>

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.hpp"
#include "core/train/model_spec.hpp"

namespace tiletune::cli {

namespace fs = std::filesystem;

namespace {
const char* kind_of(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory: return "a directory";
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::socket: return "a socket";
    default: return "not a regular file";
  }
}
}  // namespace

bool is_stream_output(const fs::path& file) {
  // The kernel follows the links itself: /dev/stdout and a shell's >(...) (/dev/fd/63) are links
  // to a terminal or a pipe that no path names.
  std::error_code ec;
  const auto st = fs::status(file, ec);
  return !ec && (st.type() == fs::file_type::character || st.type() == fs::file_type::fifo);
}

int standard_stream_of(const fs::path& file) {
  struct stat target {};
  if (stat(file.c_str(), &target) != 0 || !S_ISREG(target.st_mode)) return -1;
  for (const int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    struct stat open_one {};
    if (fstat(fd, &open_one) == 0 && S_ISREG(open_one.st_mode) && open_one.st_dev == target.st_dev &&
        open_one.st_ino == target.st_ino)
      return fd;
  }
  return -1;
}

namespace {
// Written in place rather than replaced: a stream, or the file stdout or stderr writes to.
bool written_in_place(const fs::path& target) { return is_stream_output(target) || standard_stream_of(target) >= 0; }

// A regular file that starts with SQLite's header: a database, which no plan, report or export is.
bool is_sqlite_database(const fs::path& target) {
  std::error_code ec;
  if (!fs::is_regular_file(target, ec)) return false;
  std::ifstream in(target, std::ios::binary);
  char header[16] = {};
  return in.read(header, sizeof header) && std::string_view(header, sizeof header) == std::string_view("SQLite format 3\0", 16);
}
}  // namespace

fs::path output_target(const fs::path& file, std::string_view flag, output_kind kind) {
  if (file.empty()) throw usage_error(fmt::format("{} needs a file name", flag));
  if (kind == output_kind::file_or_stream && is_stream_output(file)) return file;
  std::error_code ec;
  fs::path target = file;
  for (int hops = 0; fs::is_symlink(fs::symlink_status(target, ec)); ++hops) {
    if (hops == 40) throw usage_error(fmt::format("{} {}: too many symbolic links", flag, file.string()));
    const fs::path next = fs::read_symlink(target, ec);
    if (ec) throw usage_error(fmt::format("{} {}: cannot read the link: {}", flag, file.string(), ec.message()));
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  const auto st = fs::status(target, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw usage_error(fmt::format("{} {} is {}; give the name of a regular file{}", flag,
                                  target == file ? file.string() : file.string() + " (-> " + target.string() + ")",
                                  kind_of(st.type()),
                                  kind == output_kind::file_or_stream ? " (or a terminal, pipe or /dev/null)" : ""));
  return target;
}

bool is_read_only(const fs::path& file) {
  // No write bit at all (root could write it, but its owner asked for it to stay), or not
  // writable by this user.
  std::error_code ec;
  const auto st = fs::status(file, ec);
  if (ec || !fs::exists(st)) return false;
  const auto write_bits = fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write;
  return (st.permissions() & write_bits) == fs::perms::none || access(file.c_str(), W_OK) != 0;
}

void refuse_read_only(const fs::path& file, std::string_view flag, const fs::path& named) {
  if (is_read_only(file))
    throw environment_error(fmt::format("{} {} is read-only: refused, it is left unchanged (make it writable, or "
                                        "write to another file)",
                                        flag, (named.empty() ? file : named).string()));
}

namespace {
// Whether two names are one file: by identity where both exist, else by their absolute paths
// with links and dots resolved as far as they exist.
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool same = fs::equivalent(a, b, ec);
    return same && !ec;
  }
  // Absolute first: weakly_canonical leaves "x.json" relative but makes "./x.json" absolute.
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  if (ec) return false;
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return !ec && ca == cb;
}
}  // namespace

std::vector<named_input> model_config_inputs(const std::string& model) {
  if (model.empty() || find_model_preset(model)) return {};
  return {{"--model", model}, {"--model", fs::path(model) / "config.json"}};
}

void check_replaceable(const fs::path& file, std::string_view flag, const std::vector<named_input>& inputs,
                       output_kind kind) {
  const fs::path target = output_target(file, flag, kind);  // a stream only where KIND allows one
  // A stream is no input (inputs are regular files) and two outputs may share one (/dev/null), as
  // they may the file stdout goes to (the shell emptied it before the command began).
  const bool in_place = kind == output_kind::file_or_stream && written_in_place(target);
  for (const auto& in : in_place ? std::vector<named_input>{} : inputs) {
    if (in.file.empty() || !same_file(target, in.file)) continue;
    const bool written = in.what == "--out" || in.what == "--junit";
    throw usage_error(fmt::format("{} {} is the same file as {} {}{}: refused, it is left unchanged; write to "
                                  "another file",
                                  flag, file.string(), in.what, in.file.string(),
                                  written     ? ", which this command writes"
                                  : in.read ? ", which this command reads"
                                            : ""));
  }
  if (kind != output_kind::database && is_sqlite_database(target))
    throw usage_error(fmt::format("{} {} is a SQLite database (a tuning database's records would be lost): refused, it "
                                  "is left unchanged; write to another file",
                                  flag, file.string()));
  refuse_read_only(target, flag, file);
}

void check_output_path(const fs::path& file, std::string_view flag, const std::vector<named_input>& inputs,
                       output_kind kind) {
  const fs::path target = output_target(file, flag, kind);
  // A stream, or stdout's file, is written in place, with no temporary file beside it: its folder
  // does not matter.
  if (kind == output_kind::file_or_stream && written_in_place(target))
    return check_replaceable(file, flag, inputs, kind);
  std::error_code ec;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw usage_error(fs::exists(dir, ec)
                          ? fmt::format("{} {}: {} is a file, not a folder", flag, file.string(), dir.string())
                          : fmt::format("{} {}: the folder {} does not exist", flag, file.string(), dir.string()));
  if (access(dir.c_str(), W_OK) != 0)
    throw usage_error(fmt::format("{} {}: the folder {} is not writable", flag, file.string(), dir.string()));
  // A name past the folder's limit (NAME_MAX, 255 bytes on most file systems) could not be made: refused
  // now, not after the run (it failed at the write, "File name too long", the run's output lost).
  const long max_name = pathconf(dir.c_str(), _PC_NAME_MAX);
  if (const std::size_t name = target.filename().string().size(); max_name > 0 && name > static_cast<std::size_t>(max_name))
    throw usage_error(fmt::format("{} {}: the file name is {} bytes long, past the {} a name in {} may have", flag,
                                  file.string(), name, max_name, dir.string()));
  check_replaceable(file, flag, inputs, kind);
}

std::string refuse_empty_path(const std::string& value) {
  return value.empty() ? "needs a file or folder name, not an empty string" : "";
}

namespace {
// Writes all of text to fd; 0, or the errno of the write that failed.
int write_all(int fd, std::string_view text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

// A terminal, pipe or /dev/null has no whole-or-untouched state to keep: the text goes to it in
// place, and a write it refuses (/dev/full, a closed pipe) is an environment_error. A FIFO that no
// process reads would block the open forever: it is refused instead.
void write_stream(const fs::path& file, const fs::path& named, std::string_view text) {
  refuse_read_only(file, "output");
  std::cout.flush();  // /dev/stdout may be the same stream: what was printed before comes first
  std::fflush(stdout);
  const int fd = open(file.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENXIO)
      throw environment_error(fmt::format("could not write {}: it is a FIFO that no process reads (start its "
                                          "reader first)",
                                          named.string()));
    throw environment_error(fmt::format("could not write {}: {}", named.string(), std::strerror(err)));
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // the reader sets the pace
  const int err = write_all(fd, text);
  close(fd);
  if (err) throw environment_error(fmt::format("could not write {}: {}", named.string(), std::strerror(err)));
}

// The file stdout or stderr (fd) writes to: the text follows what the command printed there, at
// that descriptor's position, where replacing the file would leave the printed text in a file
// that no name reaches (`--out /dev/stdout > plan.txt`, `--out log.txt 2> log.txt`).
void write_standard_stream(int fd, const fs::path& named, std::string_view text) {
  std::cout.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  if (const int err = write_all(fd, text))
    throw environment_error(fmt::format("could not write {}: {}", named.string(), std::strerror(err)));
}
}  // namespace

namespace {
// The temporary file beside an output while it is written: SIGINT, SIGTERM or SIGHUP then
// removes it before the signal takes its course, so an interrupted run leaves no temporary file.
char pending_temp[4096];
volatile std::sig_atomic_t temp_pending = 0;
constexpr int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction earlier_actions[3];

extern "C" void remove_temp_then_resignal(int sig) {
  if (temp_pending) unlink(pending_temp);
  temp_pending = 0;
  for (int i = 0; i < 3; ++i)
    if (cleanup_signals[i] == sig) sigaction(sig, &earlier_actions[i], nullptr);
  raise(sig);
}

class temp_file_guard {
 public:
  explicit temp_file_guard(const fs::path& tmp) {
    std::error_code ec;
    const std::string abs = fs::absolute(tmp, ec).string();
    if (ec || abs.size() >= sizeof pending_temp) return;
    std::memcpy(pending_temp, abs.c_str(), abs.size() + 1);
    struct sigaction a {};
    a.sa_handler = remove_temp_then_resignal;
    sigemptyset(&a.sa_mask);
    temp_pending = 1;
    // A signal the caller ignores (nohup's SIGHUP) stays ignored: the write goes on.
    for (int i = 0; i < 3; ++i) {
      sigaction(cleanup_signals[i], nullptr, &earlier_actions[i]);
      if (earlier_actions[i].sa_handler != SIG_IGN) sigaction(cleanup_signals[i], &a, nullptr);
    }
    armed_ = true;
  }
  ~temp_file_guard() {
    if (!armed_) return;
    temp_pending = 0;
    for (int i = 0; i < 3; ++i) sigaction(cleanup_signals[i], &earlier_actions[i], nullptr);
  }
  temp_file_guard(const temp_file_guard&) = delete;
  temp_file_guard& operator=(const temp_file_guard&) = delete;

 private:
  bool armed_ = false;
};

// ".NAME.PID.tmp" beside the file; for a name so long that this would pass the folder's limit
// on a name (NAME_MAX, 255 bytes on most file systems), ".tiletune.PID.tmp".
fs::path temp_name(const fs::path& dir, const fs::path& file) {
  const std::string name = fmt::format(".{}.{}.tmp", file.filename().string(), getpid());
  const long max = pathconf(dir.c_str(), _PC_NAME_MAX);
  if (name.size() <= static_cast<std::size_t>(max > 0 ? max : 255)) return dir / name;
  return dir / fmt::format(".tiletune.{}.tmp", getpid());
}
}  // namespace

void write_file_atomically(const fs::path& requested, std::string_view text) {
  const fs::path file = output_target(requested);  // checked again: it may have changed during the run
  if (is_stream_output(file)) return write_stream(file, requested, text);
  if (const int fd = standard_stream_of(file); fd >= 0) return write_standard_stream(fd, requested, text);
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  refuse_read_only(file, "output", requested);
  const fs::path tmp = temp_name(dir, file);
  std::error_code ec;
  const auto old = fs::status(file, ec);
  const temp_file_guard guard(tmp);
  {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      const int err = errno;
      fs::remove(tmp, ec);
      throw environment_error(fmt::format("could not write {}: {}", requested.string(),
                                          err ? std::strerror(err) : "the write failed"));
    }
  }
  // The replacement keeps the permissions the file had (0600 stays 0600), and its owner and group
  // where this user may give them (root replacing a user's file leaves it the user's).
  if (fs::is_regular_file(old)) {
    struct stat before {};
    if (stat(file.c_str(), &before) == 0 && (before.st_uid != geteuid() || before.st_gid != getegid()))
      (void)!chown(tmp.c_str(), before.st_uid, before.st_gid);
    fs::permissions(tmp, old.permissions() & fs::perms::mask, ec);
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    throw environment_error(fmt::format("could not write {}: {}", requested.string(), why));
  }
}

namespace {
// stdout is a pipe whose reader has gone (`| head` after its lines). The write that found it
// out may be long past (errno gone): a pipe with no reader polls as an error.
bool reader_closed_stdout() {
  struct stat st {};
  if (fstat(STDOUT_FILENO, &st) != 0 || !S_ISFIFO(st.st_mode)) return false;
  pollfd p{STDOUT_FILENO, POLLOUT, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}
}  // namespace

bool stdout_written(std::string* why) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && !std::ferror(stdout) && std::cout.good()) return true;
  // A write that failed before this flush left no errno behind: one more byte (to output already
  // incomplete) says why, as a failed --out says (/dev/full: No space left on device).
  int reason = err;
  if (!reason) {
    errno = 0;
    if (::write(STDOUT_FILENO, "\n", 1) < 0) reason = errno;
  }
  if (why) *why = reason == EPIPE || reader_closed_stdout() ? "" : reason ? std::strerror(reason) : "a write failed";
  std::clearerr(stdout);  // reported once (the CLI fuzz target runs many commands in one process)
  std::cout.clear();
  return false;
}

std::string utc_now_iso() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string shell_join(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string_view a = argv[i];
    if (i) out += ' ';
    const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_./=:,+@").find(c) != std::string_view::npos;
    });
    if (plain) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

text_table::text_table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }

std::string terminal_text(std::string_view text) { return escape_control_bytes(text, false); }

void text_table::add_row(std::vector<std::string> row) {
  // A cell from a file (a problem's name) may hold control characters: a NUL would end the line
  // on a terminal, an escape sequence would drive it. They are shown escaped (\x00, \x1b).
  for (auto& cell : row) cell = terminal_text(cell);
  rows_.push_back(std::move(row));
}

std::string text_table::render() const {
  std::vector<std::size_t> width;
  std::vector<bool> numeric;
  for (const auto& row : rows_) {
    if (width.size() < row.size()) {
      width.resize(row.size(), 0);
      numeric.resize(row.size(), true);
    }
  }
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    for (std::size_t c = 0; c < rows_[r].size(); ++c) {
      const auto& cell = rows_[r][c];
      width[c] = std::max(width[c], cell.size());
      if (r > 0 && !cell.empty() && cell != "-" &&
          !(std::isdigit(static_cast<unsigned char>(cell[0])) || cell[0] == '.'))
        numeric[c] = false;
    }
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c) line += "  ";
      line += numeric[c] ? fmt::format("{:>{}}", row[c], width[c]) : fmt::format("{:<{}}", row[c], width[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  return out;
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

scratch_dir::scratch_dir(const std::string& prefix) {
  std::string name = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(name.data())) throw environment_error("cannot create a scratch folder " + name);
  path_ = name;
}

scratch_dir::~scratch_dir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string self_executable() {
  std::error_code ec;
  const auto path = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw environment_error("cannot find the tiletune binary through /proc/self/exe: " + ec.message());
  return path.string();
}

void print_stderr(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  std::clearerr(stderr);
}

progress_line::progress_line(bool enabled) : wanted_(enabled), enabled_(enabled && stderr_is_terminal()) {}

void progress_line::note(const std::string& text) {
  if (!wanted_) return;
  finish();
  std::fprintf(stderr, "tiletune: %s\n", text.c_str());
  std::fflush(stderr);
}

progress_line::~progress_line() { finish(); }

void progress_line::update(const std::string& text) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void progress_line::finish() {
  if (enabled_ && shown_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  shown_ = false;
}

}  // namespace tiletune::cli

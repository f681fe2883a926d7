#pragma once
#include <string>
#include <vector>

#include <sys/types.h>

namespace tiletune {

// A child process spoken to in lines over its stdin and stdout; its stderr
// goes to a file whose tail explains a crash. Measuring kernels in a child
// keeps a faulting or hanging kernel from taking the tuner down with it.
class worker_process {
 public:
  explicit worker_process(std::vector<std::string> argv);
  ~worker_process();
  worker_process(const worker_process&) = delete;
  worker_process& operator=(const worker_process&) = delete;

  void start();  // throws std::runtime_error when it cannot be started
  bool running() const { return pid_ > 0; }
  bool write_line(const std::string& line);

  enum class read_status { line, timeout, closed };
  struct read_result {
    read_status status;
    std::string text;
  };
  read_result read_line(double timeout_s);

  // Kills (SIGKILL) if still running and reaps; returns a description of how it ended.
  std::string stop();
  std::string stderr_tail(std::size_t max_bytes = 2000) const;

 private:
  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string buffer_;
  std::string stderr_path_;
};

}  // namespace tiletune

#include "core/measure/worker_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace tiletune {

worker_process::worker_process(std::vector<std::string> argv) : argv_(std::move(argv)) {}

worker_process::~worker_process() {
  stop();
  if (!stderr_path_.empty()) unlink(stderr_path_.c_str());
}

void worker_process::start() {
  stop();
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  }
  if (!stderr_path_.empty()) unlink(stderr_path_.c_str());
  char tmpl[] = "/tmp/tiletune-worker-XXXXXX";
  const int err = mkstemp(tmpl);
  stderr_path_ = err >= 0 ? tmpl : "";
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    if (err >= 0) dup2(err, STDERR_FILENO);
    std::vector<char*> args;
    for (auto& a : argv_) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  if (err >= 0) close(err);
  close(in[0]);
  close(out[1]);
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];
  buffer_.clear();
}

bool worker_process::write_line(const std::string& line) {
  if (pid_ <= 0) return false;
  const std::string data = line + "\n";
  // A child that is gone must not kill us with SIGPIPE, whether or not our caller
  // ignores it (the CLI does; tests do not): block it around the write.
  sigset_t pipe_signal, previous;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &previous);
  std::size_t done = 0;
  bool ok = true;
  while (done < data.size()) {
    const ssize_t n = write(to_child_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;  // EPIPE: the child is gone
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (!ok && errno == EPIPE && !sigismember(&previous, SIGPIPE)) {
    const timespec now{0, 0};
    sigtimedwait(&pipe_signal, nullptr, &now);  // take the SIGPIPE this write raised
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return ok;
}

worker_process::read_result worker_process::read_line(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return {read_status::line, std::move(line)};
    }
    if (pid_ <= 0) return {read_status::closed, {}};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {read_status::timeout, {}};
    pollfd p{from_child_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char chunk[65536];
    const ssize_t n = read(from_child_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {read_status::closed, {}};
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

std::string worker_process::stop() {
  if (pid_ <= 0) return "not running";
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
  to_child_ = from_child_ = -1;
  int status = 0;
  // A worker that is done exits once its stdin closes; give it a moment.
  pid_t r = 0;
  for (int i = 0; i < 20 && (r = waitpid(pid_, &status, WNOHANG)) == 0; ++i) usleep(10'000);
  if (r == 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return fmt::format("exited with status {}", WEXITSTATUS(status));
}

std::string worker_process::stderr_tail(std::size_t max_bytes) const {
  if (stderr_path_.empty()) return {};
  std::ifstream in(stderr_path_, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.size() > max_bytes ? s.substr(s.size() - max_bytes) : s;
}

}  // namespace tiletune

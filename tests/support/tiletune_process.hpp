#pragma once
// Runs the tiletune binary for the cli and gpu tests: exit code, stdout and
// stderr. The binary and the scratch folder may be moved with TILETUNE_BIN and
// TILETUNE_TEST_SCRATCH (the GPU machine runs a build folder copied elsewhere).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <system_error>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace tiletune_test {

namespace fs = std::filesystem;

inline const char* binary_path() {
  const char* env = std::getenv("TILETUNE_BIN");
  return env && *env ? env : TILETUNE_BINARY;
}

inline std::string scratch_root() {
  const char* env = std::getenv("TILETUNE_TEST_SCRATCH");
  return env && *env ? env : TILETUNE_TEST_TMP;
}

struct result {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A folder of this test process's own, removed when the process ends with every test passed (a
// failure keeps it to look at; the kernel cache beside it stays).
inline fs::path tmp_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::path(scratch_root()) / std::to_string(getpid());
    fs::create_directories(d);
    std::atexit([] {
      // gtest's UnitTest outlives this handler: it was built before the first tmp_dir().
      if (!::testing::UnitTest::GetInstance()->Passed()) return;
      std::error_code ignored;
      fs::remove_all(fs::path(scratch_root()) / std::to_string(getpid()), ignored);
    });
    return d;
  }();
  return dir;
}

// Starts the program `binary` with args, its stdout and stderr into the files
// out and err; a kernel cache shared by the tests keeps repeated plans fast.
// `timer` sets TILETUNE_TIMER when given.
inline pid_t spawn(const char* binary, std::vector<std::string> args, const fs::path& out, const fs::path& err,
                   const char* timer = nullptr) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    setenv("XDG_CACHE_HOME", (fs::path(scratch_root()) / "cache").c_str(), 1);
    if (timer) setenv("TILETUNE_TIMER", timer, 1);
    std::vector<char*> argv{const_cast<char*>(binary)};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary, argv.data());
    _exit(127);
  }
  return pid;
}

// Waits for a spawned program: its exit code, or 128 + the signal that ended it.
inline int wait_code(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Runs the program `binary` with args (see spawn).
inline result run_program(const char* binary, std::vector<std::string> args, const char* timer = nullptr) {
  const fs::path out = tmp_dir() / "stdout", err = tmp_dir() / "stderr";
  const int code = wait_code(spawn(binary, std::move(args), out, err, timer));
  return {code, slurp(out), slurp(err)};
}

// Runs tiletune with args.
inline result run(std::vector<std::string> args, const char* timer = nullptr) {
  return run_program(binary_path(), std::move(args), timer);
}

#ifdef TILETUNE_STANDINS
// The same CLI with test doubles (tests/support/tiletune_standin_main.cpp): `standins` are its
// leading flags (--standin-gpus LIST, --standin-worker PROGRAM), then tiletune's args.
inline result run_with_standins(std::vector<std::string> standins, const std::vector<std::string>& args) {
  standins.insert(standins.end(), args.begin(), args.end());
  return run_program(TILETUNE_STANDINS, std::move(standins));
}
#endif

}  // namespace tiletune_test

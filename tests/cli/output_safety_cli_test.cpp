// Issue 39, data and output safety: --out (and --junit, --into) never replaces a
// read-only file nor one of the command's own inputs, and output that does not
// reach stdout is a failed run (exit 3), for every command that writes.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace {

const fs::path source_dir = TILETUNE_SOURCE_DIR;

fs::path scratch_dir(const std::string& name) {
  const fs::path d = tmp_dir() / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

// Files every test uses: two result files, a suite, a config.json and a tuning database with measured results.
struct inputs {
  fs::path dir, base, fresh, suite, config, db;
  explicit inputs(const std::string& name) : dir(scratch_dir(name)) {
    base = dir / "base.json";
    fresh = dir / "new.json";
    suite = dir / "suite.json";
    config = dir / "config.json";
    db = dir / "in.sqlite";
    fs::copy_file(source_dir / "profiles/baselines/h100-sxm.json", base);
    fs::copy_file(source_dir / "profiles/baselines/h100-sxm.json", fresh);
    fs::copy_file(source_dir / "profiles/suites/squares.json", suite);
    std::ofstream(config) << R"({"model_type":"gpt2","vocab_size":50257,"n_embd":768,"n_layer":12,"n_head":12,
      "n_positions":1024})";
    const fs::path measured = source_dir / "profiles/measured/h100-2026-11-23/gemm";
    const result r = run({"db", "import", (measured / "4096x4096x4096-bf16-nt.json").string(),
                          (measured / "128x4096x4096-bf16-nt.json").string(), "--db", db.string()});
    EXPECT_EQ(r.code, 0) << r.err;
  }
};

// Runs tiletune with stdout going to `out` (a path such as /dev/full); stderr comes back.
result run_with_stdout(const std::string& out, std::vector<std::string> args) {
  const fs::path err = tmp_dir() / "stderr-only";
  const int code = wait_code(spawn(binary_path(), std::move(args), out, err));
  return {code, "", slurp(err)};
}

// Starts tiletune with stdout the write end of the pipe fds (its read end closed in the child)
// and stderr into err.
pid_t spawn_into_pipe(std::vector<std::string> args, const int fds[2], const fs::path& err) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (fds[0] >= 0) close(fds[0]);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fds[1], 1);
    dup2(e, 2);
    std::vector<char*> argv{const_cast<char*>(binary_path())};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary_path(), argv.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

TEST(output_safety_cli, a_read_only_output_is_refused_with_exit_3_and_kept_mode_and_all) {
  const inputs in("read-only-outputs");
  const fs::path ro = in.dir / "ro.out", ro_db = in.dir / "ro.sqlite", link = in.dir / "link.out";
  fs::copy_file(in.db, ro_db);
  fs::create_symlink(ro.filename(), link);
  struct attempt {
    std::vector<std::string> args;
    fs::path file;
  };
  const std::vector<attempt> attempts = {
      {{"gemm", "--gpu", "l4", "--dry-run", "--m", "64", "--n", "64", "--k", "64", "--out", ro.string()}, ro},
      {{"gemm", "--gpu", "l4", "--dry-run", "--suite", in.suite.string(), "--no-db", "--out", link.string()}, ro},
      {{"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--out", ro.string()}, ro},
      {{"compare", in.base.string(), in.fresh.string(), "--out", ro.string()}, ro},
      {{"compare", in.base.string(), in.fresh.string(), "--junit", ro.string()}, ro},
      {{"check", "--baseline", in.base.string(), "--out", ro.string()}, ro},
      {{"check", "--baseline", in.base.string(), "--junit", link.string()}, ro},
      {{"report", in.base.string(), "--out", ro.string()}, ro},
      {{"db", "calibrate", "--gpu", "h100-sxm", "--db", in.db.string(), "--out", ro.string()}, ro},
      {{"db", "export", "--db", in.db.string(), "--out", ro.string()}, ro},
      {{"db", "merge", in.db.string(), "--into", ro_db.string()}, ro_db},
  };
  for (const auto& a : attempts) {
    std::ofstream(ro) << "keep me\n";
    fs::permissions(ro, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    fs::permissions(ro_db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    const std::string before = bytes_of(a.file);
    const result r = run(a.args);
    std::string line;
    for (const auto& s : a.args) line += s + " ";
    EXPECT_EQ(r.code, 3) << line << r.err;
    EXPECT_NE(r.err.find("read-only"), std::string::npos) << line << r.err;
    EXPECT_EQ(bytes_of(a.file), before) << line;
    EXPECT_EQ(mode_of(a.file), 0444u) << line;
    fs::permissions(ro, fs::perms::owner_write, fs::perm_options::add);  // so the next attempt can reset it
  }
  for (const auto& e : fs::directory_iterator(in.dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(output_safety_cli, an_output_naming_one_of_the_commands_inputs_is_refused_with_exit_2) {
  const inputs in("own-input-outputs");
  const fs::path hard = in.dir / "hard-link.json", sym = in.dir / "sym-link.json";
  fs::create_hard_link(in.base, hard);
  fs::create_symlink(in.fresh.filename(), sym);
  const fs::path db_link = in.dir / "db-link.sqlite";  // the database by another name
  fs::create_hard_link(in.db, db_link);
  const std::string other_spelling = (in.dir / "." / ".." / in.dir.filename() / "base.json").string();
  struct attempt {
    std::vector<std::string> args;
    fs::path input;
    std::string flag;
  };
  const std::vector<attempt> attempts = {
      {{"compare", in.base.string(), in.base.string(), "--out", in.base.string()}, in.base, "--out"},
      {{"compare", in.base.string(), in.fresh.string(), "--out", other_spelling}, in.base, "--out"},
      {{"compare", in.base.string(), in.fresh.string(), "--junit", sym.string()}, in.fresh, "--junit"},
      {{"compare", in.base.string(), in.fresh.string(), "--out", hard.string()}, in.base, "--out"},
      {{"check", "--baseline", in.base.string(), "--out", in.base.string()}, in.base, "--out"},
      {{"report", in.fresh.string(), in.base.string(), "--out", hard.string()}, in.base, "--out"},
      {{"gemm", "--gpu", "l4", "--dry-run", "--suite", in.suite.string(), "--no-db", "--out", in.suite.string()},
       in.suite, "--out"},
      {{"gemm", "--gpu", "l4", "--dry-run", "--m", "64", "--n", "64", "--k", "64", "--db", in.db.string(), "--out",
        in.db.string()},
       in.db, "--out"},
      {{"batch", "--model", in.config.string(), "--gpu", "h100-sxm", "--out", in.config.string()}, in.config, "--out"},
      {{"batch", "--model", in.dir.string(), "--gpu", "h100-sxm", "--out", in.config.string()}, in.config, "--out"},
      {{"db", "export", "--db", in.db.string(), "--out", in.db.string()}, in.db, "--out"},
      {{"db", "calibrate", "--gpu", "h100-sxm", "--db", in.db.string(), "--out", in.db.string()}, in.db, "--out"},
      {{"gemm", "--model", in.config.string(), "--tokens", "64", "--gpu", "h100-sxm", "--dry-run", "--no-db", "--out",
        in.config.string()},
       in.config, "--out"},
      {{"gemm", "--model", in.dir.string(), "--tokens", "64", "--gpu", "h100-sxm", "--dry-run", "--no-db", "--out",
        in.config.string()},
       in.config, "--out"},
      {{"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--db", in.db.string(), "--out", db_link.string()}, in.db,
       "--out"},
      {{"compare", in.base.string(), in.fresh.string(), "--out", (in.dir / "both.json").string(), "--junit",
        (in.dir / "both.json").string()},
       in.dir / "both.json", "--junit"},
  };
  for (const auto& a : attempts) {
    const std::string before = bytes_of(a.input);
    const unsigned mode = mode_of(a.input);
    const result r = run(a.args);
    std::string line;
    for (const auto& s : a.args) line += s + " ";
    EXPECT_EQ(r.code, 2) << line << r.err;
    EXPECT_NE(r.err.find(a.flag + " " + a.args.back()), std::string::npos) << line << r.err;
    EXPECT_NE(r.err.find("same file"), std::string::npos) << line << r.err;
    EXPECT_EQ(bytes_of(a.input), before) << line;
    EXPECT_EQ(mode_of(a.input), mode) << line;
  }
  // Merging a database into itself is no loss: it is the target, counted once.
  const result m = run({"db", "merge", in.db.string(), "--into", in.db.string()});
  EXPECT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("merged 1 database(s)"), std::string::npos) << m.out;
}

TEST(output_safety_cli, stdout_that_cannot_be_written_exits_3_for_every_command) {
  const inputs in("stdout-checks");  // not "stdout": run() keeps its captured stdout there
  const std::vector<std::vector<std::string>> commands = {
      {"devices"},
      {"devices", "--json"},
      {"gemm", "--gpu", "l4", "--dry-run", "--m", "64", "--n", "64", "--k", "64", "--no-db"},
      {"gemm", "--gpu", "l4", "--dry-run", "--m", "64", "--n", "64", "--k", "64", "--no-db", "--json"},
      {"batch", "--model", "gpt2", "--gpu", "h100-sxm"},
      {"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--json"},
      {"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--out", (in.dir / "b.json").string()},  // "wrote ..."
      {"compare", in.base.string(), in.fresh.string()},
      {"compare", in.base.string(), in.fresh.string(), "--json"},
      {"db", "list", "--db", in.db.string()},
      {"db", "list", "--db", in.db.string(), "--json"},
      {"db", "export", "--db", in.db.string()},
      {"db", "export", "--db", in.db.string(), "--format", "triton"},
      {"db", "calibrate", "--gpu", "h100-sxm", "--db", in.db.string(), "--json"},
      {"db", "import", (source_dir / "profiles/measured/h100-2026-11-23/gemm/4096x4096x4096-f16-nn.json").string(),
       "--db", in.db.string()},
      {"db", "merge", in.db.string(), "--into", (in.dir / "merged.sqlite").string()},
      {"--help"},
      {"gemm", "--help"},
  };
  for (const auto& c : commands) {
    std::string line;
    for (const auto& s : c) line += s + " ";
    // The command works where stdout takes its output...
    const result fine = run_with_stdout((in.dir / "stdout.txt").string(), c);
    ASSERT_EQ(fine.code, 0) << line << fine.err;
    ASSERT_GT(fs::file_size(in.dir / "stdout.txt"), 0u) << line;
    // ...and fails, saying so, where it does not.
    const result full = run_with_stdout("/dev/full", c);
    EXPECT_EQ(full.code, 3) << line << full.err;
    EXPECT_NE(full.err.find("cannot write to stdout"), std::string::npos) << line << full.err;
    // The reason, as a failed --out gives it (guarantees.md: REASON), not "a write failed".
    EXPECT_NE(full.err.find("No space left on device"), std::string::npos) << line << full.err;
    EXPECT_EQ(full.err.find("internal error"), std::string::npos) << line << full.err;
  }
}

TEST(output_safety_cli, rewriting_an_output_keeps_its_permissions) {
  const fs::path dir = scratch_dir("keeps-mode"), out = dir / "plan.json";
  std::ofstream(out) << "old\n";
  fs::permissions(out, fs::perms::owner_read | fs::perms::owner_write);
  const result r = run({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--out", out.string(), "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(bytes_of(out), "old\n");
  EXPECT_EQ(mode_of(out), 0600u);
  // Root replacing another user's file leaves it that user's (only root can give a file away).
  if (geteuid() != 0) GTEST_SKIP() << "the owner part needs root (chown to another user)";
  ASSERT_EQ(chown(out.c_str(), 4321, 4322), 0);
  const result again = run({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--out", out.string(), "--quiet"});
  ASSERT_EQ(again.code, 0) << again.err;
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 4321u);
  EXPECT_EQ(st.st_gid, 4322u);
  EXPECT_EQ(mode_of(out), 0600u);
}

// --export writes several files into a folder: none may replace a read-only file, a file the run
// read (--suite, --db, --model's config) or its own --out; a replaced one keeps its permissions.
TEST(output_safety_cli, an_export_replaces_no_input_no_output_and_no_read_only_file) {
  const inputs in("export-safety");
  const std::string id = "wgmma_128x128x64_c1_s5_cl1x1_g8m_tmas";
  const std::vector<std::string> gemm = {"gemm", "--m", "256", "--n", "256", "--k", "256", "--gpu", "h100-sxm",
                                         "--dry-run", "--only", id};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = gemm;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const fs::path dir = in.dir / "kernels";
  ASSERT_EQ(run(with({"--no-db", "--export", dir.string()})).code, 0);
  const fs::path header = dir / (id + ".h"), source = dir / (id + ".cu"), json = dir / (id + ".json");
  // Read-only: refused (exit 3), the file and its mode kept.
  fs::permissions(header, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string header_bytes = bytes_of(header);
  const result ro = run(with({"--no-db", "--export", dir.string()}));
  EXPECT_EQ(ro.code, 3) << ro.err;
  EXPECT_NE(ro.err.find("read-only"), std::string::npos) << ro.err;
  EXPECT_EQ(bytes_of(header), header_bytes);
  EXPECT_EQ(mode_of(header), 0444u);
  // Writable again, 0600: replaced, still 0600.
  fs::permissions(header, fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(source, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(run(with({"--no-db", "--export", dir.string()})).code, 0);
  EXPECT_EQ(mode_of(header), 0600u);
  EXPECT_EQ(mode_of(source), 0600u);
  // The run's --out, its --db and its --suite: refused (exit 2), each left as it was.
  // --out onto one of the export's files: refused before either is written (the kernel's JSON kept).
  const std::string kernel_json = bytes_of(json);
  ASSERT_EQ(nlohmann::json::parse(kernel_json).value("schema", ""), "tiletune.kernel/1");
  const result out = run(with({"--no-db", "--export", dir.string(), "--out", json.string()}));
  EXPECT_EQ(out.code, 2) << out.err;
  EXPECT_NE(out.err.find("the same file as --out"), std::string::npos) << out.err;
  EXPECT_EQ(bytes_of(json), kernel_json);
  fs::copy_file(in.db, json, fs::copy_options::overwrite_existing);
  const std::string db_bytes = bytes_of(json);
  const result db = run(with({"--db", json.string(), "--export", dir.string()}));
  EXPECT_EQ(db.code, 2) << db.err;
  EXPECT_NE(db.err.find("the same file as --db"), std::string::npos) << db.err;
  EXPECT_EQ(bytes_of(json), db_bytes);
  const fs::path suite_dir = in.dir / "suite-export", named = suite_dir / "a";
  fs::create_directories(named);
  const fs::path suite = named / (id + ".json");
  std::ofstream(suite) << R"({"schema":"tiletune.suite/1","problems":[{"name":"a","m":256,"n":256,"k":256,)"
                       << R"("dtype":"bf16","layout":"nt"}]})";
  const std::string suite_bytes = bytes_of(suite);
  const result s = run({"gemm", "--suite", suite.string(), "--gpu", "h100-sxm", "--dry-run", "--no-db", "--only", id,
                        "--export", suite_dir.string()});
  EXPECT_EQ(s.code, 2) << s.err;
  EXPECT_NE(s.err.find("the same file as --suite"), std::string::npos) << s.err;
  EXPECT_EQ(bytes_of(suite), suite_bytes);
}

// A read-only tuning database is changed by no command: db import and vacuum and gemm
// --store-plans are refused (exit 3), and a gemm run reads it without storing.
TEST(output_safety_cli, a_read_only_database_is_left_unchanged) {
  const inputs in("read-only-db");
  fs::permissions(in.db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string before = bytes_of(in.db);
  const fs::path measured = source_dir / "profiles/measured/h100-2026-11-23/gemm/16x4096x4096-bf16-nt.json";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"db", "import", measured.string(), "--db", in.db.string()},
        std::vector<std::string>{"db", "--db", in.db.string(), "import", measured.string()},
        std::vector<std::string>{"db", "vacuum", "--db", in.db.string()},
        std::vector<std::string>{"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--dry-run",
                                 "--db", in.db.string(), "--store-plans"}}) {
    const result r = run(args);
    EXPECT_EQ(r.code, 3) << args[1] << " " << r.err;
    EXPECT_NE(r.err.find("--db " + in.db.string() + " is read-only"), std::string::npos) << r.err;
    EXPECT_EQ(bytes_of(in.db), before) << args[1];
  }
  const result plan = run({"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--dry-run", "--db",
                           in.db.string()});
  EXPECT_EQ(plan.code, 0) << plan.err;
  EXPECT_EQ(bytes_of(in.db), before);
  EXPECT_EQ(mode_of(in.db), 0444u);
}

namespace {
// The commands that write --out (or --junit) without a GPU, each naming its output last (check,
// which measures, refuses a read-only or input --out before it looks for a GPU: tests above).
std::vector<std::vector<std::string>> out_writers(const inputs& in, const std::string& out) {
  return {
      {"gemm", "--gpu", "l4", "--dry-run", "--m", "64", "--n", "64", "--k", "64", "--no-db", "--out", out},
      {"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--out", out},
      {"compare", in.base.string(), in.fresh.string(), "--out", out},
      {"compare", in.base.string(), in.fresh.string(), "--junit", out},
      {"report", in.base.string(), "--out", out},
      {"db", "calibrate", "--gpu", "h100-sxm", "--db", in.db.string(), "--out", out},
      {"db", "export", "--db", in.db.string(), "--out", out},
  };
}

std::string joined(const std::vector<std::string>& args) {
  std::string line;
  for (const auto& s : args) line += s + " ";
  return line;
}
}  // namespace

// A report, plan or export may go to a stream: /dev/null (to discard it), a terminal or a pipe
// (a FIFO, /dev/stdout, a shell's >(...)). It is written in place, and a stream that refuses the
// write (/dev/full) fails the run with exit 3. A database (--into) stays a regular file.
TEST(output_safety_cli, an_output_may_be_dev_null_or_a_pipe_and_a_refused_write_exits_3) {
  const inputs in("stream-outputs");
  const fs::path null_link = in.dir / "null-link";
  fs::create_symlink("/dev/null", null_link);
  for (const auto& args : out_writers(in, "/dev/null")) {
    const result r = run(args);
    EXPECT_EQ(r.code, 0) << joined(args) << r.err;
  }
  const result linked = run({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--out", null_link.string()});
  EXPECT_EQ(linked.code, 0) << linked.err;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(null_link)));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  for (const auto& args : out_writers(in, "/dev/full")) {
    const result r = run(args);
    EXPECT_EQ(r.code, 3) << joined(args) << r.err;
    EXPECT_NE(r.err.find("could not write /dev/full"), std::string::npos) << joined(args) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << joined(args) << r.err;
  }
  const result both =
      run({"compare", in.base.string(), in.fresh.string(), "--out", "/dev/null", "--junit", "/dev/null"});
  EXPECT_EQ(both.code, 0) << both.err;
  const result into = run({"db", "merge", in.db.string(), "--into", "/dev/null"});
  EXPECT_EQ(into.code, 2) << into.err;
  EXPECT_NE(into.err.find("--into /dev/null is a character device"), std::string::npos) << into.err;

  // A FIFO gets the whole JSON, and stays a FIFO.
  const fs::path fifo = in.dir / "plan.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  const pid_t pid = spawn(binary_path(), {"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--out", fifo.string()},
                          in.dir / "fifo-stdout", in.dir / "fifo-stderr");
  std::string text;
  int status = 0;
  for (bool running = true;;) {
    char buf[65536];
    const ssize_t n = read(reader, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (!running) break;
    if (waitpid(pid, &status, WNOHANG) == pid) running = false;  // one more read drains what is left
    else usleep(10000);
  }
  close(reader);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << slurp(in.dir / "fifo-stderr");
  const auto plan = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(plan.is_discarded()) << text.substr(0, 200);
  EXPECT_EQ(plan.value("schema", ""), "tiletune.batch/1");
  EXPECT_TRUE(fs::is_fifo(fifo));
}

// `tiletune db list | head -1`: the reader closes the pipe on purpose. The run still fails
// (exit 3: its output did not all arrive) but prints nothing, as no one reads the message for it.
TEST(output_safety_cli, a_pipe_closed_by_its_reader_fails_quietly) {
  const inputs in("closed-pipe");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"devices", "--json"},
        std::vector<std::string>{"db", "list", "--db", in.db.string()}}) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    close(fds[0]);  // the reader has gone before the first write
    fds[0] = -1;
    const fs::path err = in.dir / "stderr";
    const pid_t pid = spawn_into_pipe(args, fds, err);
    close(fds[1]);
    EXPECT_EQ(wait_code(pid), 3) << joined(args);
    EXPECT_EQ(slurp(err), "") << joined(args);
  }
}

// `tiletune gemm --help | head -1`: output that fits the pipe's buffer (64 KiB) is written whole
// in one write, before the reader can go, and exits 0. stdio's own 4 KiB blocks let `head` close
// the pipe between two of them: exit 3 in most runs of 15 KB of help (and of a 5 KB `db list`).
TEST(output_safety_cli, output_that_fits_the_pipe_exits_0_when_its_reader_takes_one_line) {
  const fs::path err = tmp_dir() / "stderr-head";
  const std::vector<std::string> args{"gemm", "--help"};
  const result whole = run(args);
  ASSERT_EQ(whole.code, 0);
  ASSERT_GT(whole.out.size(), 8192u);  // more than two of stdio's blocks
  ASSERT_LT(whole.out.size(), 65536u);
  for (int attempt = 0; attempt < 10; ++attempt) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = spawn_into_pipe(args, fds, err);
    close(fds[1]);
    char c = 0;  // head -1: the first line, then the pipe closed
    while (read(fds[0], &c, 1) == 1 && c != '\n') {
    }
    close(fds[0]);
    ASSERT_EQ(wait_code(pid), 0) << "attempt " << attempt << ": " << slurp(err);
  }
}

// stdout (or stderr) sent to a file, and --out naming that file (/dev/stdout, the file itself,
// /dev/stderr): the output follows what the command printed there, in the same file. Replacing the
// file would leave the printed table in a file that no name reaches.
TEST(output_safety_cli, an_output_that_is_stdouts_own_file_follows_what_was_printed) {
  const inputs in("stdout-file");
  const std::string table = "micro-batch  checkpointing";
  auto json_in = [](const std::string& text) {
    const std::size_t at = text.find("{\n");
    if (at == std::string::npos) return nlohmann::json();
    const std::size_t end = text.find("\n}\n", at);
    return nlohmann::json::parse(text.substr(at, end == std::string::npos ? end : end + 3 - at), nullptr, false);
  };
  const fs::path stdout_file = tmp_dir() / "stdout";  // where run() sends stdout
  for (const std::string& out : {std::string("/dev/stdout"), stdout_file.string()}) {
    const result r = run({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--out", out});
    EXPECT_EQ(r.code, 0) << out << r.err;
    EXPECT_NE(r.out.find(table), std::string::npos) << out << ": the table is lost\n" << r.out.substr(0, 300);
    EXPECT_EQ(json_in(r.out).value("schema", ""), "tiletune.batch/1") << out;
  }
  // gemm says on stderr what it is compiling before it writes --out.
  const result err = run({"gemm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "f32", "--gpu", "h100-sxm",
                          "--top", "1", "--out", "/dev/stderr"});
  EXPECT_EQ(err.code, 0) << err.err;
  EXPECT_NE(err.out.find("recommended:"), std::string::npos) << err.out;
  EXPECT_EQ(err.err.rfind("tiletune: 64x64x64 f32 nt: compiling", 0), 0u) << "the progress is lost\n"
                                                                            << err.err.substr(0, 300);
  EXPECT_EQ(json_in(err.err).value("schema", ""), "tiletune.gemm/1") << err.err.substr(0, 300);
  // Two outputs may share it, as they may a terminal.
  const result both =
      run({"compare", in.base.string(), in.fresh.string(), "--out", "/dev/stdout", "--junit", "/dev/stdout"});
  EXPECT_EQ(both.code, 0) << both.err;
  EXPECT_EQ(json_in(both.out).value("schema", ""), "tiletune.compare/1") << both.out.substr(0, 300);
  EXPECT_NE(both.out.find("<testsuite"), std::string::npos) << both.out.substr(0, 300);
}

// Two outputs that name one file that does not exist yet, spelt differently ("x.json", "./x.json",
// "$PWD/x.json", "sub/../x.json"), are one file; so is --out onto one of the Vega scripts a report reads.
TEST(output_safety_cli, two_spellings_of_one_new_file_and_a_vega_script_are_refused) {
  const inputs in("new-file-spellings");
  fs::create_directories(in.dir / "sub");
  const std::string bin = binary_path();
  for (const std::string pair : {"--out x.json --junit ./x.json", "--out x.json --junit \"$PWD/x.json\"",
                                  "--out sub/../x.json --junit x.json"}) {
    const result r = run_program("/bin/sh", {"-c", "cd '" + in.dir.string() + "' && exec '" + bin +
                                                       "' compare base.json new.json " + pair});
    EXPECT_EQ(r.code, 2) << pair << r.err;
    EXPECT_NE(r.err.find("same file"), std::string::npos) << pair << r.err;
    EXPECT_FALSE(fs::exists(in.dir / "x.json")) << pair;
  }
  const fs::path vega = in.dir / "vega";
  fs::create_directories(vega);
  std::ofstream(vega / "vega.min.js") << "/* a stand-in for Vega's bundle */\n";
  const std::string before = bytes_of(vega / "vega.min.js");
  const result r = run({"report", in.fresh.string(), "--vega-dir", vega.string(), "--out", (vega / "vega.min.js").string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("same file as Vega's script"), std::string::npos) << r.err;
  EXPECT_EQ(bytes_of(vega / "vega.min.js"), before);
}

// A closed or full stderr loses the messages, not the exit code (fmt::print threw: abort, 134).
TEST(output_safety_cli, a_closed_or_full_stderr_keeps_the_exit_code) {
  const std::string bin = "'" + std::string(binary_path()) + "'";
  struct attempt {
    std::string shell;
    int code;
  };
  for (const attempt& a : {attempt{bin + " --version >&- 2>&-", 3}, attempt{bin + " --version 2>&-", 0},
                           attempt{bin + " gemm --m x 2>&-", 2}, attempt{bin + " gemm --m x 2>/dev/full", 2},
                           attempt{bin + " compare /nonexistent.json /nonexistent.json 2>/dev/full", 2},
                           attempt{bin + " db list --db '" + (tmp_dir() / "none.sqlite").string() + "' --json >&- 2>&-", 2}}) {
    const result r = run_program("/bin/sh", {"-c", a.shell + "; echo \"exit $?\""});
    EXPECT_NE(r.out.find(fmt::format("exit {}", a.code)), std::string::npos) << a.shell << "\n" << r.out << r.err;
  }
}

// An output file's name as long as the folder allows (255 bytes) is written: the temporary file
// beside it takes a shorter name. And a signal while the temporary file is written removes it.
TEST(output_safety_cli, a_long_name_is_written_and_a_signal_leaves_no_temporary_file) {
  const inputs in("long-names");
  const fs::path longest = in.dir / (std::string(250, 'r') + ".json");
  const result r = run({"compare", in.base.string(), in.fresh.string(), "--json", "--out", longest.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(longest));
  for (const auto& f : fs::directory_iterator(in.dir))
    EXPECT_NE(f.path().extension(), ".tmp") << "left " << f.path();
  // One byte past the folder's limit on a name is refused before the work, exit 2, nothing written
  // (it was found at the write, exit 3, after the run).
  const fs::path too_long = in.dir / (std::string(251, 'r') + ".json");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"compare", in.base.string(), in.fresh.string(), "--out", too_long.string()},
        {"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--dry-run", "--no-db", "--out",
         too_long.string()}}) {
    const result refused = run(args);
    EXPECT_EQ(refused.code, 2) << refused.err;
    EXPECT_NE(refused.err.find("the file name is 256 bytes long, past the 255"), std::string::npos) << refused.err;
    EXPECT_EQ(refused.err.find("compiling"), std::string::npos) << "refused before the work: " << refused.err;
  }
  // The temporary file is a FIFO made under the name tiletune gives it (exec keeps the shell's pid):
  // the write blocks there until SIGTERM comes.
  const std::string script = "cd '" + in.dir.string() + "' && mkfifo .x.json.$$.tmp && exec '" + binary_path() +
                             "' compare base.json new.json --out x.json";
  const pid_t pid = spawn("/bin/sh", {"-c", script}, in.dir / "sig.out", in.dir / "sig.err");
  const fs::path fifo = in.dir / fmt::format(".x.json.{}.tmp", pid);
  for (int i = 0; i < 100 && !fs::exists(fifo); ++i) usleep(20000);
  ASSERT_TRUE(fs::exists(fifo)) << slurp(in.dir / "sig.err");
  sleep(2);  // compare reads its files and opens the FIFO, where it blocks
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_code(pid), 128 + SIGTERM) << slurp(in.dir / "sig.err");
  EXPECT_FALSE(fs::exists(fifo)) << "the temporary file was left behind";
  EXPECT_FALSE(fs::exists(in.dir / "x.json"));
}

// Under --no-db the default database is not read, and no --out replaces it either.
TEST(output_safety_cli, no_db_does_not_let_an_output_replace_the_default_database) {
  const inputs in("no-db-default");
  const fs::path cache = in.dir / "cache";
  const std::string bin = binary_path();
  const std::string script = "export XDG_CACHE_HOME='" + cache.string() + "' && mkdir -p \"$XDG_CACHE_HOME/tiletune\" && " +
                             "cp '" + in.db.string() + "' \"$XDG_CACHE_HOME/tiletune/tuning.sqlite3\" && exec '" + bin +
                             "' gemm --gpu l4 --dry-run --m 64 --n 64 --k 64 --no-db --out \"$XDG_CACHE_HOME/tiletune/tuning.sqlite3\"";
  const result r = run_program("/bin/sh", {"-c", script});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("the default tuning database"), std::string::npos) << r.err;
  EXPECT_EQ(bytes_of(cache / "tiletune/tuning.sqlite3"), bytes_of(in.db));
}

// A tuning database is never an output's target but db merge's --into: batch --no-db, report and compare
// had written their JSON or HTML over one (every record lost), where gemm --no-db refused its default.
TEST(output_safety_cli, no_output_but_a_merge_replaces_a_tuning_database) {
  const inputs in("sqlite-outputs");
  const std::string before = bytes_of(in.db);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--no-db", "--out", in.db.string()},
        {"report", in.base.string(), "--out", in.db.string()},
        {"compare", in.base.string(), in.fresh.string(), "--out", in.db.string()},
        {"gemm", "--gpu", "l4", "--dry-run", "--m", "64", "--n", "64", "--k", "64", "--no-db", "--out", in.db.string()}}) {
    const result r = run(args);
    EXPECT_EQ(r.code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("--out " + in.db.string() + " is a SQLite database"), std::string::npos) << r.err;
    EXPECT_EQ(bytes_of(in.db), before) << args[0];
  }
  // The database is still one: it lists its records.
  EXPECT_EQ(run({"db", "list", "--db", in.db.string()}).code, 0);
}

// A file name that is not UTF-8 (Latin-1's 0xE9, legal on Linux) reaches the JSON written (the command
// line, a database's name): its byte is written as U+FFFD, where the dump threw once the work was done
// (exit 70, nothing written).
TEST(output_safety_cli, a_file_name_that_is_not_utf8_is_written_not_lost) {
  const inputs in("latin1-names");
  const fs::path plan = in.dir / "plan_\xe9.json", batch = in.dir / "batch_\xe9.json", db = in.dir / "db_\xe9.sqlite";
  fs::copy_file(in.db, db);
  const fs::path base_latin1 = in.dir / "caf\xe9.json";
  fs::copy_file(in.base, base_latin1);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"gemm", "--gpu", "l4", "--dry-run", "--m", "64", "--n", "64", "--k", "64", "--no-db", "-q",
                                 "--out", plan.string()},
        {"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--no-db", "-q", "--out", batch.string()},
        {"db", "--db", db.string(), "list", "--json"},
        {"db", "--db", db.string(), "export"},
        {"db", "--db", db.string(), "calibrate", "--gpu", "h100-sxm", "--json"},
        {"compare", base_latin1.string(), in.fresh.string(), "--json"}}) {
    const result r = run(args);
    ASSERT_EQ(r.code, 0) << args[0] << ": " << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  }
  for (const fs::path& written : {plan, batch}) {
    const auto j = nlohmann::json::parse(slurp(written));
    EXPECT_NE(j["tool"]["command_line"].get<std::string>().find("\xef\xbf\xbd.json"), std::string::npos) << written;
  }
}

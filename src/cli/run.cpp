#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/run.hpp"
#include "cli/option_checks.hpp"
#include "cli/output.hpp"
#include "cli/parse_errors.hpp"
#include "core/errors.hpp"
#include "core/version.hpp"
#include "cuda/gemm_worker.hpp"

namespace tiletune::cli {

std::string error_text(const std::string& message) {
  std::string out;
  for (const char ch : printable_message(message)) {
    out += ch;
    if (ch == '\n') out += "  ";
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

namespace {

void say_error(const std::string& message) { tell("tiletune: {}\n", error_text(message)); }

// Our words for a parse error where parse_errors.hpp has them, else CLI11's own.
void say_or_exit(const CLI::App& app, const CLI::Error& e, const std::string& said) {
  say_error(said.empty() ? other_parse_error_words(app, e.what()) : said);
}

int parse_and_run(int argc, char** argv, host_services host) {
  run_context ctx{shell_join(argc, argv), 0, std::move(host)};
  CLI::App app{"tiletune: tile-shape autotuner and profiler for GEMM on NVIDIA GPUs", "tiletune"};
  app.set_version_flag("--version", tool_version);
  app.require_subcommand(1);
  app.fallthrough(false);
  add_devices_command(app, ctx);
  add_gemm_command(app, ctx);
  add_batch_command(app, ctx);
  add_check_command(app, ctx);
  add_compare_command(app, ctx);
  add_db_command(app, ctx);
  add_report_command(app, ctx);
  // The measuring worker that `gemm` starts; not for people.
  auto* worker = app.add_subcommand("__worker", "")->group("");
  worker->callback([&ctx] { ctx.exit_code = tiletune::run_gemm_worker(std::cin, std::cout); });
  check_option_values(app);
  try {
    // --version prints the version and stops: anything beside it would be silently dropped.
    if (argc > 2 && std::string_view(argv[1]) == "--version")
      throw usage_error(fmt::format("--version takes nothing after it ('{}' was given): run `tiletune --version` alone",
                                    argv[2]));
    for (const std::string& said :
         {option_given_twice_words(app, argc, argv), value_taken_by_an_option_words(app, argc, argv)})
      if (!said.empty()) throw usage_error(said);
    app.parse(argc, argv);
    return ctx.exit_code;
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    // `batch --mdoel gpt2`: the misspelt option, not the "--model is required" it causes.
    if (!name_the_missing_command(app)) {
      std::string said = extras_words(app);
      if (said.empty()) said = missing_positional_words(app, e.what());
      say_or_exit(app, e, said);
    }
    return exit_usage;
  } catch (const CLI::ConversionError& e) {
    say_or_exit(app, e, conversion_words(app, e.what()));
    return exit_usage;
  } catch (const CLI::ArgumentMismatch& e) {
    say_or_exit(app, e, too_many_words(e.what()));
    return exit_usage;
  } catch (const CLI::ExtrasError& e) {
    say_or_exit(app, e, extras_words(app));
    return exit_usage;
  } catch (const CLI::Error& e) {
    say_or_exit(app, e, "");
    return exit_usage;
  } catch (const usage_error& e) {
    say_error(e.what());
    return exit_usage;
  } catch (const environment_error& e) {
    say_error(e.what());
    return exit_environment;
  } catch (const std::exception& e) {
    if (std::ferror(stdout)) return exit_environment;  // fmt::print could not write stdout: run() says so
    say_error(std::string("internal error: ") + e.what());
    return exit_internal;
  } catch (...) {
    tell("tiletune: internal error\n");
    return exit_internal;
  }
}
}  // namespace

int run(int argc, char** argv) { return run(argc, argv, production_services()); }

int run(int argc, char** argv, host_services host) {
  const int code = parse_and_run(argc, argv, std::move(host));
  // Every command's stdout (tables, --json, help) is checked in this one place:
  // output that did not reach stdout is a failed run, exit 3, even when the
  // command itself succeeded (or failed only because fmt::print threw on it).
  std::string why;
  if (!stdout_written(&why)) {
    if (!why.empty()) tell("tiletune: cannot write to stdout: {} (the output is incomplete)\n", why);
    return code == exit_ok || code == exit_check_failed || code == exit_incomplete ? exit_environment : code;
  }
  return code;
}

}  // namespace tiletune::cli

#pragma once
// CLI11's parse errors in words that name the command, the option and what it takes: a command
// group given no command, a value an option cannot convert, an option the command does not have.
#include <string>

#include <CLI/CLI.hpp>

namespace tiletune::cli {

// A command group given no command, or a word that is none of its commands: says which group and
// lists its commands on stderr (CLI11's own "A subcommand is required" names neither). False where
// the error is another requirement (an option's): nothing is printed.
bool name_the_missing_command(const CLI::App& app);

// CLI11's "Could not convert: --top = 1.5x" as conversion_message says it (option_checks.hpp), the
// option looked up in the commands parsed to tell a flag; empty where `what` is another message.
std::string conversion_words(const CLI::App& app, const std::string& what);

// What the deepest command parsed did not take: an option it does not have, named with the nearest
// of its own (`tiletune batch` has no option --seq: did you mean --seq-len?), or a word it takes no
// place for. Empty where nothing was left over.
std::string extras_words(const CLI::App& app);

// CLI11's "files is required" (a command's positional arguments left out) in words that name the
// command; empty where `what` is another message.
std::string missing_positional_words(const CLI::App& app, const std::string& what);

// CLI11's "--gpu: At Most 1 required but received 2" (an option given more values than it takes,
// most often twice) in words; empty where `what` is another message.
std::string too_many_words(const std::string& what);

// An option that takes a value followed by another option (`gemm --only --gpu h100-sxm`): CLI11
// takes the second as the first's value, and the run then says something else went wrong (no --gpu,
// an --out file named "--json"). Looked at before parsing, over argv; empty where none is.
std::string value_taken_by_an_option_words(const CLI::App& app, int argc, const char* const* argv);

// A one-value option given twice with two values, at one command's level or at a group's and its
// command's (`db --db a.db list --db b.db`: two options to CLI11, the last silently won). Over argv,
// before parsing; empty where none is.
std::string option_given_twice_words(const CLI::App& app, int argc, const char* const* argv);

// Any other parse error: CLI11's words, prefixed and pointing at the command's help (not CLI11's
// "Run with --help for more information."); "--out: 1 required TEXT missing" as "--out needs a value".
std::string other_parse_error_words(const CLI::App& app, const std::string& what);

// Edit distance between two option names: insertions, deletions, substitutions and swaps of
// neighbours, each one.
std::size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace tiletune::cli

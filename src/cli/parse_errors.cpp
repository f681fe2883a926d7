#include "cli/output.hpp"
#include "cli/parse_errors.hpp"

#include <algorithm>
#include <regex>
#include <map>
#include <set>
#include <cstdio>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/option_checks.hpp"

namespace tiletune::cli {

namespace {

// The commands parsed, from the whole program to the deepest ("tiletune", "db", "list").
std::vector<const CLI::App*> parsed_chain(const CLI::App& app) {
  std::vector<const CLI::App*> chain{&app};
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : chain.back()->get_subcommands()) {
      chain.push_back(sub);
      deeper = true;
      break;
    }
  }
  return chain;
}

std::string path_of(const std::vector<const CLI::App*>& chain) {
  std::string path = "tiletune";
  for (std::size_t i = 1; i < chain.size(); ++i) path += " " + chain[i]->get_name();
  return path;
}

// The command's options that are nearest `given` ("--seq"): those it begins (--seq-len) or that
// begin it, else those within an edit distance of a third of its length (at least 1), nearest first.
std::vector<std::string> nearest_options(const CLI::App& command, const std::string& given) {
  const std::string bare = given.substr(given.find_first_not_of('-'));
  std::vector<std::pair<std::size_t, std::string>> near;
  for (const CLI::Option* o : command.get_options()) {
    for (const std::string& name : o->get_lnames()) {
      if (name == "help") continue;
      const bool prefix = !bare.empty() && (name.rfind(bare, 0) == 0 || bare.rfind(name, 0) == 0);
      const std::size_t d = edit_distance(bare, name);
      if (prefix || d <= std::max<std::size_t>(1, bare.size() / 3)) near.emplace_back(prefix ? 0 : d, "--" + name);
    }
  }
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [d, name] : near)
    if (out.size() < 3 && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

}  // namespace

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: an adjacent transposition (dtpye, dtype) counts one, as a typo does.
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

bool name_the_missing_command(const CLI::App& app) {
  const auto chain = parsed_chain(app);
  const CLI::App* at = chain.back();
  const std::string path = path_of(chain);
  const auto commands = at->get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); });
  if (commands.empty() || !at->get_subcommands().empty()) return false;
  std::string names;
  for (const CLI::App* c : commands) names += (names.empty() ? "" : ", ") + c->get_name();
  const auto rest = at->remaining();
  const std::string whose = at == &app ? "" : fmt::format(" of `{}`", path);
  if (!rest.empty() && !rest.front().empty() && rest.front()[0] != '-')
    tell("tiletune: '{}' is not a command{}: the commands are {} (`{} --help` says what each does)\n",
               rest.front(), whose, names, path);
  else
    tell("tiletune: `{}` needs a command: {} (`{} --help` says what each does)\n", path, names, path);
  return true;
}

std::string conversion_words(const CLI::App& app, const std::string& what) {
  const std::string name = option_in_conversion_message(what);
  if (name.empty()) return {};
  bool flag = false;
  const auto chain = parsed_chain(app);
  for (auto at = chain.rbegin(); at != chain.rend(); ++at) {
    const auto options = (*at)->get_options();
    const auto named = std::find_if(options.begin(), options.end(),
                                    [&](const CLI::Option* o) { return o->check_name(name); });
    if (named == options.end()) continue;
    flag = (*named)->get_expected_max() == 0;
    break;
  }
  return conversion_message(what, flag);
}

namespace {

// An option a user carries over from the command's siblings that means another of its own.
std::string carried_over(const std::string& path, const std::string& given) {
  static const std::map<std::pair<std::string, std::string>, std::string> meant = {
      {{"tiletune db merge", "--db"}, "the merged database is --into FILE"},
  };
  const auto it = meant.find({path, given});
  return it == meant.end() ? std::string() : it->second;
}

}  // namespace

std::string extras_words(const CLI::App& app) {
  const auto chain = parsed_chain(app);
  const CLI::App& command = *chain.back();
  const std::string path = path_of(chain);
  std::vector<std::string> said;
  bool after_unknown_option = false;  // "--seq 5": the 5 was meant for --seq
  for (const std::string& arg : app.remaining(true)) {
    if (arg.size() > 1 && arg[0] == '-' && arg.find_first_not_of('-') != std::string::npos) {
      const std::string given = arg.substr(0, arg.find('='));
      const auto near = nearest_options(command, given);
      const std::string instead = carried_over(path, given);
      said.push_back(!instead.empty() ? fmt::format("`{}` has no option {} ({})", path, given, instead)
                     : near.empty()   ? fmt::format("`{}` has no option {}", path, given)
                                  : fmt::format("`{}` has no option {} (did you mean {}?)", path, given,
                                                fmt::join(near, ", ")));
      after_unknown_option = arg.find('=') == std::string::npos;
      continue;
    }
    if (!after_unknown_option) said.push_back(fmt::format("`{}` takes no argument '{}' here", path, arg));
    after_unknown_option = false;
  }
  if (said.empty()) return {};
  return fmt::format("{}; `{} --help` lists what it takes", fmt::join(said, "; "), path);
}

std::string missing_positional_words(const CLI::App& app, const std::string& what) {
  static const std::regex required(R"(^([A-Za-z_]+) is required$)");
  std::smatch m;
  if (!std::regex_match(what, m, required)) return {};
  std::string path = "tiletune";
  const CLI::App* leaf = &app;
  while (!leaf->get_subcommands().empty()) {
    leaf = leaf->get_subcommands().front();
    path += " " + leaf->get_name();
  }
  // The command's usage: its positional arguments in order (compare: BASE NEW).
  std::string usage = path;
  for (const CLI::Option* o : leaf->get_options())
    if (o->get_positional() && !o->nonpositional())
      usage += " " + o->get_name() + (o->get_expected_max() > 1 ? "..." : "");
  return fmt::format("`{}` needs its {} ({}); `{} --help` says what it takes", path, m[1].str(), usage, path);
}

std::string too_many_words(const std::string& what) {
  static const std::regex at_most(R"(^(-[^:]+): At Most (\d+) required but received (\d+)$)");
  std::smatch m;
  if (!std::regex_match(what, m, at_most)) return {};
  const std::string most = m[2] == "1" ? "one value" : m[2].str() + " values";
  return fmt::format("{} takes {} but was given {} (is it given more than once?)", m[1].str(), most, m[3].str());
}

namespace {
// Every command's options, the whole tree: their long names, and those that take a value.
void collect_options(const CLI::App& app, std::set<std::string>& all, std::set<std::string>& valued,
                     std::set<std::string>& several) {
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& name : o->get_lnames()) {
      all.insert("--" + name);
      if (o->get_expected_min() > 0 && !o->get_positional()) valued.insert("--" + name);
      if (o->get_expected_max() != 1 || o->get_multi_option_policy() != CLI::MultiOptionPolicy::Throw)
        several.insert("--" + name);
    }
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    collect_options(*sub, all, valued, several);
}
}  // namespace

std::string option_given_twice_words(const CLI::App& app, int argc, const char* const* argv) {
  std::set<std::string> all, valued, several;
  collect_options(app, all, valued, several);
  std::map<std::string, std::string> seen;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    const std::string name = arg.substr(0, arg.find('='));
    if (!valued.count(name) || several.count(name)) continue;
    const std::string value = arg.find('=') != std::string::npos ? arg.substr(arg.find('=') + 1)
                              : i + 1 < argc                     ? std::string(argv[i + 1])
                                                                 : std::string();
    if (const auto before = seen.find(name); before != seen.end() && before->second != value)
      return fmt::format("{} takes one value but was given 2 ({} and {}): give it once", name, before->second, value);
    seen.emplace(name, value);
  }
  return {};
}

std::string value_taken_by_an_option_words(const CLI::App& app, int argc, const char* const* argv) {
  std::set<std::string> all, valued, several;
  collect_options(app, all, valued, several);
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string arg = argv[i], next = argv[i + 1];
    if (arg == "--") break;  // the rest are values
    if (!valued.count(arg)) continue;
    const std::string next_name = next.substr(0, next.find('='));
    if (next.rfind("--", 0) == 0 && next.size() > 2 && all.count(next_name))
      return fmt::format("{} needs a value, but the next argument is the option {} (a value that begins with -- is "
                         "written {}=VALUE)",
                         arg, next_name, arg);
  }
  return {};
}

std::string other_parse_error_words(const CLI::App& app, const std::string& what) {
  const std::string path = path_of(parsed_chain(app));
  static const std::regex missing_value(R"(^(-[^:]+): \d+ required \S+ missing$)");
  std::smatch m;
  const std::string said = std::regex_match(what, m, missing_value) ? m[1].str() + " needs a value" : what;
  return fmt::format("{}; `{} --help` says what it takes", said, path);
}

}  // namespace tiletune::cli

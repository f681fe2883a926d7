// The CLI's numeric flags, run in-process: exit 0 or 2 (a message naming the
// value), nothing else. The input is the values, one per line, given in turn to
// the flags of `gemm` (first byte even) or `batch` (odd). `gemm --only none`
// stops before compiling anything, after every number has been checked.
#include <string>
#include <vector>

#include "cli/run.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool gemm = data[0] % 2 == 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string> values;
  for (std::size_t begin = 0; begin <= text.size() && values.size() < 12;) {
    const std::size_t end = std::min(text.find('\n', begin), text.size());
    values.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  std::vector<std::string> args{"tiletune"};
  static const std::vector<std::string> gemm_flags{"--m",    "--n",    "--k",    "--batch",
                                                   "--alpha", "--beta", "--dtype", "--layout",
                                                   "--top",  "--seed", "--time-cap-ms", "--target-spread"};
  static const std::vector<std::string> batch_flags{"--seq-len",    "--global-batch",  "--zero",
                                                    "--world-size", "--lora-rank",     "--safety-margin",
                                                    "--precision",  "--optimizer",     "--checkpointing",
                                                    "--attention",  "--model",         "--gpu"};
  if (gemm) {
    args.insert(args.end(), {"gemm", "--gpu", "h100-sxm", "--only", "none", "--quiet"});
  } else {
    args.insert(args.end(), {"batch", "--quiet"});
  }
  const auto& flags = gemm ? gemm_flags : batch_flags;
  bool has_model = false, has_gpu = false;
  for (std::size_t i = 0; i < values.size(); ++i) {
    args.push_back(flags[i]);
    args.push_back(values[i]);
    has_model |= flags[i] == "--model";
    has_gpu |= flags[i] == "--gpu";
  }
  if (!gemm && !has_model) args.insert(args.end(), {"--model", "gpt2"});
  if (!gemm && !has_gpu) args.insert(args.end(), {"--gpu", "h100-sxm"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = tiletune::cli::run(static_cast<int>(args.size()), argv.data());
  if (rc != 0 && rc != 2) {
    std::string line;
    for (const auto& a : args) line += " '" + a + "'";
    tiletune::fuzz::finding("exit " + std::to_string(rc) + " for" + line);
  }
  return 0;
}

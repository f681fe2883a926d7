#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "core/tune/tuning_db/tuning_db.hpp"

namespace tiletune {

// What db merge did with each input and in all.
struct merge_input {
  std::filesystem::path file;
  std::size_t records = 0;  // read from it
  std::size_t kept = 0;     // of them, in the merged database
};
struct merge_summary {
  std::vector<merge_input> inputs;
  std::size_t records = 0;     // in the merged database
  std::size_t duplicates = 0;  // records of a key another input answered better
};

// The key a database files a record under (GPU model, driver, CUDA, tool, compiler, problem).
std::string record_key(const tuning_record& r);

// Of several records, one per key: the better_record (better verified, then
// newer); on a tie, the one read first. from_input, when given, gets the input
// index of each record returned.
std::vector<tuning_record> pick_best(const std::vector<std::vector<tuning_record>>& per_input,
                                     std::vector<std::size_t>* kept_per_input = nullptr,
                                     std::vector<std::size_t>* from_input = nullptr);

// Merges tuning databases into `target` (a final path; a symbolic link is the
// caller's to resolve). A target that exists is one more input (read first),
// so merging shards into a database keeps what it had; an input that is the
// target itself (the same file, by identity) is that input. Every input is
// opened as an existing database and checked whole before anything is
// written: a missing input is a usage_error, one of another schema, not a
// tiletune database, or damaged an environment_error naming it, and then the
// target is untouched (not created when it did not exist). The merge is one
// transaction in the target that holds its write lock (tuning_db::merge_from):
// the target's records are read under that lock, so a record another run
// committed before it is merged like any other, and a run writing during the
// merge waits for the commit (the busy timeout); nothing is lost, and the
// target is whole, old or new.
merge_summary merge_tuning_dbs(const std::vector<std::filesystem::path>& inputs, const std::filesystem::path& target);

}  // namespace tiletune

// Comparing a search's measured variants at one clock. A halving search times every variant
// briefly, the better ones longer, the finalists longest, and the longer a stage runs the hotter
// the card and the lower its clock (an H200 in its power cap: brief and longer stages at 1980 MHz,
// the finalists at 1605). A variant dropped after a stage was behind that stage's leader at the
// clock they shared, but its recorded time, from the cooler stage, can come out below the
// finalists' (docs/model.md, "Calibration").
#pragma once
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace tiletune {

// How much slower `id` measured than the best of the search in `result`, each compared at one
// clock: a finalist (a variant of the deepest stage any reached) against the fastest finalist; a
// variant dropped after a stage by how far it was behind that stage's leader (its reason says,
// "dropped after the longer stage: 3.4% behind the leader"). The recommended variant, timed again
// beside cuBLASLt after the search, counts at the time the search ranked it by (its in_search, or
// in results recorded before that the search's verdict), not at the pair's later one that `measured`
// holds. A result without search stages (an exhaustive search, or recorded before them): its time
// over the fastest in `measured`.
double slowdown_at_one_clock(const nlohmann::json& result, const std::string& id,
                             const std::map<std::string, double>& measured);

// How far a variant was behind its stage's leader when the search dropped it, as a fraction: its
// "behind_leader", else the margin its reason names; < 0 where neither says.
double behind_the_leader(const nlohmann::json& variant);

}  // namespace tiletune

#include "core/source_commit.hpp"
#include "core/version.hpp"

namespace tiletune {
const char* source_commit() { return TILETUNE_SOURCE_COMMIT; }
}  // namespace tiletune

#pragma once
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace tiletune {

// Each field of a gemm result that a reader takes has the JSON type and range schemas/gemm.schema.json
// and schemas/common.schema.json give it. Throws usage_error naming PATH and the field where one does
// not: a damaged or hand-edited file is named with its field, never a library's type error.
void check_result_types(const nlohmann::json& j, const std::string& path);

}  // namespace tiletune

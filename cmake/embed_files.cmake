# Writes OUT: a C++ file whose function FUNCTION (declared in HEADER) maps each
# input's path under ROOT (e.g. "<family>/<family>_gemm.cu" under kernels_templates/,
# or "calibration/<gpu>.json" under profiles/) to its text, as TYPE {name, text}.
set(body "// Generated from ${ROOT} by cmake/embed_files.cmake. Do not edit.\n")
string(APPEND body "#include \"${HEADER}\"\n\nnamespace tiletune {\n\n")
string(APPEND body "std::span<const ${TYPE}> ${FUNCTION}() {\n")
string(APPEND body "  static const ${TYPE} all[] = {\n")
string(REPLACE "|" ";" INPUTS "${INPUTS}")
foreach(path IN LISTS INPUTS)
  file(RELATIVE_PATH name ${ROOT} ${path})
  file(READ ${path} text)
  string(APPEND body "    {\"${name}\", R\"tiletune_file(${text})tiletune_file\"},\n")
endforeach()
string(APPEND body "  };\n  return all;\n}\n\n}  // namespace tiletune\n")
file(WRITE ${OUT}.tmp "${body}")
file(RENAME ${OUT}.tmp ${OUT})

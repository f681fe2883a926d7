# tiletune_embed_files(<out-var> ROOT <dir> FUNCTION <fn> TYPE <type> HEADER <hdr> INPUTS <files...>)
# Adds the build rule that runs cmake/embed_files.cmake on INPUTS (the one rule for
# every embedded folder) and sets <out-var> to the generated .cpp to compile.
function(tiletune_embed_files out_var)
  cmake_parse_arguments(E "" "ROOT;FUNCTION;TYPE;HEADER" "INPUTS" ${ARGN})
  set(out ${CMAKE_BINARY_DIR}/generated/${E_FUNCTION}.cpp)
  string(REPLACE ";" "|" inputs_arg "${E_INPUTS}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DINPUTS=${inputs_arg} -DROOT=${E_ROOT}
            -DFUNCTION=${E_FUNCTION} -DTYPE=${E_TYPE} -DHEADER=${E_HEADER}
            -P ${CMAKE_SOURCE_DIR}/cmake/embed_files.cmake
    DEPENDS ${E_INPUTS} ${CMAKE_SOURCE_DIR}/cmake/embed_files.cmake
    COMMENT "Embedding ${E_FUNCTION}"
    VERBATIM)
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()

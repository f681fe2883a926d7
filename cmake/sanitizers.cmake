# Sanitizer and fuzzing builds, each in its own build folder (scripts/sanitize.sh uses build-sanitize).
option(TILETUNE_SANITIZE "Build everything with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(TILETUNE_FUZZ "Also build the libFuzzer targets tests/fuzz/fuzz_* (clang only; implies TILETUNE_SANITIZE)" OFF)

if(TILETUNE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TILETUNE_FUZZ needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: -DCMAKE_CXX_COMPILER=clang++")
  endif()
  set(TILETUNE_SANITIZE ON CACHE BOOL "" FORCE)
  # Coverage counters everywhere, so the fuzzers see into the core; the fuzz targets link libFuzzer.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(TILETUNE_SANITIZE)
  # Any finding stops the process (a failing test), none is only logged.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g1)
  # --as-needed as Debian's gcc does: clang would otherwise record the toolkit's stub
  # libcuda (pulled in by CUDA::cudart_static) and the binary would not start without a driver.
  add_link_options(-fsanitize=address,undefined -Wl,--as-needed)
endif()

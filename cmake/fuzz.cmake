# libFuzzer targets (fuzz/*_fuzzer.cc), one per reader, with -DEXITSCOPE_FUZZ=ON and clang:
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -DEXITSCOPE_FUZZ=ON && make -C build-fuzz fuzzers
# With EXITSCOPE_SANITIZE too (scripts/test.sh) the same tree also builds the ASan unit tests.
# The whole library is built with coverage + ASan + UBSan so the targets see into every stage.
# scripts/fuzz.sh runs them (short pass in CI, longer by hand); crashes found are kept in
# tests/data/regress/<target>/ and replayed by tests/fuzz_regress_test.cc in every build.
if(EXITSCOPE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "EXITSCOPE_FUZZ needs clang: CC=clang CXX=clang++ cmake -DEXITSCOPE_FUZZ=ON …")
  endif()
  set(EXITSCOPE_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
      -fno-omit-frame-pointer
      -fsanitize-coverage-allowlist=${CMAKE_CURRENT_LIST_DIR}/fuzz_coverage_allowlist.txt)
  target_compile_options(exitscope_core PRIVATE ${EXITSCOPE_FUZZ_FLAGS})
  target_link_options(exitscope_core INTERFACE -fsanitize=address,undefined)
  add_library(exitscope_fuzz_targets STATIC ${CMAKE_CURRENT_LIST_DIR}/../fuzz/fuzz_targets.cc)
  target_compile_options(exitscope_fuzz_targets PRIVATE ${EXITSCOPE_FUZZ_FLAGS})
  target_include_directories(exitscope_fuzz_targets PUBLIC ${CMAKE_CURRENT_LIST_DIR}/../fuzz)
  target_link_libraries(exitscope_fuzz_targets PUBLIC exitscope_core)
  file(GLOB EXITSCOPE_FUZZERS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/../fuzz/*_fuzzer.cc)
  add_custom_target(fuzzers)
  foreach(src ${EXITSCOPE_FUZZERS})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_compile_options(${name} PRIVATE ${EXITSCOPE_FUZZ_FLAGS})
    target_link_libraries(${name} PRIVATE exitscope_fuzz_targets)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    add_dependencies(fuzzers ${name})
  endforeach()
endif()

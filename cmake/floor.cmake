# bench_floor (bench/floor.cc): the time to touch, read or decompress (zstd, zlib) a file's bytes on
# every core, and to walk its events after that: the floors bench/compare_peers.sh states exitscope's
# and the peers' figures against.
# Standalone (zlib, libdeflate and libzstd only), so it builds without EXITSCOPE_BENCH.
add_executable(bench_floor ${CMAKE_CURRENT_LIST_DIR}/../bench/floor.cc)
target_link_libraries(bench_floor PRIVATE ZLIB::ZLIB PkgConfig::LIBDEFLATE PkgConfig::ZSTD Threads::Threads)
target_include_directories(bench_floor PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../src)  # header-only base/ loads
# Its walk modes see every event of a real recording, x86 and arm64 (tests/bench/floor_walk_check.sh).
foreach(recording nested-svm-6.1/dual-5000 nested-arm64-6.1)
  string(REGEX REPLACE "[/.-]" "_" name ${recording})
  add_test(NAME bench_floor.walk_sees_every_event_${name}
           COMMAND ${CMAKE_SOURCE_DIR}/tests/bench/floor_walk_check.sh $<TARGET_FILE:bench_floor>
                   ${EXITSCOPE_SHARED_DIR}/traces/${recording})
  set_tests_properties(bench_floor.walk_sees_every_event_${name} PROPERTIES LABELS unit)
endforeach()

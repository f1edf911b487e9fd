# bench_floor (bench/floor.cc): the time to touch, read or decompress (zstd, zlib) a file's bytes on
# every core, the floor bench/compare_peers.sh states exitscope's and the peers' figures against.
# Standalone (zlib + libzstd only), so it builds without EXITSCOPE_BENCH.
add_executable(bench_floor ${CMAKE_CURRENT_LIST_DIR}/../bench/floor.cc)
target_link_libraries(bench_floor PRIVATE ZLIB::ZLIB PkgConfig::ZSTD Threads::Threads)

# Speed tooling: tracedat_scale builds the scaled trace.dat for bench/compare_peers.sh and the small
# fuzz seeds (fuzz/corpus); it is a plain tool, not a benchmark (bench/*_bench.cc are those).
add_executable(tracedat_scale ${CMAKE_CURRENT_LIST_DIR}/../bench/tracedat_scale.cc)
target_link_libraries(tracedat_scale PRIVATE exitscope_core)

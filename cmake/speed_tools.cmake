# Speed tooling: tracedat_scale builds the scaled trace.dat for bench/compare_peers.sh and the small
# fuzz seeds (fuzz/corpus); it is a plain tool, not a benchmark (bench/*_bench.cc are those).
add_executable(tracedat_scale ${CMAKE_CURRENT_LIST_DIR}/../bench/tracedat_scale.cc)
target_link_libraries(tracedat_scale PRIVATE exitscope_core)
# Its --codec (the zlib trace.dat compare_peers.sh times): the same report as the zstd one it came from.
add_test(NAME tracedat_scale.zlib_is_the_same_trace
         COMMAND ${CMAKE_SOURCE_DIR}/tests/bench/scale_codec_check.sh $<TARGET_FILE:tracedat_scale>
                 $<TARGET_FILE:exitscope> ${EXITSCOPE_SHARED_DIR}/traces/nested-svm-6.1/dual-5000/trace.dat)
set_tests_properties(tracedat_scale.zlib_is_the_same_trace PROPERTIES LABELS unit)

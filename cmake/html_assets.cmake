# The HTML report's own script and style (src/report/html/*.js, *.css) become C++ string constants in
# generated/report/html_assets.h, so `report --html` writes one self-contained file with no network.
set(EXITSCOPE_HTML_ASSETS ${CMAKE_CURRENT_SOURCE_DIR}/src/report/html/report.css
                          ${CMAKE_CURRENT_SOURCE_DIR}/src/report/html/report.js)
set(EXITSCOPE_HTML_ASSETS_H ${CMAKE_CURRENT_BINARY_DIR}/generated/report/html_assets.h)
string(REPLACE ";" "|" EXITSCOPE_HTML_ASSET_LIST "${EXITSCOPE_HTML_ASSETS}")
add_custom_command(
  OUTPUT ${EXITSCOPE_HTML_ASSETS_H}
  COMMAND ${CMAKE_COMMAND} -DOUT=${EXITSCOPE_HTML_ASSETS_H} -DINPUTS=${EXITSCOPE_HTML_ASSET_LIST}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_text.cmake.in
  DEPENDS ${EXITSCOPE_HTML_ASSETS} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_text.cmake.in
  COMMENT "Embedding the HTML report's script and style" VERBATIM)
target_sources(exitscope_core PRIVATE ${EXITSCOPE_HTML_ASSETS_H})

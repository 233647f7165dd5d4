# Included from src/CMakeLists.txt once gpushare_http exists: compiles the web view's
# files into the HTTP server (generated header gpushare_ui_assets.h, regenerated when a file changes).
file(GLOB gpushare_ui_files CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.html
     ${CMAKE_CURRENT_LIST_DIR}/*.css ${CMAKE_CURRENT_LIST_DIR}/*.js)
set(gpushare_ui_header ${CMAKE_BINARY_DIR}/generated/gpushare_ui_assets.h)
add_custom_command(
  OUTPUT ${gpushare_ui_header}
  COMMAND ${CMAKE_COMMAND} -DUI_DIR=${CMAKE_CURRENT_LIST_DIR} -DOUT=${gpushare_ui_header}
          -P ${CMAKE_CURRENT_LIST_DIR}/embed.cmake
  DEPENDS ${gpushare_ui_files} ${CMAKE_CURRENT_LIST_DIR}/embed.cmake
  COMMENT "Embedding the web view (src/http/ui)"
  VERBATIM)
target_sources(gpushare_http PRIVATE ${gpushare_ui_header})
target_include_directories(gpushare_http PRIVATE ${CMAKE_BINARY_DIR}/generated)

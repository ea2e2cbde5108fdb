# Writes OUT: a C++ file that holds every file of kernel_templates/ as a string, so the tuner and
# the runtime compile kernels without the source tree. Run at build time (cmake -P) so that an
# edited template is picked up by the next build.
file(GLOB files RELATIVE "${SRC_DIR}" "${SRC_DIR}/*")
list(SORT files)
set(body "")
foreach(f ${files})
  file(READ "${SRC_DIR}/${f}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
  string(APPEND body "    {\"${f}\", std::string({${bytes}})},\n")
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from kernel_templates/ by cmake/embed_sources.cmake. Do not edit.\n#include <map>\n#include <string>\nnamespace tiletune {\nconst std::map<std::string, std::string>& embedded_kernel_sources() {\n  static const std::map<std::string, std::string> files = {\n${body}  };\n  return files;\n}\n}  // namespace tiletune\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")

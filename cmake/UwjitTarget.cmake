# uwjit_warnings(<target>): the project's warning flags. GCC 12's -Wrestrict reports false
# positives on std::string concatenation at -O3, so it is off.
function(uwjit_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers
    -Wno-restrict $<$<BOOL:${UWJIT_WARNINGS_AS_ERRORS}>:-Werror>)
endfunction()

# uwjit_add_folder(<folder> SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# One folder = one static, position-independent target uwjit_<folder> with public headers in
# <folder>/include and private sources in <folder>/src.
function(uwjit_add_folder folder)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  set(target uwjit_${folder})
  add_library(${target} STATIC ${ARG_SOURCES})
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  uwjit_warnings(${target})
  set_property(GLOBAL APPEND PROPERTY UWJIT_FOLDER_TARGETS ${target})
  set_property(GLOBAL PROPERTY UWJIT_PRIVATE_DEPS_${target} ${ARG_PRIVATE_DEPS})
  install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} PATTERN "*.in" EXCLUDE)
endfunction()

# `format` rewrites every C++ file with clang-format; `format-check` (and the test
# `format_is_clean`) fails when a file differs from its formatted form.
find_program(UWJIT_CLANG_FORMAT NAMES clang-format-19 clang-format)
if(UWJIT_CLANG_FORMAT)
  file(GLOB_RECURSE uwjit_format_files CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/common/*.[hc]pp ${PROJECT_SOURCE_DIR}/codegen/*.[hc]pp
    ${PROJECT_SOURCE_DIR}/cache/*.[hc]pp ${PROJECT_SOURCE_DIR}/cuda/*.[hc]pp
    ${PROJECT_SOURCE_DIR}/engine/*.[hc]pp
    ${PROJECT_SOURCE_DIR}/runtime/*.[hc]pp ${PROJECT_SOURCE_DIR}/nodes/*.[hc]pp
    ${PROJECT_SOURCE_DIR}/tools/*.[hc]pp ${PROJECT_SOURCE_DIR}/tests/*.[hc]pp
    ${PROJECT_SOURCE_DIR}/examples/*.[hc]pp ${PROJECT_SOURCE_DIR}/python/*.[hc]pp)
  add_custom_target(format COMMAND ${UWJIT_CLANG_FORMAT} -i ${uwjit_format_files}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} COMMENT "clang-format -i")
  add_custom_target(format-check COMMAND ${UWJIT_CLANG_FORMAT} --dry-run --Werror ${uwjit_format_files}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} COMMENT "clang-format --dry-run --Werror")
endif()

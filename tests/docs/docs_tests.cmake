# The manual's tests (label docs): its code blocks, in five parts, the checker's own cases, and
# the HTML build. First, what a C++ block compiles against and where the sandbox finds this build.
# uwjit_docs_json_list(<var> <list>): the list as a JSON array of strings.
function(uwjit_docs_json_list out)
  set(items "")
  foreach(item IN LISTS ARGN)
    list(APPEND items "\"${item}\"")
  endforeach()
  list(JOIN items ", " items)
  set(${out} "[${items}]" PARENT_SCOPE)
endfunction()
set(uwjit_docs_includes "")
foreach(folder common codegen cache comm cuda engine runtime driver nodes)
  list(APPEND uwjit_docs_includes "${PROJECT_SOURCE_DIR}/${folder}/include")
endforeach()
list(APPEND uwjit_docs_includes "${PROJECT_BINARY_DIR}/generated/include")
uwjit_docs_json_list(uwjit_docs_includes_json ${uwjit_docs_includes})
set(uwjit_docs_mpi_lib "")
set(uwjit_docs_mpi_json "[]")
set(uwjit_docs_mpi_libraries_json "[]")
set(uwjit_docs_mpi_env_json "[]")
if(TARGET uwjit_mpi)
  set(uwjit_docs_mpi_lib "$<TARGET_FILE:uwjit_mpi>")
  uwjit_docs_json_list(uwjit_docs_mpi_json ${MPI_C_INCLUDE_DIRS})
  uwjit_docs_json_list(uwjit_docs_mpi_libraries_json ${MPI_C_LIBRARIES})
  uwjit_docs_json_list(uwjit_docs_mpi_env_json ${UWJIT_MPI_TEST_ENV})
endif()
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/docs/blocks.json CONTENT "{
  \"source_dir\": \"${PROJECT_SOURCE_DIR}\",
  \"build_dir\": \"${PROJECT_BINARY_DIR}\",
  \"bin_dir\": \"${PROJECT_BINARY_DIR}/bin\",
  \"python_dir\": \"${PROJECT_BINARY_DIR}/python\",
  \"python\": \"${Python3_EXECUTABLE}\",
  \"cxx\": \"${CMAKE_CXX_COMPILER}\",
  \"include_dirs\": ${uwjit_docs_includes_json},
  \"lib\": \"$<TARGET_FILE:uwjit>\",
  \"mpi_lib\": \"${uwjit_docs_mpi_lib}\",
  \"mpi_include_dirs\": ${uwjit_docs_mpi_json},
  \"mpi_libraries\": ${uwjit_docs_mpi_libraries_json},
  \"mpi_env\": ${uwjit_docs_mpi_env_json}
}
")

if(TARGET uwjit_python AND TARGET uwjit_cli)
  # The checker's own cases (an unclosed fence, a swallowed fence, files, excerpts, markers).
  add_test(NAME docs_checker_tests COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider
    ${CMAKE_CURRENT_LIST_DIR}/test_check_code_blocks.py)
  set_tests_properties(docs_checker_tests PROPERTIES LABELS docs TIMEOUT 60
    ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
  # README.md and docs/*.md; then each of the four kinds of page.
  set(uwjit_docs_parts "readme:README.md docs" "tutorials:docs/tutorials" "how_to:docs/how-to"
    "reference:docs/reference" "explanation:docs/explanation")
  foreach(part IN LISTS uwjit_docs_parts)
    string(REPLACE ":" ";" part "${part}")
    list(GET part 0 name)
    list(GET part 1 pages)
    separate_arguments(pages)
    add_test(NAME docs_blocks_${name}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_code_blocks.py
        ${PROJECT_BINARY_DIR}/docs/blocks.json ${pages}
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(docs_blocks_${name} PROPERTIES LABELS docs TIMEOUT 600)
  endforeach()
  # The HTML manual (tools/docs.sh): Doxygen, then Sphinx with warnings as errors, over this
  # build's Python module.
  add_test(NAME docs_build COMMAND bash ${PROJECT_SOURCE_DIR}/tools/docs.sh ${PROJECT_BINARY_DIR}
    ${PROJECT_BINARY_DIR}/docs)
  set_tests_properties(docs_build PROPERTIES LABELS docs TIMEOUT 300)
endif()

# The one shared library a host links: every per-folder static target, whole, with LLVM, Clang,
# OpenSSL and friends linked privately so they never land on a host's link line.
get_property(uwjit_folder_targets GLOBAL PROPERTY UWJIT_FOLDER_TARGETS)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/uwjit_empty.cpp "// libuwjit is made of its folders\n")
add_library(uwjit SHARED ${CMAKE_CURRENT_BINARY_DIR}/uwjit_empty.cpp)
add_library(uwjit::uwjit ALIAS uwjit)
foreach(t IN LISTS uwjit_folder_targets)
  # Every object of every folder goes in, whether or not something in libuwjit refers to it.
  target_sources(uwjit PRIVATE $<TARGET_OBJECTS:${t}>)
  get_target_property(inc ${t} INTERFACE_INCLUDE_DIRECTORIES)
  target_include_directories(uwjit PUBLIC ${inc})
  get_property(deps GLOBAL PROPERTY UWJIT_PRIVATE_DEPS_${t})
  target_link_libraries(uwjit PRIVATE ${deps})
  add_dependencies(uwjit ${t})
endforeach()
target_include_directories(uwjit PUBLIC $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(uwjit PUBLIC cxx_std_20)
set_target_properties(uwjit PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  EXPORT_NAME uwjit INSTALL_RPATH_USE_LINK_PATH ON)

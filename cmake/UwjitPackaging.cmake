# install() of libuwjit, its public headers and a CMake package: find_package(uwjit) → uwjit::uwjit.
include(CMakePackageConfigHelpers)
set(UWJIT_HAS_MPI ${MPI_C_FOUND})
set(uwjit_installed uwjit)
if(TARGET uwjit_mpi)
  list(APPEND uwjit_installed uwjit_mpi)
endif()
install(TARGETS ${uwjit_installed} EXPORT uwjitTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT uwjitTargets NAMESPACE uwjit:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/uwjit)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/uwjitConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/uwjitConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/uwjit)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/uwjitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/uwjitConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/uwjitConfigVersion.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/uwjit)

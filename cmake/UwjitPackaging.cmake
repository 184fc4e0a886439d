# install() of libuwjit, its public headers and a CMake package: find_package(uwjit) → uwjit::uwjit.
include(CMakePackageConfigHelpers)
install(TARGETS uwjit EXPORT uwjitTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT uwjitTargets NAMESPACE uwjit:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/uwjit)
# The MPI communicator is a component: find_package(uwjit COMPONENTS mpi) → uwjit::mpi.
if(TARGET uwjit_mpi)
  install(TARGETS uwjit_mpi EXPORT uwjitMpiTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT uwjitMpiTargets NAMESPACE uwjit:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/uwjit)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/uwjitConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/uwjitConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/uwjit)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/uwjitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/uwjitConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/uwjitConfigVersion.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/uwjit)

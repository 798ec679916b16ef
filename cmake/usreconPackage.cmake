# Installs the CMake package: after `cmake --install`, an outside project does
#   find_package(usrecon REQUIRED)
#   target_link_libraries(app PRIVATE usrecon::kernels)
# Included once from the top-level CMakeLists.txt, after the subdirectories.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(USRECON_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/usrecon)
set(USRECON_PACKAGE_HAVE_CUDA ${USRECON_HAVE_CUDA})
set(USRECON_PACKAGE_OPENBLAS ${USRECON_KERNELS_OPENBLAS})
# Where this build found OpenBLAS: the config looks there first (cmake/usreconOpenBLAS.cmake).
set(USRECON_PACKAGE_OPENBLAS_DIR "")
if(USRECON_KERNELS_OPENBLAS)
  get_filename_component(USRECON_PACKAGE_OPENBLAS_DIR "${USRECON_OPENBLAS_LIBRARY}" DIRECTORY)
endif()

install(EXPORT usreconTargets NAMESPACE usrecon:: DESTINATION ${USRECON_INSTALL_CMAKEDIR}
        COMPONENT kernels)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/usreconConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/usreconConfig.cmake
                              INSTALL_DESTINATION ${USRECON_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/usreconConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/usreconConfig.cmake
              ${PROJECT_BINARY_DIR}/usreconConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/usreconOpenBLAS.cmake
        DESTINATION ${USRECON_INSTALL_CMAKEDIR} COMPONENT kernels)

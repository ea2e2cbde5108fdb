# Install rules (TILETUNE_INSTALL): the program, the runtime library as the imported target
# tiletune::runtime with its C and C++ headers, the tuning configs, a CMake package
# (find_package(tiletune)) and a pkg-config file (tiletune.pc).
include(CMakePackageConfigHelpers)
set(TILETUNE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tiletune)

# Installed binaries keep the paths of the libraries they were linked with outside the system's
# (the CUDA toolkit's NVRTC, for one).
set_target_properties(tiletune tiletune_runtime PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS tiletune RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS tiletune_runtime EXPORT tiletuneTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tiletune)
install(FILES ${PROJECT_SOURCE_DIR}/runtime/tiletune.h ${PROJECT_SOURCE_DIR}/runtime/tiletune.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tiletune)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/tiletune/configs)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/tiletune)
install(EXPORT tiletuneTargets NAMESPACE tiletune:: DESTINATION ${TILETUNE_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tiletuneConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/tiletuneConfig.cmake INSTALL_DESTINATION ${TILETUNE_CMAKE_DIR})
# 0.x: a minor version may change the C API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tiletuneConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tiletuneConfig.cmake ${PROJECT_BINARY_DIR}/tiletuneConfigVersion.cmake
        DESTINATION ${TILETUNE_CMAKE_DIR})

configure_file(${PROJECT_SOURCE_DIR}/cmake/tiletune.pc.in ${PROJECT_BINARY_DIR}/tiletune.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tiletune.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

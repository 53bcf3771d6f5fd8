# `cmake --install` rules: the libraries, their headers and a CMake package, so that an outside
# project can write
#   find_package(headlab REQUIRED)
#   target_link_libraries(app PRIVATE headlab::headlab)        # or headlab::core, headlab::attention, ...
# (examples/ are such projects). The headers are installed by headlab_library() in framework/.
include(CMakePackageConfigHelpers)
get_property(headlab_libraries GLOBAL PROPERTY HEADLAB_LIBRARIES)
install(TARGETS ${headlab_libraries} headlab EXPORT headlabTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT headlab
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(HEADLAB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/headlab)
install(EXPORT headlabTargets NAMESPACE headlab:: DESTINATION ${HEADLAB_CMAKE_DIR} COMPONENT headlab)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/headlabConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/headlabConfig.cmake INSTALL_DESTINATION ${HEADLAB_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/headlabConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/headlabConfig.cmake ${PROJECT_BINARY_DIR}/headlabConfigVersion.cmake
        DESTINATION ${HEADLAB_CMAKE_DIR} COMPONENT headlab)

# `cmake --install` rules: the libraries, their headers and a CMake package, so that an outside
# project can write
#   find_package(headlab REQUIRED)
#   target_link_libraries(app PRIVATE headlab::headlab)        # or headlab::core, headlab::attention, ...
# (examples/ are such projects; examples/check_examples.sh installs into a temporary prefix and
# builds them). The headers are installed by headlab_library() in framework/.
#
# What the exported targets carry: include dirs (<prefix>/include), XTENSOR_USE_XSIMD, and links to
# the imported targets of our dependencies (xtensor, xsimd, BLAS::BLAS, and nlohmann_json as the
# $<LINK_ONLY:...> private dependency of the static data and report libraries), which
# headlabConfig.cmake finds again with find_dependency. Build-only targets (headlab_warnings,
# headlab_kernels, headlab_course) are linked through $<BUILD_INTERFACE:...> or not at all, so they
# leave nothing behind. Compile options such as -march=native or -fno-math-errno are not exported,
# but the code compiled with them is in the libraries: the release preset sets HEADLAB_NATIVE, so its
# install runs on CPUs like the build machine's; configure with -DHEADLAB_NATIVE=OFF for a portable one.
include(CMakePackageConfigHelpers)
get_property(headlab_libraries GLOBAL PROPERTY HEADLAB_LIBRARIES)
# The include directory comes from each target's $<INSTALL_INTERFACE:include> (framework/CMakeLists.txt).
install(TARGETS ${headlab_libraries} headlab EXPORT headlabTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT headlab)
if(TARGET headlab_cli)
  install(TARGETS headlab_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT headlab)
endif()
set(HEADLAB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/headlab)
install(EXPORT headlabTargets NAMESPACE headlab:: DESTINATION ${HEADLAB_CMAKE_DIR} COMPONENT headlab)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/headlabConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/headlabConfig.cmake INSTALL_DESTINATION ${HEADLAB_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/headlabConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/headlabConfig.cmake ${PROJECT_BINARY_DIR}/headlabConfigVersion.cmake
        DESTINATION ${HEADLAB_CMAKE_DIR} COMPONENT headlab)

# Installing Cohort (`cmake --install build --prefix P`) and packaging it (`cpack -G DEB` in build/).
#
# The layout under the prefix, in GNUInstallDirs' terms:
#   bin/cohort, bin/cohort-train, bin/taxi-train           the programs (linked statically against
#                                                          Cohort's libraries, so they need no
#                                                          libcohort.so and no RPATH)
#   lib/<multiarch>/libcohort.so.MAJOR.MINOR[.PATCH]       the public API's shared library
#   lib/<multiarch>/libcohort.so                           its link for building against it
#   include/cohort/*.h                                     the public headers
#   lib/<multiarch>/cmake/Cohort/CohortConfig.cmake ...    find_package(Cohort): Cohort::cohort
#   share/cohort/examples, share/cohort/deploy/kubernetes  the example manifests, the operator's
#   share/doc/cohort                                       README and docs
#
# Two components, which become two Debian packages as Debian splits a library (see the CPack part
# below): `runtime` (programs, shared library, manifests, docs) and `development` (headers, the .so
# link, the CMake package).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(COHORT_INSTALLED_PROGRAMS cohort)
if(COHORT_WITH_TORCH)
  list(APPEND COHORT_INSTALLED_PROGRAMS cohort-train cohort-serve taxi-train)
endif()
install(TARGETS ${COHORT_INSTALLED_PROGRAMS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  COMPONENT runtime)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/hello ${PROJECT_SOURCE_DIR}/examples/mnist
  DESTINATION ${CMAKE_INSTALL_DATADIR}/cohort/examples COMPONENT runtime
  FILES_MATCHING PATTERN "*.yaml" PATTERN "*.sh" PERMISSIONS OWNER_READ OWNER_WRITE
  OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
install(FILES ${PROJECT_SOURCE_DIR}/examples/taxi/tfjob.yaml
  ${PROJECT_SOURCE_DIR}/examples/taxi/ai-platform.yaml
  DESTINATION ${CMAKE_INSTALL_DATADIR}/cohort/examples/taxi COMPONENT runtime)
# The public API's examples as projects of their own, to copy anywhere and build against the
# installed package (find_package(Cohort)): with the headers, in the development component.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/custom-model ${PROJECT_SOURCE_DIR}/examples/custom-loop
  DESTINATION ${CMAKE_INSTALL_DATADIR}/cohort/examples COMPONENT development)
# The taxi example's sources beside its manifests (which are the runtime's, for bin/taxi-train).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/taxi
  DESTINATION ${CMAKE_INSTALL_DATADIR}/cohort/examples COMPONENT development
  PATTERN "*.yaml" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/kubernetes
  DESTINATION ${CMAKE_INSTALL_DATADIR}/cohort/deploy COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
  COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}
  COMPONENT runtime FILES_MATCHING PATTERN "*.md")

if(COHORT_WITH_TORCH)
  # cohort_torch, the torch.distributed backend's Python module, where Debian's /usr/bin/python3
  # finds it without PYTHONPATH once the prefix is /usr (the package's): lib/python3/dist-packages.
  install(TARGETS cohort_torch LIBRARY DESTINATION lib/python3/dist-packages COMPONENT runtime)
  # libcohort.so: the public API's objects (src/public_api) and, from Cohort's static libraries, what they
  # use. The libraries it links (libtorch, protobuf, yaml-cpp, OpenSSL, libcurl...) are shared
  # libraries of the system, found by the loader; only libtorch is part of its interface, since
  # the public headers include it. The target is cohort_library (`cohort` is the program).
  # cohort_public_api's objects are the library's own; linking the static cohort_public_api brings in what they
  # use of the layers below (position-independent, as cohort_module builds them).
  set_property(TARGET cohort_public_api PROPERTY POSITION_INDEPENDENT_CODE ON)
  add_library(cohort_library SHARED $<TARGET_OBJECTS:cohort_public_api>)
  target_link_libraries(cohort_library PRIVATE cohort_public_api)
  target_link_libraries(cohort_library PUBLIC "$<BUILD_INTERFACE:${TORCH_LIBRARIES}>")
  target_include_directories(cohort_library INTERFACE
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(cohort_library INTERFACE cxx_std_17)
  set_target_properties(cohort_library PROPERTIES OUTPUT_NAME cohort EXPORT_NAME cohort
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  # In the tree, Cohort::cohort is the static cohort_public_api (examples/CMakeLists.txt), so that the
  # examples build before anything is installed; installed users get this library by that name.

  install(TARGETS cohort_library EXPORT CohortTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/cohort
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)

  # find_package(Cohort): CohortConfig.cmake finds libtorch and Threads first, then defines
  # Cohort::cohort from CohortTargets.cmake. The version file accepts the same major version (and,
  # before 1.0, the same minor version: SameMinorVersion) at or above the one asked for.
  set(COHORT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Cohort)
  install(EXPORT CohortTargets NAMESPACE Cohort:: DESTINATION ${COHORT_CMAKE_DIR}
    COMPONENT development)
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/CohortConfig.cmake.in
    ${PROJECT_BINARY_DIR}/CohortConfig.cmake INSTALL_DESTINATION ${COHORT_CMAKE_DIR})
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/CohortConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/CohortConfig.cmake
    ${PROJECT_BINARY_DIR}/CohortConfigVersion.cmake DESTINATION ${COHORT_CMAKE_DIR}
    COMPONENT development)
endif()

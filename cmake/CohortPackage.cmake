# Debian packages of Cohort, from the build tree as it is (no second build): after building,
#   cd build && cpack -G DEB
# writes two packages, split as Debian splits a library, so that a machine that only runs jobs
# (the operator's image, a training node) needs neither the headers nor libtorch-dev's compiler
# tool chain:
#   cohort_<version>_<arch>.deb      the programs, libcohort.so.<major>.<minor>, the example and
#                                    operator manifests, the docs (component `runtime`);
#                                    Depends computed by dpkg-shlibdeps from the ELF files
#                                    (libtorch, protobuf, yaml-cpp, OpenSSL, libcurl, ...);
#                                    Recommends OpenBLAS, the BLAS libtorch runs fast on, and the
#                                    Fashion-MNIST data cohort-train reads by default.
#   cohort-dev_<version>_<arch>.deb  the headers, libcohort.so and the CMake package (component
#                                    `development`); Depends cohort (= version) and libtorch-dev,
#                                    whose TorchConfig.cmake find_package(Cohort) needs.
# Both install under /usr and remove without leaving files behind (tests/install).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME cohort)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Kubeflow TFJobs on one machine or Kubernetes, and a C++ distributed training runtime on libtorch")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL runtime development)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS runtime)

set(CPACK_DEBIAN_PACKAGE_MAINTAINER "The Cohort developers")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# An exact "cohort (= version)" for cohort-dev, from the component dependency above.
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME cohort)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION science)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "libopenblas0-pthread, dataset-fashion-mnist")
# A shlibs file and the ldconfig trigger for libcohort.so.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "The cohort and cohort-train programs and libcohort.so.\n`cohort` runs Kubeflow TFJob manifests as local processes and is the Kubernetes operator; `cohort-train` and `taxi-train` are the training programs its examples run; libcohort.so is the C++ API for your own distributed training programs.")

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME cohort-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "libtorch-dev")
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION
  "Headers and CMake package to build programs on Cohort's C++ API.\nfind_package(Cohort) gives the target Cohort::cohort, which brings libtorch along.")

include(CPack)

# Cohort's container images, from Debian 12 packages only: the build stage builds Cohort's own
# Debian packages (cmake/CohortPackage.cmake), the runtime stage installs them with apt-get, so the
# image holds exactly what `apt-get install ./cohort_<version>_<arch>.deb` gives a machine: the
# programs in /usr/bin, libcohort.so, the example and operator manifests under /usr/share/cohort,
# and the shared libraries they need (the package's Depends, computed from the programs). Nothing
# here can run without a container runtime, so README.md ("On a Kubernetes cluster") says how the
# images are built and used.
#
#   docker build -t cohort:latest .                                # cohort (the operator: cohort operator)
#   docker build --target mnist-train -t localhost/mnist-train .   # examples/mnist's image
#   docker build --target taxi-train -t localhost/taxi-train .     # examples/taxi's image
#   docker build --target hello -t localhost/hello .               # examples/hello's image
#   docker build --target runtime -t localhost/cohort-runtime .    # a base for your image: FROM it
#   docker build --target dev -t localhost/cohort-dev .            # + cohort-dev and a compiler: build
#                                                                  #   your program in it
#
# The runtime targets differ only in their entrypoint, so that a TFJob's container args are the
# program's flags, as in the examples. `localhost/...` names are local builds (the name Podman gives
# them): no registry namespace is implied; tag and push them under your registry's name for a cluster.
#
# Two build arguments, both with defaults that build everything from source as above:
#   COHORT_BASE_IMAGE     the Debian 12 image every stage starts from (default debian:bookworm);
#                         scripts/build-images.sh makes one locally and passes its name.
#   COHORT_PACKAGES_FROM  where the runtime stages take Cohort's packages from: `build` (default,
#                         compiled here) or `prebuilt`, packages made outside by cpack from a build
#                         tree and given as the build context's packages/ folder (the context then
#                         holds only that folder). scripts/build-images.sh does that, so that CI
#                         does not compile Cohort a second time; the stages after it are the same.
ARG COHORT_BASE_IMAGE=debian:bookworm
ARG COHORT_PACKAGES_FROM=build

# ---- build: the repository's own set-up and build scripts, on the packages setup.sh lists ----
FROM ${COHORT_BASE_IMAGE} AS build
WORKDIR /src
# The package list alone first, so that a source change does not reinstall the toolchain.
COPY scripts/setup.sh scripts/setup.sh
RUN bash -c 'source scripts/setup.sh && cohort_install_missing_packages "${COHORT_PACKAGES[@]}" dpkg-dev file' \
 && rm -rf /var/lib/apt/lists/*
COPY . .
# Only what the packages hold is built; cpack then packs that build tree as it is.
RUN bash -c 'source scripts/setup.sh \
      && COHORT_BUILD_TARGETS="cohort cohort-train taxi-train cohort_library" \
         cohort_build /src/build-image -DCMAKE_BUILD_TYPE=Release -DCOHORT_BUILD_BENCHMARKS=OFF' \
 && cd build-image && cpack -G DEB -B /out \
 && rm -rf /out/_CPack_Packages

# ---- prebuilt: packages cpack made outside, in the context's packages/ folder ----
FROM scratch AS prebuilt
# Labelled as the images are, so that scripts/build-images.sh removes it once it is unused.
ARG COHORT_INPUTS=""
LABEL org.cohort.inputs="${COHORT_INPUTS}"
COPY packages/ /out/

# ---- packages: the stage the runtime stages take the packages from ----
FROM ${COHORT_PACKAGES_FROM} AS packages

# ---- runtime: Cohort's package and what it depends on, nothing to build with ----
FROM ${COHORT_BASE_IMAGE} AS runtime
# What the image was built from (scripts/build-images.sh: a digest of the Dockerfile, the base
# image and the packages' contents), so that an unchanged input is not built again.
ARG COHORT_INPUTS=""
LABEL org.cohort.inputs="${COHORT_INPUTS}"
# The runtime package pulls in its Depends (libtorch, protobuf, yaml-cpp, OpenSSL, libcurl...);
# its Recommends are named here, since the image installs without recommends: OpenBLAS (the BLAS
# libtorch's dense layers run on, pinned as setup.sh pins it rather than left to "auto") and the
# Fashion-MNIST data cohort-train reads by default. ca-certificates for the Kubernetes API client.
# The packages are mounted from the packages stage (BuildKit), not copied: they stay out of the
# image.
RUN --mount=type=bind,from=packages,source=/out,target=/tmp/cohort-packages \
    apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      /tmp/cohort-packages/cohort_*.deb libopenblas0-pthread dataset-fashion-mnist ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && triplet="$(uname -m)-linux-gnu" \
 && for name in libblas.so.3 liblapack.so.3; do \
      update-alternatives --set "$name-$triplet" "/usr/lib/$triplet/openblas-pthread/$name"; \
    done \
 && useradd --uid 65532 --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin cohort
# Not root (the operator's Deployment also requires it); replicas write under /tmp.
USER 65532:65532
WORKDIR /tmp

# ---- dev: the runtime plus cohort-dev (headers, CMake package) and a C++ tool chain ----
# A user's image builds its program here and copies it into an image FROM runtime (README.md).
FROM runtime AS dev
USER root
RUN --mount=type=bind,from=packages,source=/out,target=/tmp/cohort-packages \
    apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      /tmp/cohort-packages/cohort-dev_*.deb build-essential cmake ninja-build \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src

FROM runtime AS hello
ENTRYPOINT ["/usr/share/cohort/examples/hello/replica.sh"]

FROM runtime AS mnist-train
ENTRYPOINT ["cohort-train"]

FROM runtime AS taxi-train
ENTRYPOINT ["taxi-train"]

# The default target, last: the cohort command (`cohort operator`, `cohort manifests`...).
FROM runtime AS cohort
ENTRYPOINT ["cohort"]

# Cohort's container image, from Debian 12 packages only. Nothing here can run without a container
# runtime, so README.md ("On a Kubernetes cluster") says how the images are built and used.
#
#   docker build -t cohort:latest .                          # cohort (the operator: cohort operator)
#   docker build --target mnist-train -t cohort/mnist-train .  # examples/mnist's image
#   docker build --target taxi-train -t cohort/taxi-train .    # examples/taxi's image
#   docker build --target hello -t cohort/hello .              # examples/hello's image
#
# Every target holds the same programs (cohort, cohort-train, taxi-train) and differs only in its
# entrypoint, so that a TFJob's container args are the program's flags, as in the examples.

# ---- build: the repository's own set-up and build scripts, on the packages setup.sh lists ----
FROM debian:bookworm AS build
WORKDIR /src
# The package list alone first, so that a source change does not reinstall the toolchain.
COPY scripts/setup.sh scripts/setup.sh
RUN bash -c 'source scripts/setup.sh && cohort_install_missing_packages' \
 && rm -rf /var/lib/apt/lists/*
COPY . .
RUN bash -c 'source scripts/setup.sh \
      && COHORT_BUILD_TARGETS="cohort cohort-train taxi-train" \
         cohort_build /src/build-image -DCMAKE_BUILD_TYPE=Release -DCOHORT_BUILD_BENCHMARKS=OFF' \
 && mkdir -p /out/bin \
 && cp build-image/apps/cohort/cohort build-image/apps/cohort-train/cohort-train \
       build-image/examples/taxi/taxi-train /out/bin/ \
 && strip /out/bin/*

# ---- runtime: the programs and the shared libraries they link, nothing to build with ----
FROM debian:bookworm AS runtime
# libtorch1.13 (with libc10), libprotobuf32, libyaml-cpp0.7, libssl3 (libcrypto) and zlib1g are
# what the programs link; libcurl4 and ca-certificates the Kubernetes API client; OpenBLAS the
# BLAS libtorch's dense layers run on (pinned, as setup.sh pins it, not left to "auto");
# dataset-fashion-mnist the data cohort-train reads by default (/usr/share/datasets/fashion-mnist).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libtorch1.13 libprotobuf32 libyaml-cpp0.7 libssl3 zlib1g libcurl4 ca-certificates \
      libopenblas0-pthread dataset-fashion-mnist \
 && rm -rf /var/lib/apt/lists/* \
 && triplet="$(uname -m)-linux-gnu" \
 && for name in libblas.so.3 liblapack.so.3; do \
      update-alternatives --set "$name-$triplet" "/usr/lib/$triplet/openblas-pthread/$name"; \
    done \
 && useradd --uid 65532 --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin cohort
COPY --from=build /out/bin/ /usr/local/bin/
COPY examples/hello/replica.sh /usr/local/share/cohort/examples/hello/replica.sh
# Not root (the operator's Deployment also requires it); replicas write under /tmp.
USER 65532:65532
WORKDIR /tmp

FROM runtime AS hello
ENTRYPOINT ["/usr/local/share/cohort/examples/hello/replica.sh"]

FROM runtime AS mnist-train
ENTRYPOINT ["cohort-train"]

FROM runtime AS taxi-train
ENTRYPOINT ["taxi-train"]

# The default target: the cohort command (`cohort operator`, `cohort manifests`...).
FROM runtime AS cohort
ENTRYPOINT ["cohort"]

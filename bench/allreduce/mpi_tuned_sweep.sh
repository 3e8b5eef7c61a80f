#!/bin/sh
# mpi_tuned_sweep.sh [ALLREDUCE_BENCH ARGS...]: Cohort's same-host all-reduce against Open MPI at
# its best on this host (issue 30): allreduce_bench --mode=same-host once per Open MPI collective
# configuration, each paired with Cohort round by round as the benchmark pairs them:
#   default       Open MPI's own choice (coll tuned's fixed decision rules)
#   tuned-N       --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm N, for
#                 each of its allreduce algorithms: 1 basic linear, 2 nonoverlapping, 3 recursive
#                 doubling, 4 ring, 5 segmented ring, 6 Rabenseifner
#   han           --mca coll_han_priority 100 (the hierarchical component)
#   sm            --mca coll_sm_priority 100 (the shared-memory collective component)
# always on top of allreduce_bench's own settings (pml ob1, btl self,vader, no binding, yielding
# ranks). Per size, "best Open MPI" is the configuration with the highest median busbw
# (bench/render_doc.py picks it). Settings (environment): ALLREDUCE_BENCH
# (build/bench/allreduce/allreduce_bench), MPI_BENCH (its mpi_allreduce_bench), RANKS (2; 4 ranks
# on 2 cores oversubscribe: run them apart), CONFIGS (all of the above). Arguments go to
# allreduce_bench (default: --min-bytes=1048576 --max-bytes=16777216 --rounds=3). Ends with
#   mpi sweep: done
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$root/bench/common/provenance.sh"
bench="${ALLREDUCE_BENCH:-$root/build/bench/allreduce/allreduce_bench}"
mpi_bench="${MPI_BENCH:-$(dirname "$bench")/mpi_allreduce_bench}"
ranks="${RANKS:-2}"
configs="${CONFIGS:-default tuned-1 tuned-2 tuned-3 tuned-4 tuned-5 tuned-6 han sm}"
[ -x "$bench" ] || { echo "mpi_tuned_sweep: no allreduce_bench at $bench" >&2; exit 1; }
[ -x "$mpi_bench" ] || { echo "mpi_tuned_sweep: no mpi_allreduce_bench at $mpi_bench" >&2; exit 1; }
MPIRUN="$(command -v mpirun)" || { echo "mpi_tuned_sweep: no mpirun (openmpi-bin)" >&2; exit 1; }
export MPIRUN
[ $# -gt 0 ] || set -- --min-bytes=1048576 --max-bytes=16777216 --rounds=3

bench_provenance_start mpi-tuned-sweep
echo "# $(ompi_info --version 2>/dev/null | head -n 1); allreduce_bench $bench; ranks $ranks"
for config in $configs; do
  case "$config" in
    default) MPI_EXTRA_MCA="" ;;
    tuned-[1-6]) MPI_EXTRA_MCA="--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm ${config#tuned-}" ;;
    han) MPI_EXTRA_MCA="--mca coll_han_priority 100" ;;
    sm) MPI_EXTRA_MCA="--mca coll_sm_priority 100" ;;
    *) echo "mpi_tuned_sweep: unknown configuration $config" >&2; exit 2 ;;
  esac
  export MPI_EXTRA_MCA
  echo "# mpi config: $config: ${MPI_EXTRA_MCA:-(none)}"
  if ! "$bench" --mode=same-host --ranks="$ranks" --mpirun="$here/mpirun_with.sh" \
      --mpi-bench="$mpi_bench" "$@" 2>&1; then
    echo "# mpi config: $config: failed"
  fi
done
bench_provenance_end mpi-tuned-sweep
echo "mpi sweep: done"

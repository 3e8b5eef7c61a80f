#!/bin/sh
# mpirun_with.sh ARGS...: mpirun with the Open MPI settings of $MPI_EXTRA_MCA (words such as
# "--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4") put before ARGS.
# mpi_tuned_sweep.sh gives it to allreduce_bench --mpirun=, so that each of Open MPI's collective
# configurations runs beside Cohort, round by round, in the benchmark's own pairing. MPIRUN names
# the real mpirun (default: the one on PATH).
# shellcheck disable=SC2086  # MPI_EXTRA_MCA is a list of words
exec "${MPIRUN:-mpirun}" ${MPI_EXTRA_MCA:-} "$@"

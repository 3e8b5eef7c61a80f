# bench/train/same_settings.sh: sourced by the bench/train drivers; the settings both sides of a
# training comparison run under, so that neither gets an advantage the other lacks.
#
# - One compute thread per worker: --threads 1 / torch.set_num_threads(1), and the BLAS and OpenMP
#   pools pinned to one thread through the environment.
# - The same allocator settings: both sides use glibc malloc, whose defaults hand every block of
#   128 KiB or more (growing to the largest freed one) back to the kernel with munmap or a heap
#   trim, so that each step's 11 MB gradients and optimizer temporaries are faulted back in page
#   by page, zeroed by the kernel (about 8,000-9,000 minor page faults a step for this model).
#   Large mmap and trim thresholds keep freed memory in the process. Measured on the one-worker
#   loop: PyTorch 17-19 ms of CPU a step with them against 28-35 ms without; cohort-train likewise.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
export MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824

// MPI's C API for the programs' --mpi modes (built when CMake finds MPI: BCSR24_HAS_MPI).
#pragma once

#ifdef BCSR24_HAS_MPI
// The C API only (FindMPI's MPI::MPI_CXX defines these too): the deprecated C++ bindings need their own library.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#endif

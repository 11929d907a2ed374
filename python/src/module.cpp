// bcsr24._bcsr24: the compiled half of the Python package. Only the public C++ API (lib/include/bcsr24/) is bound;
// array handling, plan caching and the solver adapters are in the pure-Python package (python/bcsr24/).
#include "bindings.hpp"

NB_MODULE(_bcsr24, m) {
  m.doc() = "bcsr24's C++ library (SparseOperator, SpmmPlan, SpdSolver); use the bcsr24 package, not this module";
  bcsr24::python::bind_errors(m);
  bcsr24::python::bind_cuda_interop(m);
  bcsr24::python::bind_operator(m);
  bcsr24::python::bind_plan(m);
  bcsr24::python::bind_solver(m);
}

// C++ exceptions -> Python exceptions. The Python classes (bcsr24/errors.py) are handed over once at import by
// _set_error_classes, so the translator raises the package's own types, carrying the C++ message (and, for a
// ParseError, the file, line and problem as attributes).
#include <exception>
#include <string>

#include <nanobind/stl/string.h>

#include "bcsr24/error.hpp"
#include "bindings.hpp"

namespace nb = nanobind;

namespace bcsr24::python {
namespace {

// Borrowed for the life of the interpreter (the package module holds them); set by _set_error_classes.
struct ErrorClasses {
  nb::object parse, not_supported, cuda, range, size_limit, library;
};
ErrorClasses& classes() {
  static ErrorClasses* c = new ErrorClasses();  // never destroyed: the translator may run during shutdown
  return *c;
}

void raise(const nb::object& cls, PyObject* fallback, const std::string& message) {
  if (!cls.is_valid()) {
    PyErr_SetString(fallback, message.c_str());
    return;
  }
  nb::object exc = cls(message);
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

void raise_parse(const nb::object& cls, const ParseError& e) {
  if (!cls.is_valid()) {
    PyErr_SetString(PyExc_ValueError, e.what());
    return;
  }
  nb::object exc = cls(std::string(e.what()));
  exc.attr("file") = e.file();
  exc.attr("line") = e.line();
  exc.attr("problem") = e.problem();
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

void translate(const std::exception_ptr& p, void*) {
  const ErrorClasses& c = classes();
  try {
    std::rethrow_exception(p);
  } catch (const ParseError& e) {  // Matrix Market and .b24 files alike
    raise_parse(c.parse, e);
  } catch (const InvalidArgument& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const OutOfMemory& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  } catch (const SizeLimitError& e) {
    raise(c.size_limit, PyExc_ValueError, e.what());
  } catch (const RangeError& e) {
    raise(c.range, PyExc_ValueError, e.what());
  } catch (const NotSupported& e) {
    raise(c.not_supported, PyExc_RuntimeError, e.what());
  } catch (const CudaError& e) {
    raise(c.cuda, PyExc_RuntimeError, e.what());
  } catch (const Error& e) {  // anything of no more specific kind
    raise(c.library, PyExc_RuntimeError, e.what());
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  nb::register_exception_translator(translate);
  m.def(
      "_set_error_classes",
      [](nb::object parse, nb::object not_supported, nb::object cuda, nb::object range, nb::object size_limit,
         nb::object library) { classes() = ErrorClasses{parse, not_supported, cuda, range, size_limit, library}; },
      "Hands the package's exception classes to the C++ translator (called once by bcsr24/__init__.py).");
}

}  // namespace bcsr24::python

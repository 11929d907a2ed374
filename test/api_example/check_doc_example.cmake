# ctest driver (cmake -P): the complete example in docs/API.md must equal test/api_example/api_example.cpp,
# which CI compiles and runs. The doc holds it in a ```cpp block right after the marker line
# "<!-- example: test/api_example/api_example.cpp -->".
# Inputs (-D): DOC, EXAMPLE.
file(READ "${DOC}" doc)
file(READ "${EXAMPLE}" example)
set(marker "<!-- example: test/api_example/api_example.cpp -->\n```cpp\n")
string(FIND "${doc}" "${marker}" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${DOC}: marker line followed by ```cpp not found")
endif()
string(LENGTH "${marker}" marker_length)
math(EXPR start "${start} + ${marker_length}")
string(SUBSTRING "${doc}" ${start} -1 rest)
string(FIND "${rest}" "\n```" stop)
if(stop EQUAL -1)
  message(FATAL_ERROR "${DOC}: the example's code block is not closed")
endif()
math(EXPR stop "${stop} + 1")  # keep the final newline of the code
string(SUBSTRING "${rest}" 0 ${stop} block)
if(NOT block STREQUAL example)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/api_example_from_doc.cpp" "${block}")
  message(FATAL_ERROR "the example in ${DOC} differs from ${EXAMPLE}; "
          "diff ${CMAKE_CURRENT_BINARY_DIR}/api_example_from_doc.cpp ${EXAMPLE}")
endif()
message(STATUS "docs/API.md example matches ${EXAMPLE}")

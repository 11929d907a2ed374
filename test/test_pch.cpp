// The unit that compiles the Catch2 test programs' shared precompiled header (test/CMakeLists.txt,
// BCSR24_TEST_PCH); it has no code of its own.

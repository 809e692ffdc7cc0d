// Catch2's implementation and session, compiled once for every test binary (with
// Catch2 2.13's single header it is the slowest file of the build to
// compile: about 25 s); the binaries' own main() functions call kgen_catch_run.
#define KGEN_CATCH_MAIN
#include "catch.hpp"

int kgen_catch_run(int argc, char** argv) { return Catch::Session().run(argc, argv); }

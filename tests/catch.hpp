// Catch2 2.13 (Debian bookworm, single header) and 3.x (Ubuntu 24.04) behind
// one include.  Exactly one file (catch_session.cpp, linked into every test
// binary) defines KGEN_CATCH_MAIN before including it.
#pragma once

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_session.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
using Catch::Approx;
#else
#ifdef KGEN_CATCH_MAIN
#define CATCH_CONFIG_RUNNER
#endif
#include <catch2/catch.hpp>
#endif

// Runs the Catch2 session (catch_session.cpp): what each test binary's main() calls.
int kgen_catch_run(int argc, char** argv);

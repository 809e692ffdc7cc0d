#include <cstdlib>

#include "catch.hpp"

int main(int argc, char** argv) {
  // The host tests describe devices (an H100 by default) and check the
  // families' heuristics on them; a compiled-in tuning database of that GPU
  // would answer first.  The database path has its own tests
  // (test_tuning_db.cpp), which load databases explicitly.
  setenv("KGEN_TUNING_DB", "off", 1);
  return kgen_catch_run(argc, argv);
}

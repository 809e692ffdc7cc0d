#define KGEN_CATCH_MAIN
#include "catch.hpp"

int main(int argc, char** argv) { return Catch::Session().run(argc, argv); }

// The one Catch2 v2 main, compiled once as an object library and linked into every unit test.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

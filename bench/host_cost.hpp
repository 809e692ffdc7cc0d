// kgen-bench host: host time a call of each family beside the launch floor
// (bench/host_cost.cu).
#pragma once

#include <string>

// Prints (and writes to `md` when given) the table; nonzero when a call failed.
int bench_host(int calls, int batches, const std::string& md);
